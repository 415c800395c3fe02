"""Explicit context caches for contents-mode conversations (``GeminiMagics.cache``).

The stable head of a conversation (system instruction, then the contents up to
the one holding the document or context in full) goes into an explicit cache
when it is over the model's cache minimum and caching pays off by the price
table, or under it filled up to the minimum where that pays (``padding_pays``);
the next turns reference it, and the API then bills those tokens at the
cached rate. The head may take every finished turn (they no longer change: what the
model fetched has faded); a cache still at the start of the contents is kept until folding
the turns after it into a new one pays off (``folding_pays``), for a tail of questions and
answers as for one of faded results. A request naming a cache may not carry ``system_instruction``,
``tools`` or ``tool_config`` (a 400), so the system instruction lives in the
cache. A cache is refreshed (its TTL patched) when used and close to expiry,
replaced when the head changes, and deleted on reset, ``--new`` and unload; at
kernel exit too, unless the record names it and keeping it for the rest of its
TTL costs less than creating it again (``worth_keeping``): the restarted kernel
adopts it (Restart and Run All), or it ends with its TTL. A cache is made or kept only
while it pays against what implicit caching serves (``pays_off``'s ``hit``, as the last
turn measured it); deleted for that, the requests keep the contents split as the cached
ones read them (``transport.SPLIT``), the prefix implicit caching holds.

Interactions mode makes no explicit caches: the SDK's ``interactions.create``
type has a ``cached_content`` field, but Google's Interactions overview
(ai.google.dev/gemini-api/docs/interactions-overview, 2026) lists explicit
caching among the features not yet available there ("use generateContent"), and
says the server-side chain itself gets the higher implicit cache hit rate. Its
implicit cache hits are counted (``usage.total_cached_tokens``).

``decide`` is the pure decision; ``ContextCaches`` carries it out.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .. import messages
from ..engine.conversation import Conversation, Turn, TurnPlan, Usage
from ..engine.outputs import part_tokens
from ..engine.text import common_prefix, estimate_tokens
from .errors import status_code
from .filler import PAD_MARGIN, padding
from .models import traits
from .pricing import Price
from .transport import SPLIT, CachedHead, Head

CACHE_MODES = ("auto", "off")
CacheAction = Literal["none", "use", "create", "drop"]
DELETE_TIMEOUT_S = 10.0  # one attempt: a reset must not wait through the turn's retries
EXIT_TIMEOUT_S = 2.0  # per deletion when the kernel exits or the extension unloads


FOLD_PATIENCE = 2.0  # folds' worth of full-price tail reads before a fold (``folding_pays``)


@dataclass(frozen=True)
class Decision:
    # none: send without a cache; use: the existing one; create: a new one (replacing any);
    # drop: delete the existing one, send without
    action: CacheAction
    refresh: bool  # patch the TTL of the cache used
    reason: str
    pad: int = 0  # create: the tokens of filler that bring a head under the model's minimum up to it (``padding``)


def pays_off(price: Price, ttl_s: float, expected_reads: float, hit: float = 0.0) -> bool:
    """Whether a cache saves more than it costs, per token of the head: made, or kept for another TTL.

    Without a cache every read is billed at the input price, but for the share implicit caching
    serves (``hit``, as the last turn measured it: ``implicit_share``, or ``tail_served`` beside an
    explicit cache). With one, creation bills the head once at the input price (as the read it
    replaces would), then every read, this turn's included, at the cached price, plus storage for
    the TTL. So a cache pays off when the later reads it saves outweigh this turn's cached read and
    the storage::

        pays  when  reads x (1 - hit) x (input - cached)  >  cached + storage_hour x ttl/3600

    With implicit caching serving the conversation (``hit`` near 1) an explicit cache saves nothing
    and costs its storage: none is made, and one in use is deleted.
    """
    saved = expected_reads * (1 - hit) * (price.input - price.cached_input)
    extra = price.cached_input + price.storage_hour * ttl_s / 3600
    return saved > extra


def padding_pays(price: Price, ttl_s: float, head_tokens: int, reads: float, hit: float = 0.0) -> bool:
    """Whether a head under the model's cache minimum is worth caching filled up to it (issue 43.3): without it
    the head reads at the input price on every request until the conversation has grown past the minimum (the
    first 15 turns of a long session). The filler (``padding``: the shortfall times ``PAD_MARGIN``) is written
    at the input price, and every read and the storage are billed for all the cache holds; ``pays_off``'s rule,
    per cache rather than per token of the head, over ``reads`` later reads (a turn's requests, as the last
    turn's)::

        pad = (minimum - head) x PAD_MARGIN
        pays  when  reads x (1 - hit) x (input - cached) x head
                        >  pad x input  +  (head + pad) x (cached + storage_hour x ttl/3600)

    At Flash's prices (0.75 / 0.075 / 1.00 an hour, 4,096 tokens, 600 s) a head pays from ~2,932 tokens with one
    read, from ~2,032 with two."""
    pad = max(0, price.cache_minimum - head_tokens) * PAD_MARGIN
    saved = reads * (1 - hit) * (price.input - price.cached_input) * head_tokens
    extra = pad * price.input + (head_tokens + pad) * (price.cached_input + price.storage_hour * ttl_s / 3600)
    return saved > extra


def folding_pays(
    price: Price, ttl_s: float, head_tokens: int, tail_tokens: int, reads: float, turns: int = 1, hit: float = 0.0
) -> bool:
    """Whether to fold the tail (the turns after the cache's head that no longer change) into a new cache now,
    rather than keep the cache and go on reading the tail at the input price.

    Folding now re-reads the cached head at the input price once (creating the new cache) instead of the
    cached price, and stores the tail too for the TTL. Keeping the cache has cost, since it was made, the
    input-minus-cached price on every full-price read of the tail: ``reads`` requests a turn over the
    ``turns`` turns the tail holds, a tail grown about evenly from nothing (``turns + 1`` halves of it a
    read), but for the share implicit caching served (``hit``: ``implicit_share`` of the last turn). Fold
    once that has cost ``FOLD_PATIENCE`` (2) folds: the rent-or-buy rule (fold at one fold's cost: for a
    tail growing by the same amount each turn the least per turn, head re-reads and tail reads together,
    in a session that never ends) made twice as patient, because a fold repays only over the turns after
    it, and a session ends: waiting for two costs ~6% more per turn in an endless session, and spares the
    fold that a session ending soon after never repays (benchmarks/token_economy.py's 30-turn ask-heavy
    session folded at turn 23 by the plain rule, and paid 6% more for it)::

        fold  when  reads x tail x (turns + 1)/2 x (1 - hit) x (input - cached)
                      >  2 x (head x (input - cached) + tail x storage_hour x ttl/3600)
    """
    paid = reads * tail_tokens * (turns + 1) / 2 * (1 - hit) * (price.input - price.cached_input)
    extra = head_tokens * (price.input - price.cached_input) + tail_tokens * price.storage_hour * ttl_s / 3600
    return paid > FOLD_PATIENCE * extra


def filler_served(price: Price, hit: float, head_tokens: int, past_cache: int) -> float:
    """What implicit caching would serve of a turn's requests without a cache filled up to the minimum (a head of
    ``head_tokens`` under it): ``hit`` as measured beside that cache (``tail_served``) only where the requests
    would still read the minimum without it (the head and what they read past the cache, ``past_cache``, on the
    mean: the margin the filler has, ``PAD_MARGIN``, for a turn's first request reading less), else nothing.
    The tail beside a filled cache is served because the filler brought the requests over the minimum: weighed
    as if it were served anyway, the filled cache was dropped, the next turn's requests read everything at full
    price, and the one after it made the cache again (every third turn of a long session's first 19)."""
    return hit if head_tokens + past_cache >= price.cache_minimum * PAD_MARGIN else 0.0


def implicit_share(usage: Usage) -> float:
    """The share of a turn's input implicit caching served (no explicit cache in use)."""
    return min(1.0, (usage.cached_tokens or 0) / usage.input_tokens) if usage.input_tokens else 0.0


def tail_served(usage: Usage, explicit_tokens: int, tail_tokens: int, turns: int) -> float:
    """The share of the tail (``tail_tokens`` now, grown over ``turns`` turns) that implicit caching served
    on the last turn's requests, which read the explicit cache (``explicit_tokens``), then the tail but for
    one turn's addition, then what was new to them. Of what each request read at full price, one turn's
    addition (``tail / turns``, about what a request reads new) is taken as new; the rest is tail the
    implicit cache missed. 0 with no earlier turn in the tail, or where the API reports only the explicit
    cache's tokens (nothing past it is cached: the tail counts as missed)."""
    earlier = tail_tokens * (turns - 1) // turns if turns > 1 else 0
    if earlier <= 0 or not usage.input_tokens:
        return 0.0
    full = (usage.input_tokens - (usage.cached_tokens or 0)) / usage.requests
    missed = max(0.0, full - tail_tokens / turns)
    return max(0.0, 1 - missed / earlier) if (usage.cached_tokens or 0) > usage.requests * explicit_tokens else 0.0


def later_share(usage: Usage) -> float:
    """The share of a turn's input implicit caching served, measured on its requests after the first, at most 1:
    for a turn whose first request began a prefix no earlier request read (a new chain, a conversation's first
    turn, the turn that dropped its cache), so nothing of it could be served. A turn of one request: its whole
    input's share."""
    if usage.requests <= 1:
        return implicit_share(usage)
    later = (usage.input_tokens or 0) - usage.per_request
    return min(1.0, (usage.cached_tokens or 0) / later) if later > 0 else 0.0


def measured_hit(history: Sequence[Turn], minimum: int) -> float | None:
    """What implicit caching served on the newest turn whose requests read at least the model's cache minimum
    (one under it cannot show it): ``later_share`` (the first request of a new chain can find nothing cached:
    its input is new); None when no turn did."""
    for turn in reversed(history):
        if turn.usage.per_request >= minimum:
            return later_share(turn.usage)
    return None


def implicit_padding_pays(price: Price, chain_tokens: int, shortfall: int, hit: float, reads: float, new: bool) -> bool:
    """interactions mode: whether a turn's requests carry filler (``shortfall`` tokens short of the minimum,
    times ``PAD_MARGIN``) after the instruction, so that implicit caching can serve a chain of ``chain_tokens``
    under the model's minimum, which it serves nothing of (issue 43.3; the chain has no explicit cache). Over
    the turn's ``reads`` requests (as the last turn's), each reading the chain at the cached price where
    implicit caching serves ``hit`` of it, against the filler read at what a token of it costs then; a ``new``
    filler (none on the chain before) is read in full by the first request, which nothing can serve, so its
    chain read saves nothing either::

        e = hit x (input - cached)
        pays  when  e x chain x (reads - new)  >  pad x ((input - e) x reads + e x new)

    ``hit`` as the newest turn that read at least the minimum measured it (``measured_hit``), taken as 1
    before any did (as ``new_chain_pays`` takes an unseen chain). So a turn of one request never starts one."""
    pad, read = shortfall * PAD_MARGIN, _chain_read(price, hit)
    served = price.input - read
    return served * chain_tokens * (reads - new) > pad * (read * reads + served * new)


def filler_kept(price: Price, chain_tokens: int, filler_tokens: int, requests_over: int, hit: float) -> bool:
    """interactions mode: whether a chain past the model's minimum keeps the filler it started with (see
    ``implicit_padding_pays``). Dropping it changes the prefix implicit caching serves: the next request
    reads the chain (``chain_tokens``, the filler not counted) at the input price where it read ``hit`` of it
    cached; keeping it reads the filler on every request. The rent-or-buy rule once more: keep it until
    reading it on the ``requests_over`` requests since the chain passed the minimum has cost that re-read::

        keep  while  requests_over x filler x (input - hit x (input - cached))  <  hit x (input - cached) x chain

    Implicit caching serving nothing (``hit`` 0), it goes at once."""
    read = _chain_read(price, hit)
    return requests_over * filler_tokens * read < (price.input - read) * chain_tokens


def _chain_read(price: Price, hit: float) -> float:
    """The price a chain token reads at when implicit caching serves ``hit`` of it."""
    return price.input - hit * (price.input - price.cached_input)


def chain_rent(price: Price, excess_tokens: int, reads: float, hit: float) -> float:
    """interactions mode: what one turn pays, at the price table's rates per 1M tokens, for reading the chain's
    excess over a new chain's seed (``excess_tokens``: what the turn's first request reads on the chain, less
    what it would read on a new one) on each of its ``reads`` requests, a chain token at ``input - hit x (input
    - cached)``, ``hit`` the share of the last turn's input implicit caching served. ``new_chain_pays`` weighs
    the sum over the chain's turns."""
    return reads * excess_tokens * _chain_read(price, hit)


def seed_shared(seed_tokens: int, seed: str, start: str, padded: bool, minimum: int) -> int:
    """interactions mode: what a new chain's first request (``seed_tokens``, its text ``seed``) shares with the
    requests of the chain it replaces, which began with the text ``start`` (empty: not known, as after a read
    back): all but its text past their common prefix. 0 under the model's minimum, which implicit caching does
    not serve, and 0 while the chain's requests carry a filler in their instruction (``padded``): a seed at the
    minimum carries none, so the two differ from their first token."""
    if not start or padded:
        return 0
    shared = seed_tokens - estimate_tokens(seed[common_prefix(seed, start) :])
    return shared if shared >= minimum else 0


def new_chain_pays(
    price: Price,
    paid: float,
    chain_tokens: int,
    seed_tokens: int,
    reads: float,
    hit: float,
    growth: int,
    shared: int = 0,
) -> bool:
    """interactions mode: whether to start a new server chain seeded with the compacted transcript (every
    earlier turn, what the model fetched as the calls that fetch it again) rather than continue the chain,
    which keeps every result whole: the rent-or-buy rule. ``paid``: what re-reading the chain's excess over
    the seed has cost on the chain's turns so far, this one's included (the sum of ``chain_rent``, counted
    as it accrues, turn by turn); ``chain_tokens`` and ``seed_tokens``: what this turn's first request reads
    on the chain and on a new one (the seed, the document, the context and the turn's input); ``reads``: a
    turn's requests, as the last turn's; ``hit``: the share of the last turn's input that implicit caching
    served (a chain token reads at ``e = input - hit x (input - cached)``); ``growth``: what a turn adds to a
    chain (its input, calls, results and answer), as the last turn's; ``shared``: what the seed's first request
    shares with the one the chain began with (the instruction, the declarations and the seed's text up to where
    they differ: a seed puts its earlier turns before the turn's own keys, so the next seed begins as this one
    did), 0 under the model's minimum.

    Buying a new chain costs what implicit caching no longer serves: past what it shares with the chain's
    requests, its first request reads a prefix no implicit cache holds, so that part of the seed reads at the
    input price where the chain read at ``e`` (the shared part reads at ``e`` on both); and a seed under the
    model's cache minimum is served on none of its requests until the new chain grows past the minimum, at
    ``growth`` a turn (``under`` turns, each ``reads`` requests of about the seed). Restart once the rent paid
    is more than that, and the new chain reads less than the chain::

        restart  when  chain > seed  and  paid > (seed - shared) x (input - e) x max(1, reads x under)
                 under = ceil(max(0, minimum - seed) / growth)

    When implicit caching never hits (``e`` = input) a restart costs nothing, and that is every turn the seed
    is smaller; when it hits, once the excess re-read since the chain began has cost the seed's lost hits.
    Before issue 43.2 the rent was guessed from this turn's excess alone, as grown evenly over ``excess /
    (the last turn's results)`` turns: a turn with small results made that 18 turns where the chain had lived
    9 (and 49 where it had lived 10), and a seed under the minimum counted as one read; implicit caching always
    hitting, the chain was started again into a seed nothing served for three turns (benchmarks/long_session.py).
    """
    effective = _chain_read(price, hit)
    under = -(-max(0, price.cache_minimum - seed_tokens) // max(1, growth))
    bought = max(0, seed_tokens - shared) * (price.input - effective) * max(1.0, reads * under)
    return chain_tokens > seed_tokens and paid > bought


def decide(
    *,
    mode: str,
    price: Price | None,
    model: str,
    head_tokens: int,
    head_sha: str | None,
    existing_sha: str | None,
    existing_expires: float | None,
    now: float,
    ttl_s: float,
    expected_reads: float = 1.0,
    hit: float = 0.0,
    turn_reads: float = 1.0,
) -> Decision:
    """What to do about the explicit cache for this turn; pure. ``hit``: the share of the last turn's input
    implicit caching served beyond any explicit cache (``pays_off``). A head under the model's minimum is
    cached filled up to it where that pays over ``turn_reads``, a turn's requests (``padding_pays``), and that
    cache used while the head is unchanged."""
    held = existing_sha is not None

    def without(reason: str) -> Decision:
        return Decision("drop" if held else "none", False, reason)

    if mode == "off":
        return without(messages.CACHE_OFF.render())
    if not traits(model).explicit_cache:
        return without(messages.CACHE_IMPLICIT_ONLY.render(model=model))
    if price is None:
        return without(messages.CACHE_NO_PRICE.render(model=model))
    pad = max(0, price.cache_minimum - head_tokens)  # the filler a head under the minimum is cached with
    if head_sha is None or (pad and not padding_pays(price, ttl_s, head_tokens, turn_reads, hit)):
        return without(
            messages.CACHE_UNDER_MINIMUM.render(tokens=head_tokens, model=model, minimum=price.cache_minimum)
        )
    # the cache, against what implicit caching serves (``padding_pays`` weighed it already for a filled one)
    served = bool(pad) or pays_off(price, ttl_s, expected_reads, hit)
    if existing_sha == head_sha and (served or not hit):
        remaining = (existing_expires or now) - now
        return Decision("use", remaining < ttl_s / 2, messages.CACHE_UNCHANGED.render(tokens=head_tokens))
    if not served:
        if hit:
            return without(messages.CACHE_IMPLICIT_SERVES.render(share=hit, tokens=head_tokens))
        return without(messages.CACHE_NOT_WORTH.render(tokens=head_tokens, model=model, ttl_s=ttl_s))
    if pad:
        return Decision("create", False, messages.CACHE_HEAD_PADDED.render(tokens=head_tokens, pad=pad), pad)
    reason = messages.CACHE_REPLACE if held else messages.CACHE_HEAD
    return Decision("create", False, reason.render(tokens=head_tokens))


def worth_keeping(price: Price | None, remaining_s: float) -> bool:
    """At kernel exit: whether a cache the record names costs less to keep for the rest of its TTL than
    to create again, once, if the notebook runs again (a restart, Run All): its storage until it expires
    against its head read once at the input price, per token of the head. Never longer than that TTL
    (at most ``cache_ttl``); with the default 600 s always kept for the price table's models."""
    return price is not None and remaining_s > 0 and price.storage_hour * remaining_s / 3600 <= price.input


def cache_is_gone(exc: BaseException) -> bool:
    """The server no longer knows the cache a request named: 404, or 403 PERMISSION_DENIED, which is what
    Gemini answers for a cache it lost (decided by status, never by the message's words; a key without
    access to caches fails the same way, and its one re-creation fails again and is reported)."""
    return status_code(exc) in (403, 404)


@dataclass
class CacheEntry:
    name: str
    model: str
    head_sha: str
    length: int
    tokens: int
    created: float
    expires: float
    client: Any
    owner: Conversation  # kept alive by the entry: the key is its id()


_RECORDED = ("name", "model", "head_sha", "length", "tokens", "created", "expires")  # CacheEntry's order


@dataclass(frozen=True)
class CacheStep:
    """This turn's decision and the head it is about."""

    decision: Decision
    head: tuple[dict[str, Any], ...] = ()
    head_tokens: int = 0
    head_sha: str | None = None
    entry: CacheEntry | None = None
    # no cache, because implicit caching serves the prefix the conversation's cached requests read: the
    # requests keep that prefix (``transport.SPLIT``)
    split: bool = False

    def describe(self, ttl_s: float) -> str:
        """The cache plan in words (the dry run shows it)."""
        d, entry = self.decision, self.entry
        if d.action == "use" and entry is not None:
            refresh = messages.CACHE_PLAN_REFRESH.render(ttl_s=ttl_s) if d.refresh else ""
            return messages.CACHE_PLAN_USE.render(name=entry.name, reason=d.reason, refresh=refresh)
        if d.action == "create":
            replaced = messages.CACHE_PLAN_REPLACED.render(name=entry.name) if entry is not None else ""
            return messages.CACHE_PLAN_CREATE.render(
                contents=len(self.head), ttl_s=ttl_s, replaced=replaced, reason=d.reason
            )
        if d.action == "drop" and entry is not None:
            return messages.CACHE_PLAN_DROP.render(name=entry.name, reason=d.reason)
        return messages.CACHE_PLAN_NONE.render(reason=d.reason)


@dataclass
class ContextCaches:
    """The explicit caches of one kernel's conversations, one at most per conversation."""

    clock: Callable[[], float] = time.time
    entries: dict[int, CacheEntry] = field(default_factory=dict)
    ended: list[tuple[str, float]] = field(default_factory=list)  # (model, token-seconds) of deleted caches
    # the latest head measured: ((model, its texts), tokens, sha)
    _measured: tuple[Any, int, str] | None = None
    # conversations whose last turn went without an explicit cache: their usage measures implicit caching alone
    _uncached: dict[int, Conversation] = field(default_factory=dict)
    # conversations without a cache because implicit caching serves the prefix their cached requests read
    _split: dict[int, Conversation] = field(default_factory=dict)
    # conversations whose last turn dropped their cache: its first request began a prefix nothing had read
    _dropped: dict[int, Conversation] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- deciding ---------------------------------------------------------------
    def step(
        self,
        conv: Conversation,
        transport: Any,
        plan: TurnPlan,
        history: Sequence[Turn],
        mode: str,
        price: Price | None,
        ttl_s: float,
    ) -> CacheStep:
        entry = self.entries.get(id(conv))
        if plan.state_mode != "contents":  # a contents-mode cache of this conversation is of no use now
            return CacheStep(
                Decision("drop" if entry else "none", False, messages.CACHE_INTERACTIONS.render()), entry=entry
            )
        contents, length = transport.head(plan, history)
        last = history[-1].usage if history else Usage()
        # what implicit caching served, measurable only when no explicit cache was in use: on the whole input, or
        # on the later requests of a turn whose first began a prefix nothing had read (the conversation's first
        # turn, or the one that dropped its cache: measured whole, half of it looked served)
        hit = 0.0
        if id(conv) in self._uncached and entry is None:
            restarted = id(conv) in self._dropped or len(history) == 1
            hit = later_share(last) if restarted else implicit_share(last)
        if entry is not None and entry.model == transport.model and price is not None:
            length, hit = self._kept(entry, contents, length, transport, price, ttl_s, last)
        head = tuple(contents[:length])
        tokens, sha = self._measure(transport, head) if length else (0, None)
        if entry is not None and price is not None and tokens < price.cache_minimum:
            hit = filler_served(price, hit, tokens, last.per_request - entry.tokens)
        decision = decide(
            mode=mode,
            price=price,
            model=transport.model,
            head_tokens=tokens,
            head_sha=sha,
            existing_sha=entry.head_sha if entry and entry.model == transport.model else None,
            existing_expires=entry.expires if entry else None,
            now=self.clock(),
            ttl_s=ttl_s,
            hit=hit,
            turn_reads=max(1, last.requests),
        )
        if decision.action == "none" and entry is not None:  # another model's cache: of no use now
            decision = replace(decision, action="drop")
        served = decision.action in ("none", "drop") and hit > 0 and (entry is not None or id(conv) in self._split)
        return CacheStep(decision, head, tokens, sha, entry, split=served)

    def _kept(
        self,
        entry: CacheEntry,
        contents: Sequence[dict[str, Any]],
        length: int,
        transport: Any,
        price: Price,
        ttl_s: float,
        last: Usage,
    ) -> tuple[int, float]:
        """The head to cache: the cache's own while it is still the start of the contents and folding the
        tail after it does not pay yet (``folding_pays``, over the turns the tail holds: each ends with the
        model's answer), else the new one (``length``); and the share of the tail implicit caching served
        on the last turn (0 when the cache can serve no more)."""
        prefix = tuple(contents[: entry.length])
        if _head_sha(transport.model, transport.instruction(), prefix, transport.tools) != entry.head_sha:
            return length, 0.0  # the contents changed inside the cache's head: it can serve no more
        tail_contents = contents[entry.length : length]
        tail = sum(part_tokens(p, transport.model) for c in tail_contents for p in c["parts"])
        turns = sum(1 for c in tail_contents if c["role"] == "model" and any("text" in p for p in c["parts"]))
        reads = max(1, last.requests)  # a turn's, as the last one's
        hit = tail_served(last, entry.tokens, tail, max(1, turns))
        folds = length > entry.length and folding_pays(price, ttl_s, entry.tokens, tail, reads, max(1, turns), hit)
        return (length if folds else entry.length), hit

    def folded(
        self,
        conv: Conversation,
        transport: Any,
        contents: Sequence[dict[str, Any]],
        price: Price | None,
        ttl_s: float,
        last: Usage,
        rounds: int,
        note: Callable[[str], None],
    ) -> int:
        """Inside a turn (contents mode): the cache replaced by one holding ``contents`` (the next request's
        contents up to its newest round of calls) when folding the tail after the cache's head pays by the
        rule between turns (``folding_pays``: the tail grown over ``rounds`` requests of the turn, one read each,
        but for the share implicit caching served on the ``last`` one). Without it every later request of the
        turn reads the earlier rounds again at full price. The tokens written (0: no fold)."""
        entry = self.entries.get(id(conv))
        if entry is None or entry.model != transport.model or price is None or len(contents) <= entry.length:
            return 0
        tail = sum(part_tokens(p, transport.model) for c in contents[entry.length :] for p in c["parts"])
        hit = tail_served(last, entry.tokens, tail, rounds)
        if not folding_pays(price, ttl_s, entry.tokens, tail, 1, rounds, hit):
            return 0
        head = tuple(contents)
        tokens, sha = self._measure(transport, head)
        reason = messages.CACHE_REPLACE.render(tokens=tokens)
        pad = max(0, price.cache_minimum - tokens)  # the cache it replaces may have been filled up: so is this one
        _, written = self.prepare(
            conv, transport, CacheStep(Decision("create", False, reason, pad), head, tokens, sha, entry), note, ttl_s
        )
        return written

    def _measure(self, transport: Any, head: tuple[dict[str, Any], ...]) -> tuple[int, str]:
        """The head's estimated tokens and sha; an unchanged head (compared, not serialized) is not hashed again:
        both depend on the transport's model, instruction and functions and the head's parts alone, whichever
        conversation holds them."""
        model, tools, instruction = transport.model, transport.tools, transport.instruction()
        key = (model, tools, instruction, [(c["role"], c["parts"]) for c in head])  # parts compared as they are
        known = self._measured
        if known is not None and known[0] == key:
            return known[1], known[2]
        # what the cache holds besides the contents, as created (``_carried_out``): the instruction as sent (the
        # functions' and the rules' sentences included) and every declaration offered (an agent's too)
        declared = json.dumps([{"function_declarations": transport.declared()}]) if tools else ""
        tokens = estimate_tokens(instruction) + estimate_tokens(declared)
        tokens += sum(part_tokens(p, model) for c in head for p in c["parts"])
        sha = _head_sha(model, instruction, head, tools)
        self._measured = (key, tokens, sha)
        return tokens, sha

    def adopt(self, conv: Conversation, recorded: dict[str, Any] | None, client: Any) -> None:
        """A cache an earlier kernel made for this restored conversation and never deleted (it
        was killed): while it lives it is this conversation's cache, so the next turn uses it,
        or replaces or drops it and deletes it; never a second cache beside it."""
        if not recorded or id(conv) in self.entries or recorded["expires"] <= self.clock():
            return
        with self._lock:
            self.entries[id(conv)] = CacheEntry(**{k: recorded[k] for k in _RECORDED}, client=client, owner=conv)

    def recorded(self, conv: Conversation) -> dict[str, Any] | None:
        """The conversation's cache as the record keeps it (see ``adopt``)."""
        entry = self.entries.get(id(conv))
        return {k: getattr(entry, k) for k in _RECORDED} if entry is not None else None

    # -- doing ----------------------------------------------------------------------
    def prepare(
        self, conv: Conversation, transport: Any, step: CacheStep, note: Callable[[str], None], ttl_s: float
    ) -> tuple[CachedHead | None, int]:
        """Create, refresh or drop as decided; the cache to reference and the tokens written into it."""
        head, written = self._carried_out(conv, transport, step, note, ttl_s)
        dropped = step.decision.action == "drop"
        for kept, record in ((head is None, self._uncached), (step.split, self._split), (dropped, self._dropped)):
            if kept:
                record[id(conv)] = conv
            else:
                record.pop(id(conv), None)
        return head, written

    def _carried_out(
        self, conv: Conversation, transport: Any, step: CacheStep, note: Callable[[str], None], ttl_s: float
    ) -> tuple[CachedHead | None, int]:
        action, entry = step.decision.action, step.entry
        if action == "use" and entry is not None:
            if step.decision.refresh and not self._refresh(entry, ttl_s):
                return self.remade(conv, transport, step, note, ttl_s)
            return CachedHead(entry.name, entry.length), 0
        if action in ("drop", "create") and entry is not None:
            self.release(conv)
        if action != "create":
            return None, 0
        try:
            made = transport.client.caches.create(
                model=transport.model,
                config={
                    "contents": list(step.head),
                    # the head's settings: the instruction (and any filler) and the declarations, in their fixed order
                    "system_instruction": transport.instruction() + padding(step.decision.pad),
                    **({"tools": [{"function_declarations": transport.declared()}]} if transport.tools else {}),
                    "ttl": f"{ttl_s:g}s",
                    "display_name": f"genai_magics {conv.name}",
                },
            )
        except Exception as exc:  # the turn goes on without a cache; the reason is shown
            note(messages.CACHE_NOT_MADE.render(why=status_code(exc) or type(exc).__name__))
            return None, 0
        now = self.clock()
        tokens = getattr(getattr(made, "usage_metadata", None), "total_token_count", None) or step.head_tokens
        with self._lock:
            self.entries[id(conv)] = CacheEntry(
                made.name,
                transport.model,
                step.head_sha or "",
                len(step.head),
                tokens,
                now,
                now + ttl_s,
                transport.client,
                conv,
            )
        return CachedHead(made.name, len(step.head)), tokens

    def remade(
        self, conv: Conversation, transport: Any, step: CacheStep, note: Callable[[str], None], ttl_s: float
    ) -> tuple[CachedHead | None, int]:
        """The server lost the conversation's cache (a refresh or a request said so): made again from the
        step's head, once; see ``prepare`` for what it returns."""
        note(messages.CACHE_GONE.render())
        self.forget(conv)
        again = replace(step, decision=Decision("create", False, "the server lost the cache"), entry=None)
        return self.prepare(conv, transport, again, note, ttl_s)

    def _refresh(self, entry: CacheEntry, ttl_s: float) -> bool:
        try:
            entry.client.caches.update(name=entry.name, config={"ttl": f"{ttl_s:g}s"})
        except Exception as exc:
            if cache_is_gone(exc):
                return False
            return True  # not refreshed this time (a transient failure): it still lives until its expiry
        entry.expires = self.clock() + ttl_s
        return True

    def forget(self, conv: Conversation) -> None:
        """The server no longer has it: stop counting its storage at its expiry."""
        with self._lock:
            entry = self.entries.pop(id(conv), None)
            if entry is not None:
                self.ended.append(
                    (entry.model, entry.tokens * max(0.0, min(self.clock(), entry.expires) - entry.created))
                )

    # -- ending -------------------------------------------------------------------------
    def release(self, conv: Conversation, timeout_s: float = DELETE_TIMEOUT_S) -> str | None:
        """Delete the conversation's cache (if any), one attempt within ``timeout_s``; returns its name."""
        with self._lock:
            entry = self.entries.pop(id(conv), None)
            for record in (self._uncached, self._split, self._dropped):  # an ended conversation (``prepare``)
                record.pop(id(conv), None)
        if entry is None:
            return None
        now = self.clock()
        self.ended.append((entry.model, entry.tokens * max(0.0, min(now, entry.expires) - entry.created)))
        from google.genai import types

        once = types.HttpOptions(timeout=int(timeout_s * 1000), retry_options=types.HttpRetryOptions(attempts=1))
        try:
            entry.client.caches.delete(name=entry.name, config={"http_options": once})
        except Exception:  # gone already, or unreachable: it expires by itself within its TTL
            pass
        return entry.name

    def release_all(
        self, timeout_s: float = EXIT_TIMEOUT_S, keep: Callable[[CacheEntry], bool] | None = None
    ) -> list[str]:
        """Delete every cache (but those ``keep`` keeps) in parallel, each call bounded by ``timeout_s``,
        all by twice that (kernel exit)."""
        names: list[str] = []
        workers = [
            threading.Thread(target=lambda c=e.owner: names.append(self.release(c, timeout_s) or ""), daemon=True)
            for e in list(self.entries.values())
            if keep is None or not keep(e)
        ]
        for w in workers:
            w.start()
        deadline = time.monotonic() + 2 * timeout_s
        for w in workers:
            w.join(max(0.0, deadline - time.monotonic()))
        return [n for n in names if n]

    def storage_token_hours(self) -> dict[str, float]:
        """Token-hours of explicit cache storage so far, per model (live caches until now)."""
        now = self.clock()
        out: dict[str, float] = {}
        for model, seconds in self.ended + [
            (e.model, e.tokens * max(0.0, min(now, e.expires) - e.created)) for e in self.entries.values()
        ]:
            out[model] = out.get(model, 0.0) + seconds / 3600
        return out

    def head(self, conv: Conversation) -> Head:
        """The cache the conversation's turn referenced (a second request of the turn names it too), or
        ``SPLIT`` for one that implicit caching serves instead."""
        entry = self.entries.get(id(conv))
        if entry is not None:
            return CachedHead(entry.name, entry.length)
        return SPLIT if id(conv) in self._split else None

    def name_of(self, conv: Conversation) -> str | None:
        entry = self.entries.get(id(conv))
        return entry.name if entry else None


def _head_sha(model: str, instruction: str, head: Sequence[dict[str, Any]], tools: tuple[str, ...] = ()) -> str:
    """The head's identity: a cache made with other functions offered, or under another system instruction (the
    notebook's rules add a sentence to it once they appear), is another head: both live in the cache, and a
    request naming a cache cannot send its own instruction."""
    text = json.dumps(
        [model, instruction, *([list(tools)] if tools else []), list(head)], ensure_ascii=False, sort_keys=True
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
