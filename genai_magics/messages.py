"""Every sentence a user reads, defined once: the code renders it, tests and docs/failures.md check it.

A ``Message`` is a name, a ``str.format`` template with named fields, and where it shows
(``ERROR``: the one stderr line after ``genai_magics: ``; ``NOTE``: a line in the cell while
the turn goes on; ``STATUS``: a proposal widget's status line; ``OUTPUT``: what a ``%gemini``
command prints; ``FOOTER``: the line under a turn's answer or a dry run's request; ``PART``: a
clause that fills another message's field; ``TOOLTIP``: hover text). Tests compare against
``render``/``shown`` or ``matches`` instead of copying a sentence, and
``tests/unit/test_messages.py`` checks that docs/failures.md quotes only these. Standard library
only: every layer may import it.
"""

from __future__ import annotations

import enum
import re
import string
from dataclasses import dataclass
from functools import cached_property

PREFIX = "genai_magics: "  # what starts every ERROR line on stderr


class Shown(enum.Enum):
    ERROR = "error"
    NOTE = "note"
    STATUS = "status"
    OUTPUT = "output"  # what a %gemini command prints, or a cell's answer in place of an empty one
    FOOTER = "footer"  # the line under a turn's answer (the footer, the replay line) or a dry run's request
    PART = "part"  # a clause another message carries in a field
    TOOLTIP = "tooltip"  # shown on hover


@dataclass(frozen=True)
class Message:
    name: str
    template: str  # str.format with named fields only ("{path}", "{size:,}")
    shown_as: Shown
    documented: bool = False  # docs/failures.md quotes it (the docs test holds it to that)

    def render(self, **fields: object) -> str:
        """The sentence with its fields filled (every field named, no other)."""
        if fields.keys() != self._named:  # one comparison when right; which fields, only when wrong
            missing, extra = self._named - fields.keys(), fields.keys() - self._named
            raise TypeError(f"{self.name}: missing {sorted(missing)}, unexpected {sorted(extra)}")
        return self.template.format(**fields)

    def shown(self, **fields: object) -> str:
        """The text as it reaches the user (an ERROR with its ``genai_magics: `` prefix)."""
        return (PREFIX if self.shown_as is Shown.ERROR else "") + self.render(**fields)

    @cached_property  # parsed once: a turn renders some twenty messages (its footer, notes)
    def segments(self) -> tuple[tuple[str, str | None], ...]:
        """(fixed text, the field after it or None), in order."""
        return tuple((literal, name) for literal, name, _, _ in string.Formatter().parse(self.template))

    @cached_property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for _, name in self.segments if name is not None))

    @cached_property
    def _named(self) -> frozenset[str]:
        return frozenset(self.fields)

    @property
    def parts(self) -> tuple[str, ...]:
        """The fixed text between the fields."""
        return tuple(literal for literal, _ in self.segments if literal)

    def pattern(self, *, prefixed: bool = True, **known: object) -> re.Pattern[str]:
        """Matches the shown text for any field values but the ``known`` ones (rendered as ``render`` does);
        a field named twice holds the same text."""
        formatter = string.Formatter()
        body, seen = [], set()
        for literal, name, spec, conversion in formatter.parse(self.template):
            body.append(re.escape(literal))
            if name is None:
                continue
            if name in known:
                value = formatter.convert_field(known[name], conversion)
                body.append(re.escape(formatter.format_field(value, spec or "")))
            else:
                body.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)")
                seen.add(name)
        if unknown := known.keys() - set(self.fields):
            raise TypeError(f"{self.name}: no field {sorted(unknown)}")
        head = re.escape(PREFIX) if prefixed and self.shown_as is Shown.ERROR else ""
        return re.compile(head + "".join(body), re.DOTALL)

    def parse(self, text: str, *, prefixed: bool = True) -> dict[str, str] | None:
        """The fields' text in ``text`` shown as this message, or None when it is another sentence."""
        found = self.pattern(prefixed=prefixed).fullmatch(text)
        return None if found is None else found.groupdict()

    def matches(self, text: str, *, prefixed: bool = True, **known: object) -> bool:
        """``text`` is this message as shown (``prefixed=False``: as rendered), whatever its fields hold
        but the ``known`` ones."""
        return self.pattern(prefixed=prefixed, **known).fullmatch(text) is not None

    def within(self, text: str, **known: object) -> bool:
        """This message (without its prefix) is somewhere in ``text``, its ``known`` fields as given."""
        return self.pattern(prefixed=False, **known).search(text) is not None


CATALOGUE: dict[str, Message] = {}


def _defined(name: str, template: str, shown_as: Shown, documented: bool) -> Message:
    if name in CATALOGUE:
        raise ValueError(f"two messages named {name}")
    message = Message(name, template, shown_as, documented)
    CATALOGUE[name] = message
    return message


def error(name: str, template: str, *, documented: bool = False) -> Message:
    """The one stderr line of a failure (after ``genai_magics: ``)."""
    return _defined(name, template, Shown.ERROR, documented)


def note(name: str, template: str, *, documented: bool = False) -> Message:
    """A line in the cell while the turn goes on."""
    return _defined(name, template, Shown.NOTE, documented)


def status(name: str, template: str, *, documented: bool = False) -> Message:
    """A proposal widget's status line."""
    return _defined(name, template, Shown.STATUS, documented)


def output(name: str, template: str, *, documented: bool = False) -> Message:
    """What a ``%gemini`` command prints, or a cell's answer in place of an empty one."""
    return _defined(name, template, Shown.OUTPUT, documented)


def footer(name: str, template: str) -> Message:
    """The line under a turn's answer (pieces joined by ``FOOTER_SEPARATOR``), or a dry run's cache plan."""
    return _defined(name, template, Shown.FOOTER, False)


def part(name: str, template: str, *, documented: bool = False) -> Message:
    """A clause that fills another message's field."""
    return _defined(name, template, Shown.PART, documented)


def tooltip(name: str, template: str) -> Message:
    """Text shown on hover."""
    return _defined(name, template, Shown.TOOLTIP, False)


# The footer's legend, a line each (ui/display.py, on hover; the README's legend says the same): every
# word the footer shows (tests/kernel/test_footer_words.py holds it to that).
FOOTER_LEGEND_MODE = tooltip(
    "FOOTER_LEGEND_MODE",
    "turn N: the conversation's turn; ask / edit / agent: the magic (%%gemini_ask, %%gemini_edit, "
    "%%gemini_agent); contents / interactions: where the conversation lives "
    "(contents: this kernel keeps it and sends it with every turn; interactions: Gemini's server keeps it)",
)
FOOTER_LEGEND_TOKENS = tooltip(
    "FOOTER_LEGEND_TOKENS",
    "in … tok: the input tokens the model read (cached: how many of them a cache served, at the cached price; "
    "written to the cache: tokens put into a new context cache); out: output tokens (thinking: of them, "
    "the model's thinking); ~$: the estimate at the model's table prices; saved vs resending / more than "
    "resending: against sending the same input with no cache",
)
FOOTER_LEGEND_REQUEST = tooltip(
    "FOOTER_LEGEND_REQUEST",
    "request … B: the bytes this turn uploaded (N requests: a turn whose function calls took several); "
    "what a context cache or the server already holds is not uploaded again, so a cell of 71 kB the "
    "cache holds adds nothing here while 'in' still counts its tokens; function call(s): what the model "
    "read from the notebook itself, a line each in the cell",
)
FOOTER_LEGEND_SENT = tooltip(
    "FOOTER_LEGEND_SENT",
    "sent (N chars): went with this turn (the code cell, changed by hand: a patch of your edit, the other "
    "cells, a cell's output or image by the image rule, a variable, the last error); not re-sent "
    "(unchanged; the code cell: the model holds it): the model holds it from an earlier turn and it did not "
    "change, so this turn did not add it again (in contents mode the transcript that holds it still goes "
    "with the request: 'in' stays large, the cache makes it cheap)",
)
FOOTER_LEGEND_SAVED = tooltip("FOOTER_LEGEND_SAVED", "~N tokens saved: what adding those pieces again would have cost")

# The footer under a turn's answer (ui/report.py): its head, then pieces joined by FOOTER_SEPARATOR.
FOOTER_SEPARATOR = " · "
FOOTER_TURN = footer("FOOTER_TURN", "turn {turn} · {mode} · {state} · {model}")
BILL_IN = part("BILL_IN", "in {tokens} tok{cached}")
BILL_CACHED = part("BILL_CACHED", " ({tokens:,} cached)")
BILL_OUT = part("BILL_OUT", "out {tokens}{thinking}")
BILL_THINKING = part("BILL_THINKING", " (+{tokens:,} thinking)")
BILL_WRITTEN = part("BILL_WRITTEN", "{tokens:,} tok written to the cache")
BILL_SAVED = part("BILL_SAVED", "{usd} saved vs resending")
BILL_MORE = part("BILL_MORE", "{usd} more than resending (a new cache)")
FOOTER_REQUEST = part("FOOTER_REQUEST", "request {size:,} B")
FOOTER_REQUESTS = part("FOOTER_REQUESTS", "{count} requests, {size:,} B")
FOOTER_CALLS = part("FOOTER_CALLS", "{count} function call(s)")
FOOTER_SEARCHES = part("FOOTER_SEARCHES", "{count} web search(es)")
DOCUMENT_SYNCHRONIZED = part("DOCUMENT_SYNCHRONIZED", "{label} not re-sent: the model holds it")
DOCUMENT_PATCHED = part("DOCUMENT_PATCHED", "{label} changed by hand: sent as a patch ({chars:,} chars)")
DOCUMENT_SENT = part("DOCUMENT_SENT", "{label} sent ({chars:,} chars)")
DOCUMENT_CACHED = part("DOCUMENT_CACHED", "{label} sent into the context cache ({chars:,} chars)")
PIECE_UNCHANGED = part("PIECE_UNCHANGED", "{name} not re-sent: unchanged")
PIECE_SENT = part("PIECE_SENT", "{name} sent")
IMAGE_SENT = part("IMAGE_SENT", "{name} sent (~{tokens:,} tok by the image rule)")
TOKENS_SAVED = part("TOKENS_SAVED", "~{tokens:,} tokens saved")
# the footer's names of what went with a turn, in plain words (not the payload's field names)
PIECE_OTHER_CELLS = part("PIECE_OTHER_CELLS", "other cells")
PIECE_LAST_ERROR = part("PIECE_LAST_ERROR", "last error")
PIECE_VARIABLE = part("PIECE_VARIABLE", "variable {name}")
SEARCH_WITHOUT_FUNCTIONS = note(
    "SEARCH_WITHOUT_FUNCTIONS",
    "{model} takes Google Search or functions in one request, not both: this turn searches and calls no function",
)
SEARCH_NO_AGENT = error(
    "SEARCH_NO_AGENT",
    "%%gemini_agent --search needs a model that takes Google Search beside functions (the Gemini 3 models); "
    "{model} does not",
)
# A grounded answer's sources (engine/grounding.py), shown under it, live and replayed.
GROUNDING_SOURCES = output("GROUNDING_SOURCES", "**Sources** ({searches} web search(es)):")
# The notebook's rules (engine/rules.py): the footer's part, and the line that ends a file cut at the cap.
RULES_HELD = part("RULES_HELD", "rules: {names} not re-sent")
RULES_SENT = part("RULES_SENT", "rules: {names} sent")
RULES_CHANGED = part("RULES_CHANGED", "rules: {names} sent again (changed), {held} not re-sent")
RULES_FILES = part("RULES_FILES", "{name} ({count} files)")
RULES_NOTEBOOK = part("RULES_NOTEBOOK", "the notebook's")
RULES_CUT = part(
    "RULES_CUT", "[rules cut: {name} is {chars:,} chars, the rules cap (GeminiMagics.max_rules_chars) {cap:,}]"
)
# A turn replayed from the record (ui/report.py): its footer, and its proposal's status line.
REPLAYED_FOOTER = footer("REPLAYED_FOOTER", "replayed turn {turn} ({when}) · 0 tokens · --rerun asks again")
REPLAYED_PROPOSAL = status("REPLAYED_PROPOSAL", "Replayed from the record: {outcome} in an earlier session{now}.")
REPLAYED_NOT_ACTED = part("REPLAYED_NOT_ACTED", "not acted on")
REPLAYED_APPLIED = part("REPLAYED_APPLIED", "applied")
REPLAYED_DISCARDED = part("REPLAYED_DISCARDED", "discarded")
REPLAYED_UNDONE = part("REPLAYED_UNDONE", "applied, then undone")
REPLAYED_HOLDS_PROPOSAL = part("REPLAYED_HOLDS_PROPOSAL", "; {where} holds the proposal now")
REPLAYED_HOLDS_BEFORE = part("REPLAYED_HOLDS_BEFORE", "; {where} holds the code from before the proposal")
REPLAYED_CHANGED = part("REPLAYED_CHANGED", "; {where} has changed since")
# The explicit cache (gemini/caching.py): the dry run's cache plan, and the decision's reason it ends with.
CACHE_PLAN_USE = footer("CACHE_PLAN_USE", "cache plan: use {name}: {reason}{refresh}")
CACHE_PLAN_REFRESH = part("CACHE_PLAN_REFRESH", "; its TTL is extended to {ttl_s:g} s first")
CACHE_PLAN_CREATE = footer(
    "CACHE_PLAN_CREATE",
    "cache plan: create a context cache (system instruction + {contents} content(s), TTL {ttl_s:g} s) "
    "and reference it{replaced}: {reason}",
)
CACHE_PLAN_REPLACED = part("CACHE_PLAN_REPLACED", ", then delete {name}")
CACHE_PLAN_DROP = footer("CACHE_PLAN_DROP", "cache plan: delete {name} and send without a cache: {reason}")
CACHE_PLAN_NONE = footer("CACHE_PLAN_NONE", "cache plan: none: {reason}")
CACHE_OFF = part("CACHE_OFF", "caching is off (GeminiMagics.cache)")
CACHE_INTERACTIONS = part("CACHE_INTERACTIONS", "interactions mode makes no explicit cache")
CACHE_IMPLICIT_ONLY = part(
    "CACHE_IMPLICIT_ONLY", "{model} has no explicit context caches (implicit caching only): not cached"
)
CACHE_NO_PRICE = part("CACHE_NO_PRICE", "no price known for {model}, so no cache minimum either: not cached")
CACHE_UNDER_MINIMUM = part(
    "CACHE_UNDER_MINIMUM", "the stable head is ~{tokens:,} tokens, under {model}'s cache minimum of {minimum:,}"
)
CACHE_UNCHANGED = part("CACHE_UNCHANGED", "the cached head (~{tokens:,} tokens) is unchanged")
CACHE_NOT_WORTH = part(
    "CACHE_NOT_WORTH",
    "a cache of ~{tokens:,} tokens would not pay off at {model}'s prices within a TTL of {ttl_s:g} s",
)
CACHE_IMPLICIT_SERVES = part(
    "CACHE_IMPLICIT_SERVES",
    "implicit caching served {share:.0%} of what the last turn read beyond any explicit cache: "
    "an explicit cache of ~{tokens:,} tokens would cost more than it saves",
)
CACHE_REPLACE = part("CACHE_REPLACE", "replace the cache: the head changed (~{tokens:,} tokens)")
CACHE_HEAD = part("CACHE_HEAD", "cache the stable head (~{tokens:,} tokens)")
CACHE_HEAD_PADDED = part(
    "CACHE_HEAD_PADDED",
    "cache the stable head (~{tokens:,} tokens) filled up to the model's cache minimum with ~{pad:,} tokens "
    "of filler: cheaper than reading it at the input price",
)

# API failures (gemini/errors.py): what happened and what to do.
KEY_REJECTED = error(
    "KEY_REJECTED",
    "API key rejected ({code}): set GEMINI_API_KEY (or GOOGLE_API_KEY) to a valid key. {detail}",
    documented=True,
)
REQUEST_REJECTED = error(
    "REQUEST_REJECTED",
    "Gemini rejected the request (400): {detail} - check the prompt and --model; --dry-run shows the request",
    documented=True,
)
INPUT_LIMIT = error(
    "INPUT_LIMIT",
    "the request passes the model's input limit ({limit:,} tokens) even compacted: "
    "start a new conversation with --new, or %gemini reset",
    documented=True,
)
NOT_FOUND = error(
    "NOT_FOUND", "not found (404): check the model name (%config GeminiMagics.model). {detail}", documented=True
)
RATE_LIMITED = error(
    "RATE_LIMITED",
    "rate limited (429) after {attempts} attempt(s); wait a minute and run the cell again.",
    documented=True,
)
SERVER_ERROR = error(
    "SERVER_ERROR",
    "Gemini server error ({code}) after {attempts} attempt(s); run the cell again later.",
    documented=True,
)
TIMED_OUT = error(
    "TIMED_OUT",
    "no answer within {timeout_s:g} s (each of {attempts} attempt(s)); "
    "raise %config GeminiMagics.timeout or try again.",
    documented=True,
)
STREAM_CUT = error(
    "STREAM_CUT", "the answer stream was cut off before it finished; run the cell again.", documented=True
)
UNREACHABLE = error(
    "UNREACHABLE", "cannot reach Gemini ({error}); check the network or GOOGLE_GEMINI_BASE_URL.", documented=True
)
OTHER_STATUS = error("OTHER_STATUS", "Gemini answered {code}: {detail}")
OTHER_FAILURE = error("OTHER_FAILURE", "{kind}: {detail}")

# GeminiMagics.prices (gemini/pricing.py): checked when set (%config shows the line) and at the turn.
PRICE_FIELDS_UNKNOWN = error(
    "PRICE_FIELDS_UNKNOWN", "GeminiMagics.prices[{model!r}]: unknown field(s) {unknown}; use {known}", documented=True
)
PRICE_FIELDS_MISSING = error(
    "PRICE_FIELDS_MISSING",
    "GeminiMagics.prices[{model!r}]: a model (or a day) the table has no price for needs {missing} too",
    documented=True,
)
PRICE_ENTRY_BAD = error(
    "PRICE_ENTRY_BAD", "GeminiMagics.prices[{model!r}]: a price is a dict of fields (or a list of them), not {kind}"
)
PRICE_MODEL_BAD = error("PRICE_MODEL_BAD", "GeminiMagics.prices: a key is a model's name, not {key!r}")
PRICE_VALUE_BAD = error("PRICE_VALUE_BAD", "GeminiMagics.prices[{model!r}]: {fields} must be numbers >= 0")
PRICE_DATE_BAD = error(
    "PRICE_DATE_BAD", "GeminiMagics.prices[{model!r}]: {key!r} must be a day as YYYY-MM-DD, not {value!r}"
)
PRICE_PERIOD_EMPTY = error(
    "PRICE_PERIOD_EMPTY", "GeminiMagics.prices[{model!r}]: the period from {start} until {end} has no day"
)
PRICE_PERIODS_OVERLAP = error(
    "PRICE_PERIODS_OVERLAP",
    "GeminiMagics.prices[{model!r}]: the period {first} overlaps the period {second}; a day has one price",
    documented=True,
)
NO_PRICE_KNOWN = error(
    "NO_PRICE_KNOWN",
    "no price known for {model!r} (its turns show tokens only); %config GeminiMagics.prices adds one",
    documented=True,
)

# The budget (gemini/budget.py): a request whose estimate would pass a cap is not sent.
BUDGET_NO_SEARCH_PRICE = error(
    "BUDGET_NO_SEARCH_PRICE",
    "not sent: {name} is set and no price per Google Search query is known for {model}, so what --search "
    "costs cannot be estimated; %config GeminiMagics.prices adds search_query, or ask without --search",
    documented=True,
)
BUDGET_NO_PRICE = error(
    "BUDGET_NO_PRICE",
    "not sent: {name} is set and no price is known for {model}, so its cost cannot be estimated; "
    "%config GeminiMagics.prices adds one, or set {name} = None",
    documented=True,
)
CAP_BAD = error(
    "CAP_BAD", "GeminiMagics.{name} is US$ (a number >= 0) or None for no cap, not {value!r}", documented=True
)
BUDGET_REFUSED = error("BUDGET_REFUSED", "~${estimate} estimated > {name} ${cap}; nothing was sent", documented=True)
BUDGET_STOPPED = error(
    "BUDGET_STOPPED",
    "~${estimate} estimated with this turn's earlier requests > {name} ${cap}; the turn stopped "
    "before its next request (the earlier ones were sent and billed)",
    documented=True,
)
LIMIT_ANSWER_NOW = note(
    "LIMIT_ANSWER_NOW",
    "the function results would take the request past the model's input limit ({limit:,} tokens): "
    "they are left out, and the model is asked to answer without functions",
    documented=True,
)
BUDGET_ANSWER_NOW = note(
    "BUDGET_ANSWER_NOW",
    "~${estimate} estimated with the request answering the model's calls > {name} ${cap}; "
    "the model is asked to answer without functions",
    documented=True,
)

# Retries the SDK makes (gemini/transport.py), announced while it waits.
RETRYING = note("RETRYING", "{why}; retrying in ~{wait} s ({attempt}/{attempts})", documented=True)
NO_ANSWER_WITHIN = part("NO_ANSWER_WITHIN", "no answer within {timeout_s:g} s", documented=True)
CANNOT_REACH = part("CANNOT_REACH", "cannot reach Gemini ({error})", documented=True)
RATE_LIMITED_NOW = part("RATE_LIMITED_NOW", "rate limited ({code})", documented=True)
SERVER_ERROR_NOW = part("SERVER_ERROR_NOW", "Gemini server error ({code})", documented=True)

# The explicit context cache (gemini/caching.py).
CACHE_GONE = note(
    "CACHE_GONE", "the context cache expired or was deleted on the server; creating it again once", documented=True
)
CACHE_NOT_MADE = note(
    "CACHE_NOT_MADE", "could not create a context cache ({why}); sending without one", documented=True
)

# The notebook's record (persistence/).
RECORD_LEFT_UNTOUCHED = error(
    "RECORD_LEFT_UNTOUCHED",
    "the conversation record {path} is {why}; left untouched: this kernel keeps its conversations in memory only "
    "(%config GeminiMagics.record_location names another file)",
    documented=True,
)
RECORD_SET_ASIDE = error(
    "RECORD_SET_ASIDE", "the conversation record {path} is {why}; set aside as {aside}, starting fresh", documented=True
)
RECORD_FOLLOWED = error(
    "RECORD_FOLLOWED", "the notebook is now {path}: its conversation record followed it{aside}", documented=True
)
RECORD_FOLLOWED_ASIDE = part(
    "RECORD_FOLLOWED_ASIDE", " (the record of an earlier notebook of that name is set aside as {aside})"
)
RECORD_COPY = error(
    "RECORD_COPY",
    "{path} is a copy of {original} (saved as, or duplicated): {original} keeps its conversation record, "
    "and this notebook's own record starts with this kernel's conversations",
    documented=True,
)
RECORD_WRONG_SHAPE = part("RECORD_WRONG_SHAPE", "of the wrong shape ({where})", documented=True)
RECORD_NOT_WRITTEN = error("RECORD_NOT_WRITTEN", "cannot write the conversation record {path}: {error}")
REPLAY_ONLY = error(
    "REPLAY_ONLY", "replay is 'only': {why}; nothing was sent (%config GeminiMagics.replay = 'auto' to ask Gemini)"
)
REPLAY_ONLY_RERUN = part("REPLAY_ONLY_RERUN", "--rerun asks Gemini")
REPLAY_ONLY_NO_MATCH = part("REPLAY_ONLY_NO_MATCH", "no recorded turn matches this cell (turn {position} of {name!r})")
RECORD_LOST = error(
    "RECORD_LOST",
    "another kernel wrote this notebook's conversation record ({path}) since this kernel read it; "
    "this kernel no longer saves its turns (restart it to continue from that record)",
)

# Context flags (sources/).
NO_EXCEPTION_YET = error(
    "NO_EXCEPTION_YET", "--error: no exception has been raised in this session yet", documented=True
)
NO_SUCH_VARIABLE = error("NO_SUCH_VARIABLE", "--vars: no variable named {name!r} in the notebook")
NOT_A_VARIABLE_NAME = error("NOT_A_VARIABLE_NAME", "--vars: {item!r} is not a variable name{hint}")
NO_ATTRIBUTES = part("NO_ATTRIBUTES", " (attributes such as obj.attr are not supported: name the object)")
NO_VARIABLE_NAMES = error("NO_VARIABLE_NAMES", "--vars: no variable names given (e.g. --vars df,model)")
IMAGE_DOWNSCALED = note(
    "IMAGE_DOWNSCALED",
    "{label}'s image {position} is {size:,} bytes, over max_image_bytes ({cap:,}): downscaled to "
    "{width}x{height} ({new_size:,} bytes) to send it",
    documented=True,
)
IMAGE_NEEDS_PILLOW = note(
    "IMAGE_NEEDS_PILLOW",
    "{label}'s image {position} is {size:,} bytes, over max_image_bytes ({cap:,}), and Pillow is not installed "
    "to downscale it: not sent (pip install pillow, or raise %config GeminiMagics.max_image_bytes)",
    documented=True,
)
IMAGE_NOT_WHAT_IT_SAYS = note(
    "IMAGE_NOT_WHAT_IT_SAYS",
    "{label}'s image {position} is labelled {mime_type}, but its bytes are not such an image (an HTML page "
    "saved as a chart, say): not sent",
    documented=True,
)

# --notebook's file (frontends/notebook_view.py); the turn says "--notebook: " before it.
NOTEBOOK_FLAG = error("NOTEBOOK_FLAG", "--notebook: {why}", documented=True)
NO_NOTEBOOK_KNOWN = part(
    "NO_NOTEBOOK_KNOWN",
    "no notebook file is known to this kernel and no live notebook view is connected",
    documented=True,
)
NOTEBOOK_NOT_FOUND = part("NOTEBOOK_NOT_FOUND", "notebook file not found: {path}", documented=True)
NOTEBOOK_UNREADABLE = part("NOTEBOOK_UNREADABLE", "cannot read notebook {name}: {error}", documented=True)
NOTEBOOK_NOT_V4 = part("NOTEBOOK_NOT_V4", "{name} is nbformat {version}, not 4", documented=True)

# Writes into cells (frontends/): why one did not happen.
COMPANION_NOT_CONNECTED = part(
    "COMPANION_NOT_CONNECTED", "the VS Code companion is not connected (is the notebook still open?)", documented=True
)
BRIDGE_NOT_CONNECTED = part(
    "BRIDGE_NOT_CONNECTED",
    "no live notebook frontend is connected (the genai-magics-bridge JupyterLab extension has not answered "
    "in this kernel)",
)
BRIDGE_CLOSED = part("BRIDGE_CLOSED", "the bridge was closed")
NOTEBOOK_CLOSED = part("NOTEBOOK_CLOSED", "the notebook was closed (the frontend closed the bridge)")
BRIDGE_SEND_FAILED = part("BRIDGE_SEND_FAILED", "could not send the request to the notebook frontend (comm closed)")
FRONTEND_REFUSED = part("FRONTEND_REFUSED", "the notebook frontend refused the edit")
FRONTEND_NO_REPLY = part(
    "FRONTEND_NO_REPLY",
    "no reply from the notebook frontend within {timeout:g} s ({op}); is the notebook still open in JupyterLab?",
)
COMPANION_UNWRITABLE = part("COMPANION_UNWRITABLE", "could not write to the VS Code companion ({error})")
COMPANION_CONFUSED = part("COMPANION_CONFUSED", "the VS Code companion answered something else")
COMPANION_REFUSED = part("COMPANION_REFUSED", "the VS Code companion refused the edit")
COMPANION_NO_REPLY = part(
    "COMPANION_NO_REPLY", "no reply from the VS Code companion within {timeout:g} s ({op})", documented=True
)
EDITED_BEFORE_RERUN = part(
    "EDITED_BEFORE_RERUN",
    "the magic cell was edited before it ran again, so it ran as written; "
    "click Apply again to stage the proposal for its next run",
    documented=True,
)
LIVE_APPLY = status(
    "LIVE_APPLY", "Apply writes the proposal into the cell in the notebook (one Ctrl+Z step undoes it there)."
)
COMPANION_APPLY = status(
    "COMPANION_APPLY",
    "Apply writes the proposal into the cell it is about, in VS Code (genai-magics companion; "
    "Ctrl+Z in that cell undoes it there).",
)
NOTEBOOK_EDITS_APPLY = status(
    "NOTEBOOK_EDITS_APPLY", "Apply makes these cell edits in the notebook: {preview}. Undo reverts all of them."
)
KERNEL_STATE_APPLY = status(
    "KERNEL_STATE_APPLY",
    "Apply records the proposal as this cell's code for the conversation; "
    "this frontend cannot edit cells, so paste it into the cell yourself (Copy).",
)
KERNEL_STATE_DONE = status(
    "KERNEL_STATE_DONE",
    "{verb} for the conversation: paste {what} into {label} yourself (this frontend cannot edit cells).",
)
NOTEBOOK_RECORD_ONLY_APPLY = status(
    "NOTEBOOK_RECORD_ONLY_APPLY",
    "Apply only records the proposal for the conversation: this frontend cannot edit other cells, "
    "so nothing is written into any cell; copy each changed cell from the diff (or Copy) yourself.",
)
PREFILLED_APPLY = status(
    "PREFILLED_APPLY",
    "The proposal is pre-filled at the next prompt: run it there. "
    "%gemini apply / discard / undo record what you did with it.",
)
PREFILLED_APPLIED = status(
    "PREFILLED_APPLIED", "Applied for the conversation: the model holds the proposal (pre-filled at the prompt)."
)
PREFILLED_UNDONE = status(
    "PREFILLED_UNDONE", "{verb} for the conversation: the model holds {what} again; run that code to get it back."
)
RUNNING_CELL_APPLY = status(
    "RUNNING_CELL_APPLY",
    "Apply replaces this magic cell with the proposal (your instruction kept as its first comment line); "
    "that cell then is the conversation's code. This cell waits up to {timeout_s:g} s for Apply or Discard.",
)
STAGED_APPLY = status(
    "STAGED_APPLY", "Apply is staged: run this cell again and it is replaced by the proposal (no new request is sent)."
)
STAGED = status("STAGED", "Apply staged: run this cell again (Shift+Enter) to write the proposal into it.")
LIVE_DONE = status(
    "LIVE_DONE",
    "{verb}: {what} is now in {label} (Ctrl+Z in the cell reverts it too).{run}",
)
# whether the kernel ran what was just written: said only when it is so
RUN_IT = part("RUN_IT", " Run it: the kernel still has the code it ran last.")
RAN_ALREADY = part("RAN_ALREADY", " The kernel ran this code last: nothing to run again.")
# a line command whose write the frontend answers after the command's cell: shown until the outcome replaces it
WRITING = output("WRITING", "{action}: writing into {label}…")
RUNNING_CELL_APPLIED = status(
    "RUNNING_CELL_APPLIED",
    "Applied: this cell is replaced by the proposal (your instruction kept as its first line). "
    "Run it: the kernel still has the code it ran last.",
)
RUNNING_CELL_UNDONE = status(
    "RUNNING_CELL_UNDONE",
    "{verb} for the conversation: {label} still holds the code from before; this cell keeps the applied code.",
    documented=True,
)

# A proposal's buttons (ui/proposal.py, engine/conversation.py): the status line says why nothing changed.
REFUSED = status("REFUSED", "{action}: {reason}.", documented=True)
RESET_SINCE = part(
    "RESET_SINCE", "this proposal belongs to a conversation that was reset; nothing changed", documented=True
)
DISCARDED_SINCE = part("DISCARDED_SINCE", "this proposal was discarded", documented=True)
NEWER_APPLIED = part("NEWER_APPLIED", "a newer proposal (turn {turn}) was applied; this one is stale", documented=True)
NO_PROPOSAL_IN_TURN = part("NO_PROPOSAL_IN_TURN", "this turn has no proposal")
ALREADY_APPLIED = part("ALREADY_APPLIED", "already applied")
NOTHING_TO_DISCARD = part("NOTHING_TO_DISCARD", "nothing to discard: the proposal is {outcome}")
NOTHING_TO_UNDO = part("NOTHING_TO_UNDO", "nothing to undo: the proposal is {outcome}")
UNDO_LATER_FIRST = part("UNDO_LATER_FIRST", "undo turn {turn} first: it was applied after this one")
CELL_GONE = status(
    "CELL_GONE",
    "{action} not done: the cell this proposal is for is no longer in the notebook (deleted?). Nothing changed.",
)
CHANGED_SINCE = status(
    "CHANGED_SINCE",
    "{action} not done: {what} changed since this proposal was made. Use '{verb} anyway' to overwrite it.",
    documented=True,
)
WRITE_FAILED = status("WRITE_FAILED", "{action} failed: {error}. Nothing changed.", documented=True)
NO_CHANGE = status("NO_CHANGE", "No change: the proposal is the same as the current code; there is nothing to apply.")
DISCARDED = status("DISCARDED", "Discarded: the cell keeps its code; the model is told it was discarded.")
# The last line of a widget's saved text (ui/widgets.py's widget_bundle): what a reopened notebook shows
# where the widget's model is gone (JupyterLab and Notebook 7 through the extension, VS Code, GitHub).
SAVED_VIEW = status(
    "SAVED_VIEW",
    "Saved view: the buttons come back when this cell runs.",
    documented=True,
)
KERNEL_GONE = status(
    "KERNEL_GONE",
    "The kernel {what}: these buttons no longer work. Run the magic cell again (with the notebook's record, "
    "its recorded turn comes back without a new request).",
    documented=True,
)
DIFF_TOO_LARGE = status(
    "DIFF_TOO_LARGE",
    "(the diff is too large to show here: {added:,} lines added, {removed:,} removed, {chars:,} characters, "
    "over the {cap:,}-byte display cap; Copy shows the proposal as text)",
    documented=True,
)

# The cell's answer and the dry run (ui/display.py).
ANSWER_CUT = note(
    "ANSWER_CUT", "… (cut here: {more:,} more characters not shown; the whole answer is kept in the conversation)"
)
ANSWER_CUT_TERMINAL = note(
    "ANSWER_CUT_TERMINAL", "… (cut here: the rest is not shown; the whole answer is kept in the conversation)"
)
DRY_RUN = note("DRY_RUN", "dry run ({state}): this request would be sent; nothing was sent and no state changed")

# The model's edit answer (edit_answer.py).
EDIT_NOT_JSON = error(
    "EDIT_NOT_JSON",
    "the model's edit answer was not valid JSON, so there is no proposal; nothing was recorded - run the cell again",
    documented=True,
)
EDIT_EMPTY = error(
    "EDIT_EMPTY",
    "the model's edit answer had neither proposedSource nor valid edits; nothing was recorded - run the cell again",
)
EDITS_ASKED_AGAIN = note(
    "EDITS_ASKED_AGAIN", "the model's edits did not apply ({why}); asking once more for the whole text", documented=True
)
EDITS_AGAIN = error(
    "EDITS_AGAIN",
    "the model's edits did not apply ({why}), and its second answer was edits again; "
    "nothing was recorded - run the cell again",
    documented=True,
)

# %gemini subcommands (kernel/line_commands.py) and what they print.
NO_CONVERSATION_YET = output("NO_CONVERSATION_YET", "no conversation yet")
RESET_DONE = output("RESET_DONE", "reset: {names}")
NOTHING_TO_RESET = output("NOTHING_TO_RESET", "nothing to reset")
FORGOTTEN = output("FORGOTTEN", "forgotten: {names}")
NOTHING_TO_FORGET = output("NOTHING_TO_FORGET", "nothing to forget")
MODEL_IS = output("MODEL_IS", "model: {model}")
MODELS_LEGEND = output(
    "MODELS_LEGEND",
    "* the default model (%gemini model NAME changes it) · $ a price is known (%gemini prices); the others show "
    "tokens only, and a cost cap refuses them",
)
MODELS_IMPLICIT_ONLY = part("MODELS_IMPLICIT_ONLY", "; implicit caching only (no explicit cache)")
MODELS_INPUT_LIMIT = part("MODELS_INPUT_LIMIT", "; reads up to {tokens:,} tokens")
MODEL_UNPRICED = note(
    "MODEL_UNPRICED",
    "no price known for {model}: its turns show tokens only, and a cost cap refuses it rather than guess "
    "(%config GeminiMagics.prices adds one)",
)
STATE_IS = output("STATE_IS", "default state mode: {state}")
DEBUG_IS = output("DEBUG_IS", "debug: {on}")
FRONTEND_IS = output("FRONTEND_IS", "frontend: {kind}")
# The notebook's rules as %gemini status and %gemini rules show them (kernel/line_commands.py).
RULES_OFF = output("RULES_OFF", "rules: off (GeminiMagics.rules)")
RULES_NONE = output("RULES_NONE", "rules: none ({file} from {folder} up to the project root; the notebook's: none)")
RULES_READ = output("RULES_READ", "rules: {names}, sent once per conversation: {where}")
RULES_OWN = output("RULES_OWN", "the notebook's rules ({chars:,} chars):\n{text}")
RULES_WRITTEN = output(
    "RULES_WRITTEN",
    "the notebook's rules {done} in the metadata of {path}: reload the notebook from disk in your editor "
    "before you save it there, or its copy overwrites them",
)
RULES_SET_DONE = part("RULES_SET_DONE", "set")
RULES_CLEARED = part("RULES_CLEARED", "cleared")
RULES_NO_NOTEBOOK = error(
    "RULES_NO_NOTEBOOK",
    "the notebook's rules live in its file, and this kernel does not know it: put them in AGENTS.md",
)
# The frontend kinds (frontends/frontend.py's Kind), as %gemini status names them.
FRONTEND_LIVE = part("FRONTEND_LIVE", "live notebook (bridge)")
FRONTEND_COMPANION = part(
    "FRONTEND_COMPANION", "VS Code with the genai-magics companion: Apply writes the cell the conversation is about"
)
FRONTEND_RUNNING_CELL = part("FRONTEND_RUNNING_CELL", "VS Code: Apply replaces the running magic cell")
FRONTEND_STAGED = part("FRONTEND_STAGED", "VS Code: Apply is staged for the next run of the magic cell")
FRONTEND_COPY = part("FRONTEND_COPY", "copy only: Apply is recorded for the conversation")
FRONTEND_TERMINAL = part("FRONTEND_TERMINAL", "terminal: the proposal is pre-filled at the next prompt")
NO_CHOICE_STAGED = status(
    "NO_CHOICE_STAGED",
    "No choice within {timeout_s:g} s; the cell is released. Apply is now staged: click it, then run this cell again.",
)
# %gemini cost (ui/report.py) and %gemini prices (gemini/pricing.py).
COST_THIS_SESSION = output("COST_THIS_SESSION", "this session: {cost} over {turns} turn(s){unpriced}{failed}")
COST_BEFORE = output(
    "COST_BEFORE",
    "before the last restart (the notebook's record): {cost} over {turns} turn(s){unpriced}{failed}",
)
COST_UNPRICED = part("COST_UNPRICED", ", {count} of them tokens only")
COST_FAILED = part("COST_FAILED", "; {count} of them failed after Gemini billed their requests{estimated}")
COST_ESTIMATED = part("COST_ESTIMATED", " ({count} estimated: an answer broke off before Gemini reported its usage)")
COST_ROW = output("COST_ROW", "  conversation {name!r} · {model}: {turns} turn(s), {tokens:,} tokens{searches}, {cost}")
COST_SEARCHES = part("COST_SEARCHES", ", {count} web search(es) (in the cost)")
COST_TOKENS_ONLY = part("COST_TOKENS_ONLY", "tokens only (no price known)")
NO_PRICES = output("NO_PRICES", "no prices known")
PRICES_LEGEND = output(
    "PRICES_LEGEND",
    "* in force today ({today}, Google's billing day: US Pacific time)\n"
    "  US$ per 1M tokens (storage: per 1M tokens an hour), standard tier",
)
PRICES_LONG_PROMPT = output("PRICES_LONG_PROMPT", "  prompt over {tokens}")
PRICES_SOURCES = output("PRICES_SOURCES", "sources:")
PRICES_DAY_SOURCE = output("PRICES_DAY_SOURCE", "the price day: {source}")
PRICES_NOTE_GOOGLE = output("PRICES_NOTE_GOOGLE", "Google's Gemini API pricing page, {page}")
PRICES_NOTE_ELSEWHERE = output(
    "PRICES_NOTE_ELSEWHERE",
    "not on Google's pricing page when these prices were taken ({day}): from Google's model pages, model "
    "announcements and price trackers (genai_magics/gemini/pricing.py names each); "
    "%config GeminiMagics.prices sets your own",
)
PRICES_NOTE_YOURS = output("PRICES_NOTE_YOURS", "yours: %config GeminiMagics.prices")
# The live notebooks' lines in %gemini status (frontends/bridge.py, frontends/companion.py).
BRIDGE_OFF = output("BRIDGE_OFF", "live bridge: off (not in a kernel, or closed)")
BRIDGE_UNANSWERED = output(
    "BRIDGE_UNANSWERED",
    "live bridge: not connected: no notebook has answered (the genai-magics-bridge "
    "JupyterLab / Notebook 7 extension is not active in this frontend)",
)
BRIDGE_COMING = output(
    "BRIDGE_COMING",
    "live bridge: connecting: this notebook's extension answers once the cells queued before it have run "
    "(Restart & Run All); Apply, Undo and %gemini apply wait for it",
)
BRIDGE_CONNECTED = output("BRIDGE_CONNECTED", "live bridge: {cells} cells of {path}, snapshot #{seq}")
COMPANION_NOT_IN_VSCODE = output(
    "COMPANION_NOT_IN_VSCODE", "VS Code companion: not in VS Code (no vscode-notebook-cell: cell has run)"
)
COMPANION_ABSENT = output(
    "COMPANION_ABSENT",
    "VS Code companion: not connected (no genai-magics companion has this notebook open; "
    "Apply then replaces the running magic cell); install it: {install}",
)
COMPANION_CONNECTED = output(
    "COMPANION_CONNECTED", "VS Code companion: connected (genai-magics-companion {version}, VS Code pid {pid})"
)
# The record's lines in %gemini status (persistence/keeper.py).
RECORD_OFF = output("RECORD_OFF", "record: off (GeminiMagics.persist is off)")
RECORD_NONE = output(
    "RECORD_NONE",
    "record: none (the notebook's path is unknown: %config GeminiMagics.record_location = "
    "'/path/record.json' keeps one anyway)",
)
RECORD_AT = output("RECORD_AT", "record of {notebook}: {path} · replay {mode}{more}")
RECORD_NO_NOTEBOOK = part("RECORD_NO_NOTEBOOK", "no notebook (a file named by GeminiMagics.record_location)")
RECORD_READ_ONLY = part(
    "RECORD_READ_ONLY", " · left untouched (not a record this kernel may write): conversations in memory only"
)
RECORD_NOT_READ = part("RECORD_NOT_READ", " · not read yet")
RECORD_RESTORED = output(
    "RECORD_RESTORED",
    "conversation {name!r} restored from the record: {loaded} recorded turn(s), {replayed} replayed{live}",
)
RECORD_LIVE_FROM = part("RECORD_LIVE_FROM", ", live from turn {turn}")
RECORD_LIVE_AFTER = part("RECORD_LIVE_AFTER", ", live after turn {turn} (every recorded turn kept)")
NO_PROPOSAL = error("NO_PROPOSAL", "no proposal to act on in this conversation", documented=True)
STATE_CHOICES = error("STATE_CHOICES", "state must be one of {choices}", documented=True)

# Cell outputs sent as context (engine/outputs.py).
OUTPUT_CUT = part("OUTPUT_CUT", "[cut at {cap:,} characters: max_output_chars]", documented=True)
WIDGET_NOT_SENT = part("WIDGET_NOT_SENT", "[a widget, not sent: {text}]", documented=True)
OUTPUT_NOT_SENT = part("OUTPUT_NOT_SENT", "[a {kind} output, not sent]")

# A turn (turn/pipeline.py, kernel/magics.py): refused before anything is sent, or failed with nothing recorded.
PROPOSAL_BELOW = output("PROPOSAL_BELOW", "_(proposal below)_")
EMPTY_ANSWER = output("EMPTY_ANSWER", "_(empty answer)_")
NOT_RECORDED = note("NOT_RECORDED", "the answer is kept in this kernel but not in the record ({error})")
BILL_NOT_RECORDED = note(
    "BILL_NOT_RECORDED", "what this turn was billed is counted in this kernel but not in the record ({error})"
)
RECORD_UNUSABLE = error("RECORD_UNUSABLE", "conversation record: {error}")
MAGIC_IN_AGENT_RUN = error(
    "MAGIC_IN_AGENT_RUN",
    "%{magic} does not run inside a cell the agent runs: nothing was asked, changed or recorded; run it yourself",
    documented=True,
)
USAGE = error("USAGE", "{error} (see %{magic}?)", documented=True)  # magic: "%gemini_ask", "gemini"
PROMPT_OVER_CAP = error(
    "PROMPT_OVER_CAP",
    "the prompt is {size:,} bytes, over the cap of {cap:,}; nothing was sent "
    "(%config GeminiMagics.max_prompt_bytes; put big text in a cell and use --cell or --vars)",
)
PROMPT_EMPTY = error(
    "PROMPT_EMPTY", "the prompt is empty: write your request in the cell body below the magic line", documented=True
)
NO_SUCH_CELL = error(
    "NO_SUCH_CELL",
    "{flag} {ref}: no such cell (use an execution count like 5 or In[5], a cell id, or -1)",
    documented=True,
)
NO_CELL_WITH_COUNT = error(
    "NO_CELL_WITH_COUNT", "{flag} {ref}: no cell with execution count {count} in this session", documented=True
)
NO_CELL_WITH_COUNT_OR_ID = error(
    "NO_CELL_WITH_COUNT_OR_ID",
    "{flag} {ref}: no cell with execution count {ref} in this session and no cell id starting with it",
    documented=True,
)
NO_CODE_CELL_RUN = error("NO_CODE_CELL_RUN", "{flag} -1: no code cell has been run yet")
AMBIGUOUS_COUNT_OR_ID = error(
    "AMBIGUOUS_COUNT_OR_ID",
    "{flag} {ref}: ambiguous, In[{ref}] ran in this session and cell {cell} has an id starting with {ref}; "
    "write In[{ref}] for the run, or more of the id",
)
AMBIGUOUS_ID = error("AMBIGUOUS_ID", "{flag} {ref}: ambiguous, {count} cells have ids starting with it")
NOTEBOOK_EMPTY = part("NOTEBOOK_EMPTY", "the notebook has no cells to work on")
MAGIC_AS_DOCUMENT = error("MAGIC_AS_DOCUMENT", "{named}: that is a genai magic cell, not code to work on")
VIEW_BEHIND = note(
    "VIEW_BEHIND",
    "the live notebook view has not caught up with this cell; "
    "using the kernel's record of executed cells for this turn",
)
STAGED_WRITTEN = note("STAGED_WRITTEN", "the staged proposal replaces this cell now; no request was sent.")
NOT_A_CODE_CELL = error(
    "NOT_A_CODE_CELL", "{named}: that is a {cell_type} cell; only code cells can be the document", documented=True
)
DOCUMENT_OVER_CAP = error(
    "DOCUMENT_OVER_CAP",
    "the document is {size:,} bytes, over the cap of {cap:,} (%config GeminiMagics.max_document_bytes)",
    documented=True,
)
DOCUMENT_NOT_TEXT = error(
    "DOCUMENT_NOT_TEXT",
    "{label} holds binary or undecodable text (at character {at}); nothing was sent - only text can be the document",
    documented=True,
)
FIELD_NOT_TEXT = error(
    "FIELD_NOT_TEXT",
    "the turn's {name} holds undecodable text (a lone surrogate, {char}, at character {at}); nothing was sent",
    documented=True,
)
NOTHING_TO_EDIT = error(
    "NOTHING_TO_EDIT", "nothing to edit yet: run a code cell first, or name one with --cell", documented=True
)
BAD_NAME = error(
    "BAD_NAME", "conversation name {name!r} is not allowed: use 1-64 letters, digits, '_', '-' or '.'", documented=True
)
NO_CONVERSATION = error("NO_CONVERSATION", "no conversation named {name!r}", documented=True)
NO_API_KEY = error(
    "NO_API_KEY",
    "no API key: set GEMINI_API_KEY (or GOOGLE_API_KEY), or use --dry-run to see the request",
    documented=True,
)
UNEXPECTED = error("UNEXPECTED", "unexpected {kind}: {error} (%gemini debug on shows the traceback)", documented=True)
STOPPED = error(
    "STOPPED",
    "stopped: the answer was interrupted; nothing was recorded and the conversation is as before",
    documented=True,
)
AGENT_STOPPED = error(
    "AGENT_STOPPED",
    "stopped: the agent's turn was interrupted; what it wrote stays in the notebook (its Undo below takes it "
    "back), and the conversation is as before this turn",
    documented=True,
)
MAGIC_IN_DOCUMENT = error(
    "MAGIC_IN_DOCUMENT",
    "{where} was this conversation's document and now {now}, so no cell has the code the model has: "
    "paste that code into a code cell and run it, or name the document with --cell",
    documented=True,
)
CHAIN_LOST = note(
    "CHAIN_LOST",
    "the server no longer holds this conversation; starting a new chain and sending the document, "
    "the context and a digest of the earlier turns once",
    documented=True,
)
COMPACTED = note(
    "COMPACTED",
    "the transcript would pass the model's input limit ({limit:,} tokens): turns {first}-{last} left out "
    "of the request; the record keeps every turn",
    documented=True,
)
CHAIN_OVER_LIMIT = note(
    "CHAIN_OVER_LIMIT",
    "the server chain would pass the model's input limit ({limit:,} tokens); starting a new chain with "
    "the document, the context and a digest of the earlier turns; the record keeps every turn",
    documented=True,
)
CHAIN_TOO_LONG = note(
    "CHAIN_TOO_LONG",
    "the server chain holds {versions} versions of the code and the model reads them all on every turn; "
    "starting a new chain with the current code and a digest of the earlier turns "
    "(%config GeminiMagics.max_chain_versions)",
    documented=True,
)
CHAIN_RESTARTED = note(
    "CHAIN_RESTARTED",
    "the server chain keeps every fetched result whole, and reading it again has cost more than a new chain "
    "costs: starting one with the document, the context and every earlier turn (what it fetched as the calls "
    "that fetch it again); the record keeps every turn",
    documented=True,
)
IMAGES_WAIT = note(
    "IMAGES_WAIT",
    "{count} image(s) not sent this turn: max_images is {cap} (%config GeminiMagics.max_images); {then}",
    documented=True,
)
IMAGES_LATER = part("IMAGES_LATER", "they go with a later turn", documented=True)
IMAGES_NEVER = part("IMAGES_NEVER", "none is sent while it is 0")
KEY_LINE_CHANGED = note(
    "KEY_LINE_CHANGED",
    "the model saw the API key as *** and changed the line around it in {cells}; "
    "left as it is there (edit that line yourself)",
    documented=True,
)

# -- the functions the model calls (sources/tools.py): one line in the cell per call ------------
TOOL_CALLED = note("TOOL_CALLED", "→ {call}: {chars:,} chars")
TOOL_UNCHANGED = note("TOOL_UNCHANGED", "→ {call}: unchanged, {chars:,} chars (the model holds it)")
TOOL_FAILED = note("TOOL_FAILED", "→ {call}: error result: {error}", documented=True)
TOOL_LIMIT = note("TOOL_LIMIT", "{count} tool calls: the limit (max_tool_calls)", documented=True)
TOOL_NO_VARIABLE = part("TOOL_NO_VARIABLE", "inspect_variable: no variable named {name!r} in the notebook")
TOOL_PAST_BOUND = part(
    "TOOL_PAST_BOUND",
    "{name}: stopped at its bound of {seconds:g} s (the notebook's cells or variables take longer); "
    "ask for less (a simpler pattern, one variable by name)",
    documented=True,
)
TOOL_NO_EXCEPTION = part("TOOL_NO_EXCEPTION", "last_error: no exception has been raised in this session yet")
UNKNOWN_TOOLS = note(
    "UNKNOWN_TOOLS",
    "tools: {names} is not one of the functions the model may call ({known}); the setting stays as it was",
    documented=True,
)

# -- the agent (%%gemini_agent: engine/agent.py, frontends/agent_actions.py): one line a step -----------
AGENT_INSERTED = note("AGENT_INSERTED", "✎ inserted {label} after {after} ({lines})")
AGENT_EDITED = note("AGENT_EDITED", "✎ edited {label} ({count})")
AGENT_DELETED = note("AGENT_DELETED", "✗ deleted {label}")
AGENT_REMOVED_OWN = note("AGENT_REMOVED_OWN", "↶ removed {label}, which this turn inserted")
# a run's line: the start of what it printed ("printed nothing"), its size, and the error it raised
AGENT_RAN = note("AGENT_RAN", "▶ ran {label}: {start} ({chars:,} chars)")
AGENT_RAN_RAISED = note("AGENT_RAN_RAISED", "▶ ran {label}: {start} ({chars:,} chars); raised {error}")
RAN_PRINTED_NOTHING = part("RAN_PRINTED_NOTHING", "printed nothing")
# a change an agent cell that is not awaited sent without waiting, checked once the frontend answered
AGENT_NOT_LANDED = part("AGENT_NOT_LANDED", "✗ {call}: the change did not land in the notebook: {error}")
AGENT_NOT_IN_VIEW = part("AGENT_NOT_IN_VIEW", "the notebook does not show it")
LANDED_WAITING = status(
    "LANDED_WAITING", "{count} sent without waiting (this cell is not awaited): checked when the notebook answers"
)
LANDED_ALL = status("LANDED_ALL", "the notebook shows the turn's {count}")
RUN_OUTPUTS_LEFT_OUT = part(
    "RUN_OUTPUTS_LEFT_OUT",
    "[genai_magics: {count} left out here: a cell the agent runs keeps its first {kept:,} outputs and its error]\n",
)
RUN_CHARS_LEFT_OUT = part("RUN_CHARS_LEFT_OUT", "\n[genai_magics: {count} of this stream left out]\n")
RAN_NEXT_INPUT_REPLACED = part("RAN_NEXT_INPUT_REPLACED", "the run replaced this cell's text ({lines}), as %load does")
RAN_NEXT_INPUT_INSERTED = part("RAN_NEXT_INPUT_INSERTED", "the run put its next input in a new cell below ({id})")
AGENT_STEPS_LIMIT = note(
    "AGENT_STEPS_LIMIT",
    "{count} agent steps: the limit (max_agent_steps); the model is asked to answer without functions",
    documented=True,
)
AGENT_OWN_CELL = part(
    "AGENT_OWN_CELL", "{name}: {label} is the cell running this agent turn: never touched", documented=True
)
AGENT_MAGIC_CELL = part(
    "AGENT_MAGIC_CELL", "{name}: {label} holds a %%gemini_* magic: the agent never touches it", documented=True
)
AGENT_STEERING_WRITE = part(
    "AGENT_STEERING_WRITE",
    "{name}: nothing written: {label} would steer the assistant or its approvals ({code}); "
    'unless you approve each write (agent_approve "all") the agent never writes that',
    documented=True,
)
AGENT_STEERING_RUN = part(
    "AGENT_STEERING_RUN",
    "run_cell: {label} calls the assistant's magics or settings ({code}): the agent never runs it; ask the user to",
    documented=True,
)
AGENT_CELL_DELETED = part(
    "AGENT_CELL_DELETED", "{name}: {label} was deleted earlier in this turn: it no longer exists", documented=True
)
AGENT_APPROVE_NONE = note(
    "AGENT_APPROVE_NONE", "agent_approve is none: the agent's changes and runs do not wait for your click this turn"
)
AGENT_CANNOT_RUN = part("AGENT_CANNOT_RUN", "this frontend cannot run cells", documented=True)
AGENT_CANNOT_WAIT = part(
    "AGENT_CANNOT_WAIT",
    "approval cannot be waited for here: the agent cell must hold the %%gemini_agent magic alone "
    "(and the kernel be ipykernel >= 7.4)",
    documented=True,
)
AGENT_EDIT_REFUSED = part("AGENT_EDIT_REFUSED", "edit_cell: nothing written: {why}", documented=True)
AGENT_WRITE_DECLINED = part("AGENT_WRITE_DECLINED", "{name}: the user declined this change: nothing written")
AGENT_WRITE_FAILED = part("AGENT_WRITE_FAILED", "{name}: the frontend did not make the change: {error}")
AGENT_PROPOSAL = note(
    "AGENT_PROPOSAL",
    "no live notebook here: the agent's {count} change(s) are one --notebook proposal below (Copy)",
    documented=True,
)

# -- the agent's runs, their approval and the turn's Undo (frontends/cell_runner.py, ui/approval.py,
# frontends/turn_undo_steps.py): the model reads the first ones as error results ------------------------
RUN_TOP_LEVEL_AWAIT = part(
    "RUN_TOP_LEVEL_AWAIT",
    "run_cell: this cell uses top-level await, which cannot run inside the running agent cell; ask the user to run it",
    documented=True,
)
OUTPUTS_NOT_SHOWN = part(
    "OUTPUTS_NOT_SHOWN", "the cell ran, but the notebook does not show its outputs: {error}", documented=True
)
RUN_UNANSWERED = part("RUN_UNANSWERED", "{label} was not run: nobody clicked Run within {seconds:g} s", documented=True)
APPROVAL_ASKS = status(
    "APPROVAL_ASKS", "{label} waits for your approval: Run it, Run all (the rest of this turn's runs), or Stop the turn"
)
APPROVAL_ASKS_WRITE = status(
    "APPROVAL_ASKS_WRITE",
    "{label}: waits for your approval: Write it, Write all (the rest of this turn's writes), or Stop",
)
APPROVAL_RISKS = status("APPROVAL_RISKS", "⚠ look twice: this code {risks}")
APPROVAL_HIDDEN = status(
    "APPROVAL_HIDDEN", "⚠ {count} invisible or bidirectional character(s), marked U+…: the text holds them as marked"
)
APPROVED_ONCE = status("APPROVED_ONCE", "approved: {label}")
APPROVED_ALL = status("APPROVED_ALL", "approved: {label} and the rest of this turn's {what}")
APPROVAL_STOPPED = status("APPROVAL_STOPPED", "stopped: the turn ends here ({label} was not run)")
APPROVAL_UNANSWERED = status("APPROVAL_UNANSWERED", "not approved in time: {label} was not run")
APPROVAL_ENDED = status("APPROVAL_ENDED", "the turn has ended: {label} was not {done}", documented=True)
TURN_UNDONE = output("TURN_UNDONE", "Undone: the agent's turn ({done})")
TURN_UNDO_NOTHING = output("TURN_UNDO_NOTHING", "Nothing to undo: the agent's turn changed no cell")
TURN_UNDO_KEPT = output(
    "TURN_UNDO_KEPT", "kept {cells}: changed by hand since the agent's turn (undo those yourself)", documented=True
)
TURN_UNDO_ALREADY = output(
    "TURN_UNDO_ALREADY",
    "{count} cell(s) already as before the turn (the notebook's own undo took them back)",
    documented=True,
)
TURN_UNDO_FAILED = output("TURN_UNDO_FAILED", "could not undo {what}: {error}", documented=True)
TURN_UNDO_RAN = output(
    "TURN_UNDO_RAN", "What ran cannot be un-run: {cells} ran, and what they did in the kernel stays", documented=True
)
TURN_UNDO_ONCE = output("TURN_UNDO_ONCE", "This agent turn was undone already")
AGENT_REPLAYED_UNDONE = note(
    "AGENT_REPLAYED_UNDONE", "this turn was undone afterwards: its changes are not in the notebook", documented=True
)
TURN_UNDONE_BY_NOTEBOOK = output(
    "TURN_UNDONE_BY_NOTEBOOK",
    "Undone by the notebook's own undo: every cell the agent's turn changed is as before it",
    documented=True,
)
TURN_UNDO_LATER_FIRST = output(
    "TURN_UNDO_LATER_FIRST",
    "Not undone yet: a later agent turn changed {cells} after this one; undo that turn first, then this Undo",
    documented=True,
)
NO_AGENT_TURN = output("NO_AGENT_TURN", "No agent turn to undo in this kernel yet")
UNDO_NEEDS_LIVE = output(
    "UNDO_NEEDS_LIVE",
    "Undo of an agent turn needs the live notebook (the bridge or the companion), which does not answer now",
    documented=True,
)
