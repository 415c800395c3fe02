"""genai_magics: stateful Gemini cell magics for Jupyter.

``%load_ext genai_magics`` registers ``%%gemini_ask``, ``%%gemini_edit``, ``%%gemini_agent`` and ``%gemini``.
"""

from __future__ import annotations

__version__ = "0.1.0"


def load_ipython_extension(ipython) -> None:
    from .kernel.magics import GeminiMagics
    from .kernel.shell_state import state_of

    state = state_of(ipython)  # kept on the shell: a %reload_ext continues its conversations
    if state.magics is not None:
        return
    magics = GeminiMagics(shell=ipython, shell_state=state)
    ipython.register_magics(magics)
    if getattr(ipython, "kernel", None) is not None:
        from .frontends import kernel_compat
        from .frontends.bridge import Bridge

        # Opens the comm to the genai-magics-bridge frontend extension, if the notebook has it.
        state.bridge = Bridge.attach(ipython, existing=state.bridge)
        state.bridge.on_path = magics.path_reported
        # this cell's request already named the notebook's file (the cell that loads runs before the hooks)
        magics.path_reported(state.bridge.announced_path(kernel_compat.request_metadata(ipython)))
    ipython.events.register("pre_run_cell", magics.pre_run_cell)
    ipython.events.register("post_run_cell", magics.post_run_cell)
    magics.session.outputs.install(ipython)  # what each cell shows, from now on
    state.magics = magics
    import atexit

    # Kernel exit: the explicit caches deleted but those the next kernel on this notebook can use
    # for less than a new one costs (Session.at_exit; bounded: never blocks long).
    atexit.register(magics.at_exit)
    # The SDK's import and first-use costs (~0.5-2 s): paid now, off the main thread, not by the first turn.
    magics.session.clients.warm_up(magics._settings())
    from .frontends import waiting
    from .kernel.line_syntax import one_line_questions

    magics.transformers.append((ipython.input_transformers_cleanup, one_line_questions))
    if getattr(ipython, "kernel", None) is not None and waiting.mechanism() == "async":
        magics.transformers.append((ipython.input_transformers_post, waiting.await_lone_magic(ipython)))
    for transformers, transform in magics.transformers:
        transformers.append(transform)


def unload_ipython_extension(ipython) -> None:
    from .kernel.shell_state import state_of

    state = state_of(ipython)
    magics, state.magics = state.magics, None  # the rest of the state waits for the next load
    if magics is None:
        return
    ipython.events.unregister("pre_run_cell", magics.pre_run_cell)
    ipython.events.unregister("post_run_cell", magics.post_run_cell)
    state.session.outputs.uninstall()
    for transformers, transform in magics.transformers:  # exactly what this load added
        if transform in transformers:
            transformers.remove(transform)
    magics.transformers.clear()
    for kind in ("cell", "line"):
        for name in ("gemini_ask", "gemini_edit", "gemini_agent", "gemini"):
            ipython.magics_manager.magics[kind].pop(name, None)
    if state.bridge is not None:
        state.bridge.close()
    import atexit

    atexit.unregister(magics.at_exit)
    state.session.caches.release_all()  # unload deletes them all
    if magics in ipython.configurables:
        ipython.configurables.remove(magics)
