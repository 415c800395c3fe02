"""The ``%gemini`` line magic's subcommands: one small handler each, with its one-line help.

The magic parses its line and looks the command up here; ``%gemini?`` and
``%gemini help`` list this table.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from .. import messages
from ..engine.conversation import STATE_MODES, Conversation
from ..engine.errors import UserError
from ..engine.redaction import redact
from ..engine.rules import FILE_NAME, names, rule_pieces
from ..frontends.frontend import Frontend
from ..gemini.models import models_table
from ..gemini.pricing import PRICES, periods, price_for, storage_cost, table_text
from ..persistence.keeper import RecordKeeper
from ..sources import rules as rules_source
from ..ui import report
from ..ui.display import NotebookDisplay
from ..ui.widgets import OutcomeLine
from .options import GeminiOptions
from .shell_state import ShellState


@dataclass(frozen=True)
class Call:
    """What a handler works on: the options it shows or sets, the shell's state, the parsed line,
    the record, the chosen conversations, and the frontend as the kernel knows it now."""

    options: GeminiOptions
    state: ShellState
    args: argparse.Namespace
    keeper: RecordKeeper
    chosen: list[Conversation]  # -c NAME: that one; else every conversation
    frontend: Callable[[], Frontend]
    help: str  # %gemini's help: the table below and every flag's help (magic_arguments)


@dataclass(frozen=True)
class Command:
    usage: str  # the arguments, as the help shows them
    help: str
    run: Callable[[Call], None]


def _status(call: Call) -> None:
    frontend, state = call.frontend(), call.state
    conversations = list(state.session.conversations.values())
    print(report.status(conversations, call.options.model, call.options.state, frontend.view.description))
    print(messages.FRONTEND_IS.render(kind=frontend.kind.describe()))
    print(_rules_line(call.options))
    if state.bridge is not None:
        print(state.bridge.status())
    print(state.companion.status())
    print(call.keeper.status())


def _rules_line(options: GeminiOptions) -> str:
    """What a turn reads as rules now: off, none, or their names and where they are."""
    if options.rules == "off":
        return messages.RULES_OFF.render()
    found = rules_source.find(options._notebook_path())
    pieces = rule_pieces(found.texts(), options.max_rules_chars)
    if not pieces:
        return messages.RULES_NONE.render(file=FILE_NAME, folder=found.folder)
    where = [str(path) for path in found.files] + ([messages.RULES_NOTEBOOK.render()] if found.notebook else [])
    return messages.RULES_READ.render(names=names(pieces), where=", ".join(where))


def _rules(call: Call) -> None:
    """``%gemini rules``: what a turn reads; with a quoted text the notebook's own rules set, ``clear`` cleared."""
    notebook = call.options._notebook_path()
    if call.args.value is not None:
        if notebook is None or not notebook.is_file():
            NotebookDisplay.error(messages.RULES_NO_NOTEBOOK.render())
            return
        value = call.args.value
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":  # IPython's split keeps the quotes
            value = value[1:-1]
        text = "" if value == "clear" else value
        rules_source.set_notebook_rules(notebook, text)
        done = messages.RULES_SET_DONE if text else messages.RULES_CLEARED
        print(messages.RULES_WRITTEN.render(done=done.render(), path=notebook))
    print(_rules_line(call.options))
    own = rules_source.notebook_rules(notebook)
    if own:
        print(messages.RULES_OWN.render(chars=len(own), text=redact(own)))


def _history(call: Call) -> None:
    print("\n\n".join(report.history(c) for c in call.chosen) or messages.NO_CONVERSATION_YET.render())


def _tokens(call: Call) -> None:
    print("\n\n".join(report.token_table(c) for c in call.chosen) or messages.NO_CONVERSATION_YET.render())
    convs = call.state.session.conversations
    if convs:
        print(report.session_totals(list(convs.values()), _storage_costs(call)))


def _storage_costs(call: Call) -> list[tuple[str, float, float | None]]:
    """(model, token-hours, dollars or None) of explicit cache storage so far."""
    out = []
    for model, hours in call.state.session.caches.storage_token_hours().items():
        try:
            price = price_for(model.removeprefix("models/"), call.options.prices, call.state.session.today())
        except UserError:
            price = None
        out.append((model.removeprefix("models/"), hours, storage_cost(price, hours) if price else None))
    return out


def _cost(call: Call) -> None:
    # the record is open (every %gemini command opens it): what earlier kernels spent is known
    print(report.cost_report(call.state.session.spent, call.keeper.spent_before))


def _prices(call: Call) -> None:
    overrides = call.options.prices  # checked when set
    names = [call.args.value] if call.args.value else list(dict.fromkeys([*PRICES, *overrides]))
    table = [(name, periods(name, overrides)) for name in names]
    unknown = [name for name, held in table if not held]
    if call.args.value and unknown:
        NotebookDisplay.error(messages.NO_PRICE_KNOWN.render(model=call.args.value))
        return
    print(table_text([(name, held) for name, held in table if held], call.state.session.today()))


def _reset(call: Call) -> None:
    names = call.state.session.reset(None if call.args.all else (call.args.value or "default"))
    print(messages.RESET_DONE.render(names=", ".join(names)) if names else messages.NOTHING_TO_RESET.render())


def _forget(call: Call) -> None:
    names = None if call.args.all else [call.args.value or "default"]
    gone = set(call.keeper.forget(names)) | set(call.state.session.reset(None if names is None else names[0]))
    print(messages.FORGOTTEN.render(names=", ".join(sorted(gone))) if gone else messages.NOTHING_TO_FORGET.render())


def _model(call: Call) -> None:
    if call.args.value:
        call.options.model = call.args.value
    print(messages.MODEL_IS.render(model=call.options.model))
    if not periods(call.options.model, call.options.prices):
        print(messages.MODEL_UNPRICED.render(model=call.options.model))


def _models(call: Call) -> None:
    try:
        found = call.state.session.models(call.options._settings().client)
        print(models_table(found, call.options.model, lambda name: bool(periods(name, call.options.prices))))
    except UserError as exc:
        NotebookDisplay.error(str(exc))


def _state(call: Call) -> None:
    if call.args.value:
        if call.args.value not in STATE_MODES:
            NotebookDisplay.error(messages.STATE_CHOICES.render(choices=", ".join(STATE_MODES)))
            return
        call.options.state = call.args.value
    print(messages.STATE_IS.render(state=call.options.state))


def _debug(call: Call) -> None:
    if call.args.value in ("on", "off"):
        call.options.debug = call.args.value == "on"
    print(messages.DEBUG_IS.render(on="on" if call.options.debug else "off"))


def _on_proposal(action: str) -> Callable[[Call], None]:
    def run(call: Call) -> None:
        controller = call.state.latest.get(call.args.conversation or "default")
        if controller is None:
            NotebookDisplay.error(messages.NO_PROPOSAL.render())
            return
        getattr(controller, action)()
        if controller.writing:  # a live write: the frontend answers once this cell is done
            from IPython.display import display

            display(OutcomeLine(controller, action))
            return
        print(controller.message)

    return run


def _undo(call: Call) -> None:
    """The latest agent turn of the notebook, unless a conversation is named: then its newest proposal."""
    agent = call.state.agent_undo
    if agent is not None and not call.args.conversation:
        from ..ui.turn_undo_widget import undo_latest  # an agent turn's: its modules are imported by then

        undo_latest(agent)
        return
    _on_proposal("undo")(call)


def _help(call: Call) -> None:
    print(call.help.rstrip())


def chosen(conversations: dict[str, Conversation], name: str | None) -> list[Conversation] | None:
    """-c NAME: that conversation (None: there is none of that name); no -c: every one."""
    if not name:
        return list(conversations.values())
    return [conversations[name]] if name in conversations else None


# in the order argparse lists the choices
COMMANDS: dict[str, Command] = {
    "status": Command("", "model, state mode, synced hashes, turn counts", _status),
    "history": Command("[-c N]", "the turns, prompt and reply", _history),
    "reset": Command("[NAME|--all]", "forget a conversation (default: 'default') and delete its context cache", _reset),
    "forget": Command("[NAME|--all]", "reset it and delete it from the notebook's record", _forget),
    "tokens": Command("[-c N]", "per-turn tokens (cached ones too), request bytes and cost; session totals", _tokens),
    "cost": Command("", "what this session spent per conversation and model, and the record's before it", _cost),
    "prices": Command("[MODEL]", "the price table: each price's period and source, today's marked", _prices),
    "rules": Command(
        '["TEXT"|clear]',
        "the rules a turn reads (AGENTS.md files, the notebook's own); set or clear the notebook's",
        _rules,
    ),
    "model": Command("[NAME]", "show or set the default model", _model),
    "models": Command("", "the models your key can use, and the state modes each works in", _models),
    "state": Command("[MODE]", "show or set the default state mode", _state),
    "debug": Command("on|off", "full tracebacks for unexpected errors", _debug),
    "apply": Command("[-c N]", "apply the newest proposal (for frontends without buttons)", _on_proposal("apply")),
    "discard": Command("[-c N]", "discard the newest proposal", _on_proposal("discard")),
    "undo": Command(
        "[-c N]", "undo the latest agent turn (all its cell changes), else the newest applied proposal", _undo
    ),
    "help": Command("", "this help: every subcommand and flag", _help),
}

HELP = "Inspect and steer the conversations.\n\n" + "\n".join(
    f"%gemini {f'{name} {c.usage}'.strip():<22} {c.help}" for name, c in COMMANDS.items()
)
