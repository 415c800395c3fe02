"""The flags of the turn magics, the help built from them (IPython's magic_arguments), and the
turn request the parsed flags make."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable
from typing import Any

from IPython.core.magic_arguments import argument, magic_arguments

from ..engine.conversation import STATE_MODES, Mode
from ..sources.explicit import ExplicitContext
from ..turn.requests import TurnRequest

# The flags an agent turn takes (``%%gemini_agent``): the others keep their defaults there.
AGENT_FLAGS = (
    "--cell",
    "--conversation",
    "--new",
    "--model",
    "--state",
    "--dry-run",
    "--error",
    "--vars",
    "--rerun",
    "--outputs",
    "--search",
    "--approve",
)
APPROVALS = ("runs", "all", "none")  # agent_approve: what waits for the user's click


def turn_arguments(magic: str, form: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The flags shared by %%gemini_ask and %%gemini_edit (%%gemini_agent: ``AGENT_FLAGS``), and the help
    of ``form`` ("cell": the prompt is the cell body; "line": the words after the flags)."""
    agent = magic == "gemini_agent"

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        flags = [
            argument(
                "--cell",
                metavar="REF",
                help="the document: an execution count (5 or In[5]), a cell id, or -1 for the most recent code cell",
            ),
            argument("--notebook", action="store_true", help="the whole notebook is the document"),
            argument(
                "-c",
                "--conversation",
                default="default",
                metavar="NAME",
                help="which conversation to continue (default: 'default')",
            ),
            argument("--new", action="store_true", help="start this conversation over"),
            argument("--model", metavar="MODEL", help="model for this turn (default: %%config GeminiMagics.model)"),
            argument(
                "--state",
                choices=STATE_MODES,
                metavar="MODE",
                help="where the conversation lives: contents (kept by the kernel) or interactions (kept by the server)",
            ),
            argument(
                "--no-context", action="store_true", help="send no other cells (and for an ask, no document either)"
            ),
            argument(
                "--dry-run",
                action="store_true",
                help="show the exact request; send nothing, change nothing, no key needed",
            ),
            argument(
                "--interpolate",
                action="store_true",
                help="expand {name} and $name from the user namespace in the prompt "
                "(and send a summary of each {name} variable)",
            ),
            argument(
                "--error",
                action="store_true",
                help="send the session's last exception (trimmed traceback); "
                "an empty prompt asks to explain and fix it",
            ),
            argument(
                "--vars",
                metavar="NAMES",
                help="send compact summaries of these variables, e.g. df,model (each only when it changed)",
            ),
            argument(
                "--rerun", action="store_true", help="ask Gemini again although this turn is in the notebook's record"
            ),
            argument(
                "--no-outputs",
                action="store_true",
                help="leave out what the document cell showed (its printed text, tables and images)",
            ),
            argument(
                "--outputs",
                metavar="CELLS",
                help="also send what these cells showed, e.g. 3,In[5] (the same REF as --cell, comma-separated)",
            ),
            argument(
                "--no-tools",
                action="store_true",
                help="offer the model no function to call this turn (no declarations sent)",
            ),
            argument(
                "--search",
                action="store_true",
                help="offer Gemini's Google Search and URL context this turn (GeminiMagics.search: every turn): "
                "the answer lists its sources; each search is billed at the model's rate (%%gemini prices)",
            ),
            argument(
                "--approve",
                choices=APPROVALS,
                metavar="WHAT",
                help="what waits for your click this turn: runs (each run_cell), all (every change too) or none "
                "(default: %%config GeminiMagics.agent_approve)",
            ),
        ]
        names = ["--cell", "--notebook", "--conversation", "--new", "--model", "--state", "--no-context"]
        names += ["--dry-run", "--interpolate", "--error", "--vars", "--rerun", "--no-outputs", "--outputs"]
        names += ["--no-tools", "--search", "--approve"]
        wanted = AGENT_FLAGS if agent else tuple(n for n in names if n != "--approve")
        chosen = [flag for name, flag in zip(names, flags, strict=True) if name in wanted]
        words = argument("words", nargs="*", help=argparse.SUPPRESS if form == "cell" else "the prompt")
        for decorator in reversed([magic_arguments(), *chosen, words]):
            func = decorator(func)
        func.parser.allow_abbrev = False  # type: ignore[attr-defined]  # a mistyped flag is an error, not a guess
        # argparse %-formats the usage: '%%' is one '%'.
        usage = (
            f"%%%%{magic} [options]\n       the prompt: the lines below, in the cell body"
            if form == "cell"
            else f"%%{magic} [options] prompt words"
        )
        return plain_help(usage)(func)

    return decorate


def plain_help(usage: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A magic_arguments magic's help in argparse's own layout: IPython's formatter writes reST
    ('::', '<{a,b}>') that ``%%gemini_edit?`` and ``%gemini help`` would show raw. ``usage`` is
    %-formatted by argparse ('%%' is one '%')."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        parser = func.parser  # type: ignore[attr-defined]  # set by magic_arguments()
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        parser.description = inspect.cleandoc(parser.description or "")
        parser.usage = usage
        func.__doc__ = parser.format_help()
        return func

    return decorate


def turn_request(mode: Mode, args: argparse.Namespace, asked: ExplicitContext, agent: bool = False) -> TurnRequest:
    """The request a turn magic's parsed flags and its gathered context make (``agent``: %%gemini_agent's,
    an ask that may act)."""
    return TurnRequest(
        mode=mode,
        agent=agent,
        prompt=asked.prompt,
        conversation=args.conversation,
        cell=args.cell,
        notebook=args.notebook,
        new=args.new,
        model=args.model,
        state=args.state,
        no_context=args.no_context,
        dry_run=args.dry_run,
        extra_pieces=asked.pieces,
        preferred_target=asked.failing_cell,
        rerun=args.rerun,
        outputs=not args.no_outputs,
        output_cells=tuple(ref.strip() for ref in (args.outputs or "").split(",") if ref.strip()),
        tools=not args.no_tools,
        search=args.search,
    )


def with_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """An agent magic's parsed flags with the flags it does not take at their defaults (as not given)."""
    for name in ("notebook", "no_context", "interpolate", "no_outputs", "no_tools"):
        setattr(args, name, getattr(args, name, False))
    args.approve = getattr(args, "approve", None)
    return args


def documented(doc: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A docstring made from a table (magic_arguments reads it for the magic's help)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        func.__doc__ = doc
        return func

    return decorate


def takes_value(magic) -> frozenset[str]:
    """The magic's flags that read a value (``--cell REF``), as its parser declares them."""
    return frozenset(o for a in magic.parser._actions for o in a.option_strings if a.nargs != 0)
