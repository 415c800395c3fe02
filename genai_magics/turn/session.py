"""One kernel's assistant session: its conversations, the record, the clients and the explicit caches,
from the first turn to the kernel's exit. A turn itself is the pipeline's (``turn/pipeline.py``).
It imports no IPython: the magics hand it plain values.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import messages
from ..engine.conversation import Conversation, Spent, StateMode
from ..engine.errors import UserError
from ..frontends.notebook_view import ExecutedCells
from ..gemini import budget
from ..gemini.caching import CacheEntry, ContextCaches, worth_keeping
from ..gemini.client import ClientSettings
from ..gemini.errors import describe
from ..gemini.models import InputLimits, ModelInfo, available_models
from ..gemini.pricing import billing_day, price_for
from ..persistence.keeper import RecordKeeper
from ..sources.outputs import OutputCapture
from .clients import Clients
from .document import DocumentChooser
from .requests import Settings

CONVERSATION_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass
class Session:
    executed: ExecutedCells = field(default_factory=ExecutedCells)
    conversations: dict[str, Conversation] = field(default_factory=dict)
    caches: ContextCaches = field(default_factory=ContextCaches)
    limits: InputLimits = field(default_factory=InputLimits)  # each model's input limit, as the API gave it
    keeper: RecordKeeper = field(default_factory=RecordKeeper)  # the notebook's record, this kernel's side
    outputs: OutputCapture = field(default_factory=OutputCapture)  # what each cell showed in this kernel
    clients: Clients = field(default_factory=Clients)
    documents: DocumentChooser = field(init=False)
    today: Callable[[], dt.date] = billing_day  # a turn's day, its price's: Google's, not the machine's (tests set it)
    unpriced: set[str] = field(default_factory=set)  # the models without a price this session said so for
    spent: list[Spent] = field(default_factory=list)  # this kernel's turns' bills, as their footers showed
    # their US$ (``budget.total``), kept as they come: every turn's cap check reads it, the list only grows
    spent_usd: float = 0.0

    def __post_init__(self) -> None:
        self.documents = DocumentChooser(self.executed, self.outputs)

    def bill(self, spent: Spent) -> None:
        """A turn's bill added to this session's spending."""
        self.spent.append(spent)
        self.spent_usd = budget.total([spent], self.spent_usd)

    # -- conversations -------------------------------------------------------
    def conversation(self, name: str, state: StateMode, new: bool = False) -> Conversation:
        """The named conversation, or a new one that is kept only once a turn succeeds."""
        if not CONVERSATION_NAME.match(name):
            raise UserError(messages.BAD_NAME, name=name)
        if new or name not in self.conversations:
            return Conversation(name=name, state_mode=state)
        return self.conversations[name]

    def reset(self, name: str | None = None) -> list[str]:
        names = list(self.conversations) if name is None else [name]
        reset = []
        for n in names:
            conv = self.conversations.pop(n, None)
            if conv is not None:
                conv.closed = True
                self.caches.release(conv)  # nothing stays billed for storage
                reset.append(n)
            self.keeper.stop(n)
        return reset

    # -- the kernel's clients and caches ---------------------------------------
    def open_record(self, settings: Settings) -> str | None:
        """The record at the place the settings name, opened: the conversations an earlier kernel
        left join this kernel's (its own of the same name win), and the explicit caches they name
        become this kernel's. Returns a line to show once (a record set aside, say)."""
        restored = self.keeper.open(settings.record, self.conversations)
        self.conversations.update(restored.conversations)
        self.adopt_recorded_caches(settings.client)
        return restored.note

    def adopt_recorded_caches(self, settings: ClientSettings) -> None:
        """The explicit caches a killed kernel left to the restored conversations become this
        kernel's: used, replaced, or deleted on reset and at exit like its own, never doubled."""
        pending = [(c, self.keeper.recorded_cache(c)) for c in self.conversations.values()]
        pending = [(c, r) for c, r in pending if r is not None and self.caches.name_of(c) is None]
        if not pending:
            return
        try:
            client, _ = self.clients.client(settings)
        except UserError:  # no key: nothing can use or delete it; it ends with its TTL
            return
        for conv, recorded in pending:
            self.caches.adopt(conv, recorded, client)

    def at_exit(self, settings: Settings) -> list[str]:
        """Kernel exit: every explicit cache deleted but one the record on disk names whose storage
        until it expires costs less than making it again: the next kernel on this notebook (a restart,
        Run All) adopts it and uses it, or deletes it once it no longer matches. Returns the names deleted."""
        durable = self.keeper.durable()  # waits for the last write's flush to the disk
        now = self.caches.clock()

        def keep(entry: CacheEntry) -> bool:
            recorded = self.keeper.recorded_cache(entry.owner) if durable else None
            return (
                recorded is not None
                and recorded["name"] == entry.name
                and worth_keeping(price_for(entry.model, settings.prices, self.today()), entry.expires - now)
            )

        return self.caches.release_all(keep=keep)

    def models(self, settings: ClientSettings) -> list[ModelInfo]:
        """The models the key can use (``client.models.list()``), or a UserError saying why not."""
        client, _ = self.clients.client(settings)
        try:
            return available_models(client, self.limits)
        except Exception as exc:
            raise describe(exc, attempts=settings.retry_attempts, timeout_s=settings.timeout_s) from exc


__all__ = ["Session"]
