"""A cell's code read as this kernel reads it, for the agent's guard and its approvals' risk line.

The rules are pure (engine/steering.py, engine/code_risks.py); here is what they read the code with: the
shell's own ``transform_cell`` (magics, ``!cmd``, automagic exactly as the kernel turns them into Python;
IPython's ``TransformerManager`` without a shell) and which magic names are ours (``gemini*``, and every
name the shell resolves to one of them: an ``%alias_magic`` of ours, our methods registered anew).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the rules are imported at their first use: %load_ext needs none of them (issue 42)
    from ..engine.steering import Ours, ToPython

STEERS = "steers the assistant or its approvals"  # a risk named first where a write would (agent_approve "all")


def ipython_python(source: str) -> str | None:
    """``source`` as IPython's input transformers give it, without a shell (no automagic); None: they failed."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - a cell the transformers reject is read as text
        return None


def ours_by_name(name: str) -> bool:
    """engine/steering.py's ``ours_by_name``, imported when first asked."""
    from ..engine.steering import ours_by_name as by_name

    return by_name(name)


@dataclass(frozen=True)
class CodeCheck:
    """What a cell's code does that the agent may not write unseen or run, and what deserves a second look."""

    to_python: ToPython = ipython_python
    ours: Ours = ours_by_name

    def steering(self, source: str) -> tuple[str, ...]:
        from ..engine.steering import steering

        return steering(source, self.to_python, self.ours)

    def risks(self, source: str) -> tuple[str, ...]:
        """The risk line's risks: ``STEERS`` first where the code steers the assistant, then engine/code_risks.py's."""
        from ..engine.code_risks import risks

        return ((STEERS,) if self.steering(source) else ()) + risks(source, self.to_python)


def shell_check(shell: Any) -> CodeCheck:
    """The check of this shell: its ``transform_cell``, its magics' names."""

    def to_python(source: str) -> str | None:
        try:
            return str(shell.transform_cell(source))
        except Exception:  # noqa: BLE001 - a cell the shell's transformers reject is read as text
            return None

    return CodeCheck(to_python, shell_ours(shell))


def shell_ours(shell: Any) -> Callable[[str], bool]:
    """Whether a magic name reaches one of ours in ``shell``: by name, through aliases, or as our method."""

    def ours(name: str) -> bool:
        seen: set[str] = set()
        while name not in seen:
            seen.add(name)
            if ours_by_name(name):
                return True
            try:
                found = shell.find_line_magic(name) or shell.find_cell_magic(name)
            except Exception:  # noqa: BLE001 - a shell without a magics registry knows no aliases
                return False
            owner = getattr(found, "__self__", None)
            if owner is not None and type(owner).__module__.startswith("genai_magics"):
                return True
            target = getattr(found, "magic_name", None)  # IPython's MagicAlias names what it calls
            if not isinstance(target, str):
                return False
            name = target
        return False

    return ours
