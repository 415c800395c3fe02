"""genai_magics: stateful Gemini cell magics for Jupyter.

``%load_ext genai_magics`` registers ``%%gemini_ask``, ``%%gemini_edit`` and ``%gemini``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .magics import GeminiMagics

__version__ = "0.1.0"

_LOADED: dict[int, GeminiMagics] = {}
# Where the conversations wait out a %reload_ext: on the shell, since reloading
# this module starts _LOADED afresh.
_KEPT = "_genai_magics_kept"


def load_ipython_extension(ipython) -> None:
    from .magics import GeminiMagics

    if id(ipython) in _LOADED:
        return
    magics = GeminiMagics(shell=ipython, kept=ipython.__dict__.pop(_KEPT, None))
    ipython.register_magics(magics)
    if getattr(ipython, "kernel", None) is not None:
        from .frontends.bridge import Bridge

        # Opens the comm to the genai-magics-bridge frontend extension, if the notebook has it.
        magics.bridge = Bridge.attach(ipython)
    ipython.events.register("pre_run_cell", magics.pre_run_cell)
    ipython.events.register("post_run_cell", magics.post_run_cell)
    magics.session.outputs.install(ipython)  # what each cell shows, from now on
    _LOADED[id(ipython)] = magics
    import atexit

    # Kernel exit: the explicit caches deleted but those the next kernel on this notebook can use
    # for less than a new one costs (Session.at_exit; bounded: never blocks long).
    atexit.register(magics.at_exit)
    # The SDK's import and first-use costs (~0.5-2 s): paid now, off the main thread, not by the first turn.
    magics.session.warm_up(magics._settings())
    from .frontends import waiting
    from .line_syntax import one_line_questions

    magics.transformers.append((ipython.input_transformers_cleanup, one_line_questions))
    if getattr(ipython, "kernel", None) is not None and waiting.mechanism() == "async":
        magics.transformers.append((ipython.input_transformers_post, waiting.await_edit_magic(ipython)))
    for transformers, transform in magics.transformers:
        transformers.append(transform)


def unload_ipython_extension(ipython) -> None:
    magics = _LOADED.pop(id(ipython), None)
    if magics is None:
        return
    ipython.events.unregister("pre_run_cell", magics.pre_run_cell)
    ipython.events.unregister("post_run_cell", magics.post_run_cell)
    magics.session.outputs.uninstall()
    for transformers, transform in magics.transformers:  # exactly what this load added
        if transform in transformers:
            transformers.remove(transform)
    magics.transformers.clear()
    for kind in ("cell", "line"):
        for name in ("gemini_ask", "gemini_edit", "gemini"):
            ipython.magics_manager.magics[kind].pop(name, None)
    if magics.bridge is not None:
        magics.bridge.close()
    import atexit

    atexit.unregister(magics.at_exit)
    magics.session.caches.release_all()  # unload deletes them all
    if magics in ipython.configurables:
        ipython.configurables.remove(magics)
    ipython.__dict__[_KEPT] = magics  # %reload_ext: the next load continues these conversations
