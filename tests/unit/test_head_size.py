"""The fixed head every request with functions reads (issue 43.3): the system instruction, the functions'
sentence and their declarations, weighed in the stand-in's tokens as it bills them, and the cache step
counting them as the cache holds them.

The extension in an in-process IPython shell, the real SDK over real HTTP to the stand-in.
"""

from __future__ import annotations

import json
import re

import pytest
from helpers.shell import BIG, emptied, fetching_notebook
from helpers.wire import api_requests

from genai_magics.gemini.filler import PAD_NOTE
from genai_magics.stub.model import texts, tokens

# issue 43 measured 458 + 395 (instruction + declarations, stand-in tokens) on every request of an ask with
# functions; the shorter declarations and sentence read 434 + 345 (docs/token-economy.md, "The head")
HEAD_BOUND = 800


@pytest.fixture
def notebook(magic_shell):
    yield fetching_notebook(magic_shell, big=BIG)
    magic_shell.run("%gemini reset --all", cell_id="reset")  # the tests after start from no conversation
    emptied(magic_shell, "big")


def log_turns(notebook, stub, turns: int, lines: int, flags: str = "", later=None) -> None:
    """``turns`` asks without context, each answered after one ``read_cell``: the first pastes a log of ``lines``
    lines (~20 tokens each), the later ones ask ``later(i)`` (by default a short question)."""
    pasted = "".join(f"line {i}: value {i * 7:08d} ok\n" for i in range(lines))
    for i in range(turns):
        stub.script_tools([[{"name": "read_cell", "args": {"ref": "small"}}]])
        text = f"what does this log say?\n{pasted}" if i == 0 else (later or "turn {}: and its last line?".format)(i)
        new = " --new" if i == 0 else ""
        shown = notebook.run(f"%%gemini_ask --no-context {flags}{new}\n{text}", cell_id=f"t{i}")
        assert shown.stderr == ""


def test_an_asks_instruction_and_declarations_stay_under_the_bound_on_the_wire(notebook, stub):
    stub.script_tools([[{"name": "read_cell", "args": {"ref": "small"}}]])
    shown = notebook.run("%%gemini_ask --new\nwhat is total?", cell_id="m1")
    first, second = api_requests(stub)
    for request in (first, second):  # both requests of the question read them
        body = request["json"]
        system = tokens("".join(texts(body["systemInstruction"])))
        declared = tokens(json.dumps(body["tools"], sort_keys=True))  # as the stand-in bills them
        assert [d["name"] for d in body["tools"][0]["functionDeclarations"]] == request["tools_declared"]
        assert system + declared <= HEAD_BOUND, (system, declared, shown.stderr)


def test_the_cache_step_counts_the_head_as_the_cache_it_makes_holds_it(notebook, stub):
    """The plan's estimate of the head decides the cache minimum: it counts the instruction as sent (with the
    functions' sentence) and the declarations offered, as the stand-in counts them in the cache it makes; never
    over (a head estimated over the minimum but under it would be refused), and not short of it by the
    functions' sentence (53 tokens short before: the cache came a turn late when the head neared the minimum)."""
    dry = notebook.run("%%gemini_ask --new --outputs big --dry-run\nwhich row is last?", cell_id="d1")
    planned = re.search(r"cache the stable head \(~([\d,]+) tokens\)", dry.plain)
    assert planned is not None, dry.plain
    stub.script_tools([[{"name": "read_cell", "args": {"ref": "small"}}]])
    notebook.run("%%gemini_ask --new --outputs big\nwhich row is last?", cell_id="m1")
    (made,) = [r for r in stub.requests if r["kind"] == "cache.create"]
    estimate = int(planned.group(1).replace(",", ""))
    assert 0 <= made["input_tokens"] - estimate <= 20, (estimate, made["input_tokens"])


def test_a_head_under_the_cache_minimum_is_cached_filled_up_to_it_once_that_pays(notebook, stub):
    """issue 43.3: a head under the model's minimum read twice a turn at the input price is cached from the turn
    where that pays (``caching.padding_pays``), filled up to the minimum with filler the cache's instruction
    says is filler. The stand-in refuses a cache under the minimum, as the API does: without the filler this
    cache could not be made, and the turn's requests would read the head at the input price."""
    stub.configure_caching(implicit=False, implicit_minimum={"gemini-3.8-flash": 4_096})  # the API's minimum
    pasted = "".join(f"line {i}: value {i * 7:08d} ok\n" for i in range(140))  # a head of ~2,800 tokens
    stub.script_tools([[{"name": "read_cell", "args": {"ref": "small"}}]])
    notebook.run(f"%%gemini_ask --new --no-context\nwhat does this log say?\n{pasted}", cell_id="m1")
    assert not [r for r in stub.requests if r["kind"] == "cache.create"]  # the first turn's head: the instruction
    dry = notebook.run("%%gemini_ask --no-context --dry-run\nand its last line?", cell_id="d2")
    planned = re.search(r"cache the stable head \(~([\d,]+) tokens\) filled up to the model's cache minimum", dry.plain)
    assert planned is not None, dry.plain
    head = int(planned.group(1).replace(",", ""))
    assert 2_032 <= head < 4_096, head  # under the minimum, over where two reads a turn pay (the rule's edge)
    stub.clear()
    stub.script_tools([[{"name": "read_cell", "args": {"ref": "small"}}]])
    shown = notebook.run("%%gemini_ask --no-context\nand its last line?", cell_id="m2")
    (made,) = [r for r in stub.requests if r["kind"] == "cache.create"]
    assert made["status"] == 200 and made["input_tokens"] >= 4_096, (made["status"], shown.stderr)
    instruction = "".join(texts(made["json"]["systemInstruction"]))
    assert PAD_NOTE in instruction
    for request in api_requests(stub):  # both requests of the turn read the head and the filler at the cached price
        assert request["cached_content"] == made["cache_name"]
        assert request["cached_tokens"] == made["input_tokens"]


@pytest.mark.parametrize("implicit, cache", [(True, "auto"), (False, "auto"), (True, "off")])
def test_a_chain_under_the_cache_minimum_carries_filler_while_implicit_caching_serves_it(
    notebook, stub, implicit, cache
):
    """issue 43.3, interactions mode (no explicit cache there): a chain under the model's minimum, read twice a
    turn, carries filler after the instruction from the turn where that pays, the same on every later request,
    so that implicit caching serves the chain from that turn's second request on; where implicit caching is
    seen to serve nothing, the filler goes. A turn's first request without filler: nothing is known of it yet.
    ``cache = "off"``: no filler either."""
    stub.configure_caching(implicit=implicit, implicit_minimum={"gemini-3.8-flash": 4_096})
    notebook.magics.cache = cache
    log_turns(notebook, stub, 3, 120, "--state interactions")  # a chain of ~2,700 tokens
    requests = api_requests(stub)
    assert len(requests) == 6  # each turn: its question, then the function's result
    filled = [PAD_NOTE in r["json"]["system_instruction"] for r in requests]
    sizes = [(r["input_tokens"], r["cached_tokens"]) for r in requests]
    if cache == "off":
        assert filled == [False] * 6, sizes
        return
    assert filled[:4] == [False, False, True, True], sizes  # the second turn: the filler on both its requests
    assert requests[2]["json"]["system_instruction"] == requests[3]["json"]["system_instruction"]
    assert requests[3]["cached_tokens"] == (requests[2]["input_tokens"] if implicit else 0), sizes
    if implicit:  # the chain keeps its prefix: the third turn is served all but what is new
        assert filled[4:] == [True, True]
        assert all(t - c < 300 for t, c in sizes[4:]), sizes
    else:  # implicit caching served nothing: the filler costs, so it goes
        assert filled[4:] == [False, False], sizes


def test_a_filled_cache_is_kept_while_implicit_caching_serves_the_tail_only_its_filler_brings_over_the_minimum(
    notebook, stub
):
    """Beside a cache filled up to the minimum, implicit caching serves the turns after it: the requests read the
    minimum only with the filler. Taken as served without it, the cache was dropped, the next turn read all at
    full price (under the minimum, nothing served), and the turn after made the cache again (``filler_served``)."""
    stub.configure_caching(implicit=True, implicit_minimum={"gemini-3.8-flash": 4_096})
    log_turns(notebook, stub, 6, 140)  # a head of ~2,800 tokens
    kinds = [r["kind"] for r in stub.requests if r["kind"].startswith("cache.")]
    assert kinds[:1] == ["cache.create"] and "cache.delete" not in kinds, kinds
    (made,) = [r for r in stub.requests if r["kind"] == "cache.create"]
    later = api_requests(stub)[4:]  # the third turn's on: each reads the filled cache, the tail served beside it
    assert [r["cached_content"] for r in later] == [made["cache_name"]] * len(later)
    assert all(r["input_tokens"] - r["cached_tokens"] < 400 for r in later), [
        (r["input_tokens"], r["cached_tokens"]) for r in later
    ]


def test_once_the_requests_reach_the_minimum_without_the_filler_the_filled_cache_goes_and_none_is_made_again(
    notebook, stub
):
    """Implicit caching serving the tail, the filled cache goes once the requests reach the minimum without the
    filler; that turn's first request begins a prefix nothing read (the filler was part of it), so what implicit
    caching serves is measured on the turn's later requests (``later_share``): measured on all of them, half was
    served, and the next turn made a cache again, dropped three turns later."""
    stub.configure_caching(implicit=True, implicit_minimum={"gemini-3.8-flash": 4_096})
    note = "".join(f"note {i}: reading {i * 3:06d}\n" for i in range(40))  # ~400 tokens a turn
    log_turns(notebook, stub, 9, 140, later=lambda i: f"turn {i}: and this?\n{note}")  # a head of ~2,800 tokens
    kinds = [r["kind"] for r in stub.requests if r["kind"].startswith("cache.")]
    assert kinds == ["cache.create", "cache.delete"], kinds
    requests = [r for r in stub.requests if r["kind"] in ("cache.delete", "stream", "generate")]
    after = requests[[r["kind"] for r in requests].index("cache.delete") + 1 :]
    assert len(after) >= 4 and all(r["cached_content"] is None for r in after)
    assert all(r["input_tokens"] - r["cached_tokens"] < 600 for r in after[1:]), [
        (r["input_tokens"], r["cached_tokens"]) for r in after
    ]
