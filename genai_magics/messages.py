"""Every sentence a user reads, defined once: the code renders it, tests and docs/failures.md check it.

A ``Message`` is a name, a ``str.format`` template with named fields, and where it shows
(``ERROR``: the one stderr line after ``genai_magics: ``; ``NOTE``: a line in the cell while
the turn goes on; ``STATUS``: a proposal widget's status line; ``OUTPUT``: what a ``%gemini``
command prints; ``PART``: a clause that fills another message's field). Tests compare against
``render``/``shown`` or ``matches`` instead of copying a sentence, and
``tests/test_messages.py`` checks that docs/failures.md quotes only these. Standard library
only: every layer may import it.
"""

from __future__ import annotations

import enum
import re
import string
from dataclasses import dataclass

PREFIX = "genai_magics: "  # what starts every ERROR line on stderr


class Shown(enum.Enum):
    ERROR = "error"
    NOTE = "note"
    STATUS = "status"
    OUTPUT = "output"  # what a %gemini command prints, or a cell's answer in place of an empty one
    PART = "part"  # a clause another message carries in a field


@dataclass(frozen=True)
class Message:
    name: str
    template: str  # str.format with named fields only ("{path}", "{size:,}")
    shown_as: Shown
    documented: bool = False  # docs/failures.md quotes it (the docs test holds it to that)

    def render(self, **fields: object) -> str:
        """The sentence with its fields filled (every field named, no other)."""
        missing = set(self.fields) - fields.keys()
        extra = fields.keys() - set(self.fields)
        if missing or extra:
            raise TypeError(f"{self.name}: missing {sorted(missing)}, unexpected {sorted(extra)}")
        return self.template.format(**fields)

    def shown(self, **fields: object) -> str:
        """The text as it reaches the user (an ERROR with its ``genai_magics: `` prefix)."""
        return (PREFIX if self.shown_as is Shown.ERROR else "") + self.render(**fields)

    @property
    def segments(self) -> tuple[tuple[str, str | None], ...]:
        """(fixed text, the field after it or None), in order."""
        return tuple((literal, name) for literal, name, _, _ in string.Formatter().parse(self.template))

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for _, name in self.segments if name is not None))

    @property
    def parts(self) -> tuple[str, ...]:
        """The fixed text between the fields."""
        return tuple(literal for literal, _ in self.segments if literal)

    def pattern(self, *, prefixed: bool = True) -> re.Pattern[str]:
        """Matches the shown text for any field values (a field named twice holds the same text)."""
        body, seen = [], set()
        for literal, name in self.segments:
            body.append(re.escape(literal))
            if name is not None:
                body.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)")
                seen.add(name)
        head = re.escape(PREFIX) if prefixed and self.shown_as is Shown.ERROR else ""
        return re.compile(head + "".join(body), re.DOTALL)

    def parse(self, text: str, *, prefixed: bool = True) -> dict[str, str] | None:
        """The fields' text in ``text`` shown as this message, or None when it is another sentence."""
        found = self.pattern(prefixed=prefixed).fullmatch(text)
        return None if found is None else found.groupdict()

    def matches(self, text: str, *, prefixed: bool = True) -> bool:
        """``text`` is this message as shown (``prefixed=False``: as rendered), whatever its fields hold."""
        return self.pattern(prefixed=prefixed).fullmatch(text) is not None

    def within(self, text: str) -> bool:
        """This message (without its prefix) is somewhere in ``text``."""
        return self.pattern(prefixed=False).search(text) is not None


CATALOGUE: dict[str, Message] = {}


def _m(name: str, template: str, shown_as: Shown, *, documented: bool = False) -> Message:
    if name in CATALOGUE:
        raise ValueError(f"two messages named {name}")
    message = Message(name, template, shown_as, documented)
    CATALOGUE[name] = message
    return message


E, N, S, OUT, P = Shown.ERROR, Shown.NOTE, Shown.STATUS, Shown.OUTPUT, Shown.PART

# API failures (gemini/errors.py): what happened and what to do.
KEY_REJECTED = _m(
    "KEY_REJECTED",
    "API key rejected ({code}): set GEMINI_API_KEY (or GOOGLE_API_KEY) to a valid key. {detail}",
    E,
    documented=True,
)
REQUEST_REJECTED = _m(
    "REQUEST_REJECTED",
    "Gemini rejected the request (400): {detail} - check the prompt and --model; --dry-run shows the request",
    E,
    documented=True,
)
NOT_FOUND = _m(
    "NOT_FOUND", "not found (404): check the model name (%config GeminiMagics.model). {detail}", E, documented=True
)
RATE_LIMITED = _m(
    "RATE_LIMITED",
    "rate limited (429) after {attempts} attempt(s); wait a minute and run the cell again.",
    E,
    documented=True,
)
SERVER_ERROR = _m(
    "SERVER_ERROR",
    "Gemini server error ({code}) after {attempts} attempt(s); run the cell again later.",
    E,
    documented=True,
)
TIMED_OUT = _m(
    "TIMED_OUT",
    "no answer within {timeout_s:g} s (each of {attempts} attempt(s)); "
    "raise %config GeminiMagics.timeout or try again.",
    E,
    documented=True,
)
STREAM_CUT = _m(
    "STREAM_CUT", "the answer stream was cut off before it finished; run the cell again.", E, documented=True
)
UNREACHABLE = _m(
    "UNREACHABLE", "cannot reach Gemini ({error}); check the network or GOOGLE_GEMINI_BASE_URL.", E, documented=True
)
OTHER_STATUS = _m("OTHER_STATUS", "Gemini answered {code}: {detail}", E)
OTHER_FAILURE = _m("OTHER_FAILURE", "{kind}: {detail}", E)

# GeminiMagics.prices (gemini/pricing.py), checked at the turn that uses it.
PRICE_FIELDS_UNKNOWN = _m(
    "PRICE_FIELDS_UNKNOWN", "GeminiMagics.prices[{model!r}]: unknown field(s) {unknown}; use {known}", E
)
PRICE_FIELDS_MISSING = _m(
    "PRICE_FIELDS_MISSING", "GeminiMagics.prices[{model!r}]: a model not in the table needs {missing} too", E
)

# Retries the SDK makes (gemini/transport.py), announced while it waits.
RETRYING = _m("RETRYING", "{why}; retrying in ~{wait} s ({attempt}/{attempts})", N, documented=True)
NO_ANSWER_WITHIN = _m("NO_ANSWER_WITHIN", "no answer within {timeout_s:g} s", P, documented=True)
CANNOT_REACH = _m("CANNOT_REACH", "cannot reach Gemini ({error})", P, documented=True)
RATE_LIMITED_NOW = _m("RATE_LIMITED_NOW", "rate limited ({code})", P, documented=True)
SERVER_ERROR_NOW = _m("SERVER_ERROR_NOW", "Gemini server error ({code})", P, documented=True)

# The explicit context cache (gemini/caching.py).
CACHE_GONE = _m(
    "CACHE_GONE", "the context cache expired or was deleted on the server; creating it again once", N, documented=True
)
CACHE_NOT_MADE = _m(
    "CACHE_NOT_MADE", "could not create a context cache ({why}); sending without one", N, documented=True
)

# The notebook's record (persistence/).
RECORD_LEFT_UNTOUCHED = _m(
    "RECORD_LEFT_UNTOUCHED",
    "the conversation record {path} is {why}; left untouched: this kernel keeps its conversations in memory only "
    "(%config GeminiMagics.record_location names another file)",
    E,
    documented=True,
)
RECORD_SET_ASIDE = _m(
    "RECORD_SET_ASIDE",
    "the conversation record {path} is {why}; set aside as {aside}, starting fresh",
    E,
    documented=True,
)
RECORD_WRONG_SHAPE = _m("RECORD_WRONG_SHAPE", "of the wrong shape ({where})", P, documented=True)
RECORD_NOT_WRITTEN = _m("RECORD_NOT_WRITTEN", "cannot write the conversation record {path}: {error}", E)
REPLAY_ONLY = _m(
    "REPLAY_ONLY",
    "replay is 'only': {why}; nothing was sent (%config GeminiMagics.replay = 'auto' to ask Gemini)",
    E,
)
REPLAY_ONLY_RERUN = _m("REPLAY_ONLY_RERUN", "--rerun asks Gemini", P)
REPLAY_ONLY_NO_MATCH = _m("REPLAY_ONLY_NO_MATCH", "no recorded turn matches this cell (turn {position} of {name!r})", P)
RECORD_LOST = _m(
    "RECORD_LOST",
    "another kernel wrote this notebook's conversation record ({path}) since this kernel read it; "
    "this kernel no longer saves its turns (restart it to continue from that record)",
    E,
)

# Context flags (sources/).
NO_EXCEPTION_YET = _m(
    "NO_EXCEPTION_YET", "--error: no exception has been raised in this session yet", E, documented=True
)
NO_SUCH_VARIABLE = _m("NO_SUCH_VARIABLE", "--vars: no variable named {name!r} in the notebook", E)
NOT_A_VARIABLE_NAME = _m("NOT_A_VARIABLE_NAME", "--vars: {item!r} is not a variable name{hint}", E)
NO_ATTRIBUTES = _m("NO_ATTRIBUTES", " (attributes such as obj.attr are not supported: name the object)", P)
NO_VARIABLE_NAMES = _m("NO_VARIABLE_NAMES", "--vars: no variable names given (e.g. --vars df,model)", E)
IMAGE_DOWNSCALED = _m(
    "IMAGE_DOWNSCALED",
    "{label}'s image {position} is {size:,} bytes, over max_image_bytes ({cap:,}): downscaled to "
    "{width}x{height} ({new_size:,} bytes) to send it",
    N,
    documented=True,
)
IMAGE_NEEDS_PILLOW = _m(
    "IMAGE_NEEDS_PILLOW",
    "{label}'s image {position} is {size:,} bytes, over max_image_bytes ({cap:,}), and Pillow is not installed "
    "to downscale it: not sent (pip install pillow, or raise %config GeminiMagics.max_image_bytes)",
    N,
    documented=True,
)

# --notebook's file (frontends/notebook_view.py); the turn says "--notebook: " before it.
NOTEBOOK_FLAG = _m("NOTEBOOK_FLAG", "--notebook: {why}", E, documented=True)
NO_NOTEBOOK_KNOWN = _m(
    "NO_NOTEBOOK_KNOWN",
    "no notebook file is known to this kernel and no live notebook view is connected",
    P,
    documented=True,
)
NOTEBOOK_NOT_FOUND = _m("NOTEBOOK_NOT_FOUND", "notebook file not found: {path}", P, documented=True)
NOTEBOOK_UNREADABLE = _m("NOTEBOOK_UNREADABLE", "cannot read notebook {name}: {error}", P, documented=True)
NOTEBOOK_NOT_V4 = _m("NOTEBOOK_NOT_V4", "{name} is nbformat {version}, not 4", P, documented=True)

# Writes into cells (frontends/): why one did not happen.
COMPANION_NOT_CONNECTED = _m(
    "COMPANION_NOT_CONNECTED",
    "the VS Code companion is not connected (is the notebook still open?)",
    P,
    documented=True,
)
BRIDGE_NOT_CONNECTED = _m(
    "BRIDGE_NOT_CONNECTED",
    "no live notebook frontend is connected (the genai-magics-bridge JupyterLab extension has not answered "
    "in this kernel)",
    P,
)
BRIDGE_CLOSED = _m("BRIDGE_CLOSED", "the bridge was closed", P)
NOTEBOOK_CLOSED = _m("NOTEBOOK_CLOSED", "the notebook was closed (the frontend closed the bridge)", P)
BRIDGE_SEND_FAILED = _m("BRIDGE_SEND_FAILED", "could not send the request to the notebook frontend (comm closed)", P)
FRONTEND_REFUSED = _m("FRONTEND_REFUSED", "the notebook frontend refused the edit", P)
FRONTEND_NO_REPLY = _m(
    "FRONTEND_NO_REPLY",
    "no reply from the notebook frontend within {timeout:g} s ({op}); is the notebook still open in JupyterLab?",
    P,
)
COMPANION_UNWRITABLE = _m("COMPANION_UNWRITABLE", "could not write to the VS Code companion ({error})", P)
COMPANION_CONFUSED = _m("COMPANION_CONFUSED", "the VS Code companion answered something else", P)
COMPANION_REFUSED = _m("COMPANION_REFUSED", "the VS Code companion refused the edit", P)
COMPANION_NO_REPLY = _m(
    "COMPANION_NO_REPLY", "no reply from the VS Code companion within {timeout:g} s ({op})", P, documented=True
)
EDITED_BEFORE_RERUN = _m(
    "EDITED_BEFORE_RERUN",
    "the magic cell was edited before it ran again, so it ran as written; "
    "click Apply again to stage the proposal for its next run",
    P,
    documented=True,
)
LIVE_APPLY = _m(
    "LIVE_APPLY", "Apply writes the proposal into the cell in the notebook (one Ctrl+Z step undoes it there).", S
)
COMPANION_APPLY = _m(
    "COMPANION_APPLY",
    "Apply writes the proposal into the cell it is about, in VS Code (genai-magics companion; "
    "Ctrl+Z in that cell undoes it there).",
    S,
)
NOTEBOOK_EDITS_APPLY = _m(
    "NOTEBOOK_EDITS_APPLY", "Apply makes these cell edits in the notebook: {preview}. Undo reverts all of them.", S
)
KERNEL_STATE_APPLY = _m(
    "KERNEL_STATE_APPLY",
    "Apply records the proposal as this cell's code for the conversation; "
    "this frontend cannot edit cells, so paste it into the cell yourself (Copy).",
    S,
)
KERNEL_STATE_DONE = _m(
    "KERNEL_STATE_DONE",
    "{verb} for the conversation: paste {what} into {label} yourself (this frontend cannot edit cells).",
    S,
)
NOTEBOOK_RECORD_ONLY_APPLY = _m(
    "NOTEBOOK_RECORD_ONLY_APPLY",
    "Apply only records the proposal for the conversation: this frontend cannot edit other cells, "
    "so nothing is written into any cell; copy each changed cell from the diff (or Copy) yourself.",
    S,
)
PREFILLED_APPLY = _m(
    "PREFILLED_APPLY",
    "The proposal is pre-filled at the next prompt: run it there. "
    "%gemini apply / discard / undo record what you did with it.",
    S,
)
PREFILLED_APPLIED = _m(
    "PREFILLED_APPLIED", "Applied for the conversation: the model holds the proposal (pre-filled at the prompt).", S
)
PREFILLED_UNDONE = _m(
    "PREFILLED_UNDONE", "{verb} for the conversation: the model holds {what} again; run that code to get it back.", S
)
RUNNING_CELL_APPLY = _m(
    "RUNNING_CELL_APPLY",
    "Apply replaces this magic cell with the proposal (your instruction kept as its first comment line); "
    "that cell then is the conversation's code. This cell waits up to {timeout_s:g} s for Apply or Discard.",
    S,
)
STAGED_APPLY = _m(
    "STAGED_APPLY",
    "Apply is staged: run this cell again and it is replaced by the proposal (no new request is sent).",
    S,
)
STAGED = _m("STAGED", "Apply staged: run this cell again (Shift+Enter) to write the proposal into it.", S)
LIVE_DONE = _m("LIVE_DONE", "{verb}: {what} is now in {label} (Ctrl+Z in the cell reverts it too).", S)
RUNNING_CELL_APPLIED = _m(
    "RUNNING_CELL_APPLIED",
    "Applied: this cell is replaced by the proposal (your instruction kept as its first line).",
    S,
)
RUNNING_CELL_UNDONE = _m(
    "RUNNING_CELL_UNDONE",
    "{verb} for the conversation: {label} still holds the code from before; this cell keeps the applied code.",
    S,
    documented=True,
)

# A proposal's buttons (ui/proposal.py, engine/conversation.py): the status line says why nothing changed.
REFUSED = _m("REFUSED", "{action}: {reason}.", S, documented=True)
RESET_SINCE = _m(
    "RESET_SINCE", "this proposal belongs to a conversation that was reset; nothing changed", P, documented=True
)
DISCARDED_SINCE = _m("DISCARDED_SINCE", "this proposal was discarded", P, documented=True)
NEWER_APPLIED = _m("NEWER_APPLIED", "a newer proposal (turn {turn}) was applied; this one is stale", P, documented=True)
NO_PROPOSAL_IN_TURN = _m("NO_PROPOSAL_IN_TURN", "this turn has no proposal", P)
ALREADY_APPLIED = _m("ALREADY_APPLIED", "already applied", P)
NOTHING_TO_DISCARD = _m("NOTHING_TO_DISCARD", "nothing to discard: the proposal is {outcome}", P)
NOTHING_TO_UNDO = _m("NOTHING_TO_UNDO", "nothing to undo: the proposal is {outcome}", P)
UNDO_LATER_FIRST = _m("UNDO_LATER_FIRST", "undo turn {turn} first: it was applied after this one", P)
CELL_GONE = _m(
    "CELL_GONE",
    "{action} not done: the cell this proposal is for is no longer in the notebook (deleted?). Nothing changed.",
    S,
)
CHANGED_SINCE = _m(
    "CHANGED_SINCE",
    "{action} not done: {what} changed since this proposal was made. Use '{verb} anyway' to overwrite it.",
    S,
    documented=True,
)
WRITE_FAILED = _m("WRITE_FAILED", "{action} failed: {error}. Nothing changed.", S, documented=True)
NO_CHANGE = _m("NO_CHANGE", "No change: the proposal is the same as the current code; there is nothing to apply.", S)
DISCARDED = _m("DISCARDED", "Discarded: the cell keeps its code; the model is told it was discarded.", S)
KERNEL_GONE = _m(
    "KERNEL_GONE",
    "The kernel {what}: these buttons no longer work. Run the magic cell again (with the notebook's record, "
    "its recorded turn comes back without a new request).",
    S,
    documented=True,
)
DIFF_TOO_LARGE = _m(
    "DIFF_TOO_LARGE",
    "(the diff is too large to show here: {added:,} lines added, {removed:,} removed, {chars:,} characters, "
    "over the {cap:,}-byte display cap; Copy shows the proposal as text)",
    S,
    documented=True,
)

# The cell's answer and the dry run (ui/display.py).
ANSWER_CUT = _m(
    "ANSWER_CUT",
    "… (cut here: {more:,} more characters not shown; the whole answer is kept in the conversation)",
    N,
)
ANSWER_CUT_TERMINAL = _m(
    "ANSWER_CUT_TERMINAL", "… (cut here: the rest is not shown; the whole answer is kept in the conversation)", N
)
DRY_RUN = _m("DRY_RUN", "dry run ({state}): this request would be sent; nothing was sent and no state changed", N)

# The model's edit answer (edit_answer.py).
EDIT_NOT_JSON = _m(
    "EDIT_NOT_JSON",
    "the model's edit answer was not valid JSON, so there is no proposal; nothing was recorded - run the cell again",
    E,
    documented=True,
)
EDIT_EMPTY = _m(
    "EDIT_EMPTY",
    "the model's edit answer had neither proposedSource nor valid edits; nothing was recorded - run the cell again",
    E,
)
EDITS_ASKED_AGAIN = _m(
    "EDITS_ASKED_AGAIN",
    "the model's edits did not apply ({why}); asking once more for the whole text",
    N,
    documented=True,
)
EDITS_AGAIN = _m(
    "EDITS_AGAIN",
    "the model's edits did not apply ({why}), and its second answer was edits again; "
    "nothing was recorded - run the cell again",
    E,
    documented=True,
)

# %gemini subcommands (kernel/line_commands.py) and what they print.
NO_CONVERSATION_YET = _m("NO_CONVERSATION_YET", "no conversation yet", OUT)
RESET_DONE = _m("RESET_DONE", "reset: {names}", OUT)
NOTHING_TO_RESET = _m("NOTHING_TO_RESET", "nothing to reset", OUT)
FORGOTTEN = _m("FORGOTTEN", "forgotten: {names}", OUT)
NOTHING_TO_FORGET = _m("NOTHING_TO_FORGET", "nothing to forget", OUT)
MODEL_IS = _m("MODEL_IS", "model: {model}", OUT)
STATE_IS = _m("STATE_IS", "default state mode: {state}", OUT)
DEBUG_IS = _m("DEBUG_IS", "debug: {on}", OUT)
FRONTEND_IS = _m("FRONTEND_IS", "frontend: {kind}", OUT)
# The frontend kinds (frontends/frontend.py's Kind), as %gemini status names them.
FRONTEND_LIVE = _m("FRONTEND_LIVE", "live notebook (bridge)", P)
FRONTEND_COMPANION = _m(
    "FRONTEND_COMPANION", "VS Code with the genai-magics companion: Apply writes the cell the conversation is about", P
)
FRONTEND_RUNNING_CELL = _m("FRONTEND_RUNNING_CELL", "VS Code: Apply replaces the running magic cell", P)
FRONTEND_STAGED = _m("FRONTEND_STAGED", "VS Code: Apply is staged for the next run of the magic cell", P)
FRONTEND_COPY = _m("FRONTEND_COPY", "copy only: Apply is recorded for the conversation", P)
FRONTEND_TERMINAL = _m("FRONTEND_TERMINAL", "terminal: the proposal is pre-filled at the next prompt", P)
NO_CHOICE_STAGED = _m(
    "NO_CHOICE_STAGED",
    "No choice within {timeout_s:g} s; the cell is released. Apply is now staged: click it, then run this cell again.",
    S,
)
# The record's lines in %gemini status (persistence/replay.py).
RECORD_OFF = _m("RECORD_OFF", "record: off (GeminiMagics.persist is off)", OUT)
RECORD_NONE = _m(
    "RECORD_NONE",
    "record: none (the notebook's path is unknown: %config GeminiMagics.record_location = "
    "'/path/record.json' keeps one anyway)",
    OUT,
)
RECORD_AT = _m("RECORD_AT", "record: {path} · replay {mode}{more}", OUT)
RECORD_READ_ONLY = _m(
    "RECORD_READ_ONLY", " · left untouched (not a record this kernel may write): conversations in memory only", P
)
RECORD_NOT_READ = _m("RECORD_NOT_READ", " · not read yet", P)
RECORD_RESTORED = _m(
    "RECORD_RESTORED",
    "conversation {name!r} restored from the record: {loaded} recorded turn(s), {replayed} replayed{live}",
    OUT,
)
RECORD_LIVE_FROM = _m("RECORD_LIVE_FROM", ", live from turn {turn}", P)
RECORD_LIVE_AFTER = _m("RECORD_LIVE_AFTER", ", live after turn {turn} (every recorded turn kept)", P)
NO_PROPOSAL = _m("NO_PROPOSAL", "no proposal to act on in this conversation", E, documented=True)
STATE_CHOICES = _m("STATE_CHOICES", "state must be one of {choices}", E, documented=True)

# Cell outputs sent as context (engine/outputs.py).
OUTPUT_CUT = _m("OUTPUT_CUT", "[cut at {cap:,} characters: max_output_chars]", P, documented=True)
WIDGET_NOT_SENT = _m("WIDGET_NOT_SENT", "[a widget, not sent: {text}]", P, documented=True)
OUTPUT_NOT_SENT = _m("OUTPUT_NOT_SENT", "[a {kind} output, not sent]", P)

# A turn (turn/pipeline.py, kernel/magics.py): refused before anything is sent, or failed with nothing recorded.
PROPOSAL_BELOW = _m("PROPOSAL_BELOW", "_(proposal below)_", OUT)
EMPTY_ANSWER = _m("EMPTY_ANSWER", "_(empty answer)_", OUT)
NOT_RECORDED = _m("NOT_RECORDED", "the answer is kept in this kernel but not in the record ({error})", N)
RECORD_UNUSABLE = _m("RECORD_UNUSABLE", "conversation record: {error}", E)
USAGE = _m("USAGE", "{error} (see %{magic}?)", E, documented=True)  # magic: "%gemini_ask", "gemini"
PROMPT_OVER_CAP = _m(
    "PROMPT_OVER_CAP",
    "the prompt is {size:,} bytes, over the cap of {cap:,}; nothing was sent "
    "(%config GeminiMagics.max_prompt_bytes; put big text in a cell and use --cell or --vars)",
    E,
)
PROMPT_EMPTY = _m(
    "PROMPT_EMPTY", "the prompt is empty: write your request in the cell body below the magic line", E, documented=True
)
NO_SUCH_CELL = _m(
    "NO_SUCH_CELL",
    "{flag} {ref}: no such cell (use an execution count like 5 or In[5], a cell id, or -1)",
    E,
    documented=True,
)
NO_CELL_WITH_COUNT = _m(
    "NO_CELL_WITH_COUNT", "{flag} {ref}: no cell with execution count {count} in this session", E, documented=True
)
NO_CELL_WITH_COUNT_OR_ID = _m(
    "NO_CELL_WITH_COUNT_OR_ID",
    "{flag} {ref}: no cell with execution count {ref} in this session and no cell id starting with it",
    E,
    documented=True,
)
NO_CODE_CELL_RUN = _m("NO_CODE_CELL_RUN", "{flag} -1: no code cell has been run yet", E)
AMBIGUOUS_COUNT_OR_ID = _m(
    "AMBIGUOUS_COUNT_OR_ID",
    "{flag} {ref}: ambiguous, In[{ref}] ran in this session and cell {cell} has an id starting with {ref}; "
    "write In[{ref}] for the run, or more of the id",
    E,
)
AMBIGUOUS_ID = _m("AMBIGUOUS_ID", "{flag} {ref}: ambiguous, {count} cells have ids starting with it", E)
NOTEBOOK_EMPTY = _m("NOTEBOOK_EMPTY", "the notebook has no cells to work on", P)
MAGIC_AS_DOCUMENT = _m("MAGIC_AS_DOCUMENT", "{named}: that is a genai magic cell, not code to work on", E)
VIEW_BEHIND = _m(
    "VIEW_BEHIND",
    "the live notebook view has not caught up with this cell; "
    "using the kernel's record of executed cells for this turn",
    N,
)
STAGED_WRITTEN = _m(  # printed after the prefix, on stdout: not a failure
    "STAGED_WRITTEN", "the staged proposal replaces this cell now; no request was sent.", N
)
NOT_A_CODE_CELL = _m(
    "NOT_A_CODE_CELL",
    "{named}: that is a {cell_type} cell; only code cells can be the document",
    E,
    documented=True,
)
DOCUMENT_OVER_CAP = _m(
    "DOCUMENT_OVER_CAP",
    "the document is {size:,} bytes, over the cap of {cap:,} (%config GeminiMagics.max_document_bytes)",
    E,
    documented=True,
)
DOCUMENT_NOT_TEXT = _m(
    "DOCUMENT_NOT_TEXT",
    "{label} holds binary or undecodable text (at character {at}); nothing was sent - only text can be the document",
    E,
    documented=True,
)
FIELD_NOT_TEXT = _m(
    "FIELD_NOT_TEXT",
    "the turn's {name} holds undecodable text (a lone surrogate, {char}, at character {at}); nothing was sent",
    E,
    documented=True,
)
NOTHING_TO_EDIT = _m(
    "NOTHING_TO_EDIT", "nothing to edit yet: run a code cell first, or name one with --cell", E, documented=True
)
BAD_NAME = _m(
    "BAD_NAME",
    "conversation name {name!r} is not allowed: use 1-64 letters, digits, '_', '-' or '.'",
    E,
    documented=True,
)
NO_CONVERSATION = _m("NO_CONVERSATION", "no conversation named {name!r}", E, documented=True)
NO_API_KEY = _m(
    "NO_API_KEY",
    "no API key: set GEMINI_API_KEY (or GOOGLE_API_KEY), or use --dry-run to see the request",
    E,
    documented=True,
)
UNEXPECTED = _m("UNEXPECTED", "unexpected {kind}: {error} (%gemini debug on shows the traceback)", E, documented=True)
STOPPED = _m(
    "STOPPED",
    "stopped: the answer was interrupted; nothing was recorded and the conversation is as before",
    E,
    documented=True,
)
MAGIC_IN_DOCUMENT = _m(
    "MAGIC_IN_DOCUMENT",
    "{where} was this conversation's document and now {now}, so no cell has the code the model has: "
    "paste that code into a code cell and run it, or name the document with --cell",
    E,
    documented=True,
)
CHAIN_LOST = _m(
    "CHAIN_LOST",
    "the server no longer holds this conversation; starting a new chain and sending the document, "
    "the context and a digest of the earlier turns once",
    N,
    documented=True,
)
CHAIN_TOO_LONG = _m(
    "CHAIN_TOO_LONG",
    "the server chain holds {versions} versions of the code and the model reads them all on every turn; "
    "starting a new chain with the current code and a digest of the earlier turns "
    "(%config GeminiMagics.max_chain_versions)",
    N,
    documented=True,
)
IMAGES_WAIT = _m(
    "IMAGES_WAIT",
    "{count} image(s) not sent this turn: max_images is {cap} (%config GeminiMagics.max_images); {then}",
    N,
    documented=True,
)
IMAGES_LATER = _m("IMAGES_LATER", "they go with a later turn", P, documented=True)
IMAGES_NEVER = _m("IMAGES_NEVER", "none is sent while it is 0", P)
KEY_LINE_CHANGED = _m(
    "KEY_LINE_CHANGED",
    "the model saw the API key as *** and changed the line around it in {cells}; "
    "left as it is there (edit that line yourself)",
    N,
    documented=True,
)

# -- the functions the model calls (sources/tools.py): one line in the cell per call ------------
TOOL_CALLED = _m("TOOL_CALLED", "→ {call}: {chars:,} chars", N)
TOOL_UNCHANGED = _m("TOOL_UNCHANGED", "→ {call}: unchanged, {chars:,} chars (the model holds it)", N)
TOOL_FAILED = _m("TOOL_FAILED", "→ {call}: error result: {error}", N, documented=True)
TOOL_LIMIT = _m("TOOL_LIMIT", "{count} tool calls: the limit (max_tool_calls)", N, documented=True)
TOOL_NO_VARIABLE = _m("TOOL_NO_VARIABLE", "inspect_variable: no variable named {name!r} in the notebook", P)
TOOL_NO_EXCEPTION = _m("TOOL_NO_EXCEPTION", "last_error: no exception has been raised in this session yet", P)
UNKNOWN_TOOLS = _m(
    "UNKNOWN_TOOLS",
    "tools: {names} is not one of the functions the model may call ({known}); the setting stays as it was",
    N,
    documented=True,
)
