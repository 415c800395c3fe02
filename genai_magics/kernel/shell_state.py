"""Everything genai_magics keeps for one IPython shell, in one object stored once on the shell.

``%load_ext`` registers magics that work on it, ``%unload_ext`` takes them away and leaves the
rest, so the next load (``%reload_ext``) continues the conversations, and the buttons shown
before keep their staged Applies, the live bridge and the VS Code companion they write through.
Not in the package's ``__init__``: ``%reload_ext`` reloads that module, and this class must stay
the one the shell's object is an instance of.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..frontends.bridge import Bridge
from ..frontends.cell_writer import StagedApply
from ..frontends.companion import Companion
from ..frontends.notebook_view import NotebookLocation
from ..turn.session import Session
from ..ui.proposal import ProposalController

if TYPE_CHECKING:  # made by an agent turn, whose modules its first turn imports
    from ..frontends.landed import LandedCheck
    from ..frontends.turn_undo_steps import TurnUndo


class LoadedMagics(Protocol):
    """What %load_ext and %unload_ext need of the magics registered now (``GeminiMagics``)."""

    transformers: list[tuple[list, Callable]]  # (shell list, transformer) the load added

    def pre_run_cell(self, info: Any) -> None: ...
    def post_run_cell(self, result: Any) -> None: ...
    def at_exit(self) -> None: ...


_SLOT = "_genai_magics"


@dataclass
class ShellState:
    session: Session
    companion: Companion  # VS Code's companion, if this notebook's window has it
    staged: dict[str, StagedApply] = field(default_factory=dict)  # magic cell id -> its staged Apply
    latest: dict[str, ProposalController] = field(default_factory=dict)  # conversation -> newest proposal
    bridge: Bridge | None = None  # JupyterLab's live bridge, once a kernel's load attached it
    magics: LoadedMagics | None = None  # the magics registered now; None while unloaded
    location: NotebookLocation = field(default_factory=NotebookLocation)  # the notebook's file, as named last
    agent_undo: TurnUndo | None = None  # the Undo of the latest agent turn that changed cells (%gemini undo)
    agent_undos: list[TurnUndo] = field(default_factory=list)  # every such turn's, oldest first (one waits on another)
    # an agent turn runs a cell now: our magics refuse to start inside it (a turn inside the turn would answer
    # outside its record; the static check, engine/steering.py, cannot see every way code reaches them)
    agent_running: bool = False
    landed_check: LandedCheck | None = None  # the latest agent turn's changes sent without waiting, until told


def state_of(shell: Any) -> ShellState:
    """The shell's state, made on first use."""
    state = getattr(shell, _SLOT, None)
    if not isinstance(state, ShellState):
        state = ShellState(session=Session(), companion=Companion(shell))
        setattr(shell, _SLOT, state)
    return state
