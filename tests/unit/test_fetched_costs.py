"""What the model fetched stops costing full price after its turn (issue 33.1), by the price table.

Interactions mode: the server keeps every result whole in its chain, so when a new chain seeded with the
compacted transcript (every earlier turn, each result as the call that fetches it again) is cheaper
(``caching.new_chain_pays``), the turn starts one. Contents mode: the faded turns fold into a new explicit
cache when that pays (``caching.folding_pays``), not when implicit caching already serves them; so do the
finished questions and answers of a turn that fetched nothing.

The extension in an in-process IPython shell, the real SDK over real HTTP to the stand-in.
"""

from __future__ import annotations

import pytest
from helpers.shell import BIG, emptied, fetching_notebook
from helpers.wire import api_requests, current_payload, earlier_turns

from genai_magics import messages
from genai_magics.engine.conversation import ChainRent
from genai_magics.gemini.models import DEFAULT_MODEL


@pytest.fixture
def notebook(magic_shell):
    # the outputs whole: the chain passes the cache minimum (two of them)
    yield fetching_notebook(magic_shell, big=BIG, wide=BIG.replace("row_", "col_"))
    emptied(magic_shell, "big", "wide")


def test_after_a_large_fetched_result_the_next_turn_starts_a_chain_seeded_with_markers(notebook, stub):
    stub.script_tools([[{"name": "cell_outputs", "args": {"ref": ref}} for ref in ("big", "wide")]])
    notebook.run("%%gemini_ask --state interactions --new\nwhat does the big cell do?", cell_id="m1")
    _, answered = api_requests(stub)
    assert "row_01099" in answered["json"]["input"][0]["result"]  # this turn reads them whole
    shown = notebook.run("%%gemini_ask --state interactions\nand in one word?", cell_id="m2")
    request = api_requests(stub)[2]
    assert "previous_interaction_id" not in request["json"], shown.stderr  # a new chain: the old one is dearer
    assert messages.CHAIN_RESTARTED.render() in shown.plain  # one line says so
    payload = current_payload(request)
    earlier = earlier_turns(payload)
    fetched = ["cell_outputs(big)", "cell_outputs(wide)"]
    assert [(t["prompt"], t["fetched"]) for t in earlier] == [("what does the big cell do?", fetched)]
    # an ask is a [question, reply] pair, the question as contents mode's faded form (docs/protocol.md)
    assert payload["earlierTurns"][0][0] == "what does the big cell do?\nfetched: cell_outputs(big), cell_outputs(wide)"
    assert "row_01099" not in str(request["json"]["input"])  # the results went as the calls that fetch them
    assert request["input_tokens"] < answered["input_tokens"] / 2
    conv = notebook.magics.session.conversations["default"]
    assert conv.last_interaction_id == request["interaction_id"]  # the next turn continues the new chain
    sent = len(api_requests(stub))
    kept = notebook.run("%%gemini_ask --state interactions\nthanks", cell_id="m3")
    third = api_requests(stub)[sent]
    assert messages.CHAIN_RESTARTED.render() not in kept.plain
    assert third["json"]["previous_interaction_id"] == request["interaction_id"]  # nothing fetched since


def test_a_turn_that_fails_leaves_the_chain_and_its_rent_as_they_were(notebook, stub):
    """The rent is summed as the turns read the chain: a turn that failed read nothing, and the next one weighs
    the same rent again (here, never hitting, it starts the new chain the failed turn would have)."""
    stub.script_tools([[{"name": "cell_outputs", "args": {"ref": ref}} for ref in ("big", "wide")]])
    notebook.run("%%gemini_ask --state interactions --new\nwhat does the big cell do?", cell_id="m1")
    conv = notebook.magics.session.conversations["default"]
    chain = conv.last_interaction_id
    stub.inject("http", status=400, match="interaction.create")
    failed = notebook.run("%%gemini_ask --state interactions\nand in one word?", cell_id="m2")
    assert failed.stderr.startswith("genai_magics:") and len(conv.history) == 1
    assert (conv.last_interaction_id, conv.chain_rent) == (chain, ChainRent())
    again = notebook.run("%%gemini_ask --state interactions\nand in one word?", cell_id="m2")
    assert messages.CHAIN_RESTARTED.render() in again.plain and again.stderr == ""
    assert conv.chain_rent == ChainRent()  # a new chain: its rent starts from nothing


def test_after_an_agent_turn_that_changed_the_notebook_the_chain_is_continued(notebook, stub):
    """The seed would keep only the agent turn's answer; the chain keeps what it did."""
    insert = {"name": "insert_cell", "args": {"after": "small", "source": "y = 2"}}
    reads = [{"name": "cell_outputs", "args": {"ref": ref}} for ref in ("big", "wide")]
    stub.script_tools([[insert, *reads]])
    acted = notebook.run("%%gemini_agent --state interactions --new\nadd a cell after reading both", cell_id="g")
    assert acted.stderr == ""
    assert "row_01099" in str(api_requests(stub)[1]["json"]["input"])  # the outputs went whole
    sent = len(api_requests(stub))
    notebook.run("%%gemini_ask --state interactions\nand in one word?", cell_id="m2")
    request = api_requests(stub)[sent]
    assert request["json"]["previous_interaction_id"] == api_requests(stub)[sent - 1]["interaction_id"]


def test_a_chain_without_fetched_results_is_continued(notebook, stub):
    notebook.run("%%gemini_ask --state interactions --new --no-tools\nhello", cell_id="m1")
    notebook.run("%%gemini_ask --state interactions --no-tools\nagain", cell_id="m2")
    first, second = api_requests(stub)
    assert second["json"]["previous_interaction_id"] == first["interaction_id"]
    assert "earlierTurns" not in current_payload(second)


def long_prompt(i: int) -> str:
    """2.5 kB no two alike: the faded turns after the cache's head grow ~700 tokens a turn."""
    return f"question {i}: what does this log say?\n" + "".join(f"line {i}.{j}: {i * j:08d}\n" for j in range(120))


DOCUMENT = "doc = 1\n" + "".join(f"# comment line {i:05d} of the document\n" for i in range(600))  # over the minimum


# never hitting, the finished turns after the cache's head fold each time their full-price reads since the cache
# was made cost what two folds do: turns that fetched something (their results faded) and, since this stop,
# questions and answers alone (before, they stayed at full price after the cache). Served implicitly, they never
# fold, and the cache itself goes once implicit caching is seen to serve what follows it (below)
@pytest.mark.parametrize(
    ("fetching", "implicit", "caches"), [(True, False, 3), (True, True, 1), (False, False, 2), (False, True, 1)]
)
def test_the_finished_turns_fold_into_a_new_cache_unless_implicit_caching_serves_them(
    notebook, stub, fetching, implicit, caches
):
    notebook.run(DOCUMENT, cell_id="d")
    stub.configure_caching(implicit=implicit)
    try:
        for i in range(1, 9):
            if fetching:
                stub.script_tools([[{"name": "read_cell", "args": {"ref": "small"}}]])
            flags = ("" if fetching else " --no-tools") + (" --new" if i == 1 else "")
            assert notebook.run(f"%%gemini_ask{flags}\n{long_prompt(i)}", cell_id=f"a{i}").stderr == ""
    finally:
        stub.configure_caching(implicit=False)
    assert len(stub.caches) == caches, [c["tokens"] for c in stub.caches]
    last = [r for r in stub.requests if r["kind"] == "stream"][-1]
    if implicit:
        assert last["cached_content"] is None and last["cached_tokens"] > 0.9 * last["input_tokens"]
    else:  # the last request reads a cache holding earlier turns
        used = next(c for c in stub.caches if c["name"] == last["cached_content"])
        assert used["tokens"] > stub.caches[0]["tokens"] + 700


@pytest.mark.parametrize("implicit", [False, True])
def test_a_cache_implicit_caching_is_seen_to_serve_goes_and_the_requests_keep_its_prefix(notebook, stub, implicit):
    """The explicit cache costs its storage and saves what implicit caching would not; once the tail after it
    was served implicitly (the third turn, the first that can tell), it is deleted, and the requests keep the
    split contents the cached ones read, so implicit caching goes on serving their whole prefix."""
    notebook.run(DOCUMENT, cell_id="d")
    stub.configure_caching(implicit=implicit)
    try:
        for i in range(1, 6):
            flags = " --no-tools" + (" --new" if i == 1 else "")
            assert notebook.run(f"%%gemini_ask{flags}\nquestion {i}: " + "why " * 60, cell_id=f"q{i}").stderr == ""
    finally:
        stub.configure_caching(implicit=False)
    kinds = [(r["kind"], r["cached_content"] is not None) for r in stub.requests if r["kind"] != "models.list"]
    named = [("cache.create", False), ("stream", True), ("stream", True)]
    if implicit:
        assert kinds == [*named, ("cache.delete", False), *[("stream", False)] * 3]
        streams = [r for r in stub.requests if r["kind"] == "stream"]
        assert all(r["cached_tokens"] >= p["input_tokens"] for p, r in zip(streams, streams[1:], strict=False))
        assert [c["state"] for c in stub.caches] == ["deleted"]
    else:
        assert kinds == [*named, *[("stream", True)] * 3]


@pytest.mark.parametrize("implicit", [False, True])
def test_a_turns_earlier_rounds_fold_into_the_cache_unless_implicit_caching_serves_them(notebook, stub, implicit):
    """Inside one turn, each request reads the turn's earlier rounds again; never hitting, once that has cost two
    folds (``caching.folding_pays``, the rule between turns) the cache is replaced by one holding them, and the
    requests after it read them at the cached price. Served implicitly, they never fold."""
    for n in range(3, 6):
        notebook.run(BIG.replace("row_", f"r{n}_"), cell_id=f"w{n}")
    notebook.run(DOCUMENT, cell_id="d")
    refs = ("big", "wide", "w3", "w4", "w5")
    stub.script_tools([[{"name": "cell_outputs", "args": {"ref": ref}}] for ref in refs])
    stub.configure_caching(implicit=implicit)
    try:
        shown = notebook.run("%%gemini_ask --new\nwhat do these outputs say?", cell_id="q")
    finally:
        stub.configure_caching(implicit=False)
    assert shown.stderr == ""
    kinds = [r["kind"] for r in stub.requests if r["kind"] in ("cache.create", "cache.delete", "stream")]
    streams = [r for r in stub.requests if r["kind"] == "stream"]
    assert len(streams) == len(refs) + 1
    if implicit:
        assert kinds.count("cache.create") == 1
        return
    # the fifth request is the first whose earlier rounds (three results of ~4,400 tokens) have cost two folds
    assert kinds == ["cache.create", *["stream"] * 4, "cache.delete", "cache.create", "stream", "stream"]
    first, folded = (c["name"] for c in stub.caches)
    assert [r["cached_content"] for r in streams] == [first] * 4 + [folded] * 2
    assert streams[4]["cached_tokens"] > streams[3]["cached_tokens"] + 3 * 4_000  # the rounds, cached
    assert streams[4]["input_tokens"] - streams[4]["cached_tokens"] < 6_000  # the newest round alone at full price


TURNS = 22
FETCHES, QUIET = 8, 14  # after 8 fetching turns, 7 to 10 quiet ones make a new chain pay: 14 do
CONTEXT = "".join(f"# context line {i:04d} of a long cell\n" for i in range(240))  # the first request near the minimum


def test_a_chain_implicit_caching_serves_is_not_started_again_before_its_excess_has_cost_the_seeds_lost_hits(
    notebook, stub
):
    """Implicit caching serving the chain, a new chain costs the hits it loses: the seed read at full price, and
    every request until a seed under the cache minimum grows past it. The rent weighed against that is what
    re-reading the chain's excess over the seed has cost on the chain's turns as they went (``chain_rent``);
    before, it was guessed from one turn's excess as grown over ``excess / (the last turn's results)`` turns, so
    a turn with a small result after larger ones made a young chain look old, and it was started again into a
    seed nothing served."""
    notebook.run(CONTEXT, cell_id="ctx")
    for i in range(12):
        notebook.run(f'print("\\n".join(f"value {i}.{{j}} = {{j * {i}}}" for j in range(60)))', cell_id=f"o{i}")
        notebook.run(f"v{i} = {i}", cell_id=f"v{i}")
    stub.configure_caching(implicit=True, implicit_minimum={DEFAULT_MODEL: 4_096})
    try:
        for i in range(11):
            call = ("read_cell", f"v{i}") if i % 3 == 2 else ("cell_outputs", f"o{i}")
            stub.script_tools([[{"name": call[0], "args": {"ref": call[1]}}]])
            new = " --new" if i == 0 else ""
            shown = notebook.run(f"%%gemini_ask --state interactions{new}\nwhat does it say? ({i})", cell_id=f"q{i}")
            assert shown.stderr == ""
    finally:
        stub.configure_caching(implicit=False)
        emptied(notebook, "ctx", *(f"{kind}{i}" for kind in "ov" for i in range(12)))
    requests = api_requests(stub)
    assert len(requests) == 22  # each turn: its question, then the function's result
    # the chain passes the minimum in the second turn and is served from the third on; re-reading its excess over
    # the seed (~2,000 tokens by the last turn) has cost ~$0.0023 over its turns, less than a new chain loses (the
    # seed at full price, and with a seed just under the minimum every request until it grows past: ~$0.0053): the
    # chain goes on, and each later turn pays full price only for what is new (before, the seventh turn started a
    # new one; a twelfth turn, its rent ~$0.0027 against a seed just past the minimum ~$0.0027, starts one)
    assert all("previous_interaction_id" in r["json"] for r in requests[1:]), [
        i for i, r in enumerate(requests) if "previous_interaction_id" not in r["json"]
    ]
    assert [r["input_tokens"] - r["cached_tokens"] < 600 for r in requests[4:]] == [True] * 18


def test_the_turns_between_two_that_fetched_pay_rent_on_the_chain_too(notebook, stub):
    """Implicit caching serving the chain, what the turns fetched is re-read, cheaply, by every later turn, and a
    new chain pays once that rent has added up to the seed's lost hits. The turns that fetch nothing re-read it
    too: their rent counts, and the next turn weighed (after a small fetch) starts the new chain. Before, only the
    turns right after a fetch added rent, and the chain went on."""
    notebook.run(CONTEXT, cell_id="ctx")
    for i in range(FETCHES):
        notebook.run(f'print("\\n".join(f"value {i}.{{j}} = {{j * {i}}}" for j in range(60)))', cell_id=f"o{i}")
    stub.configure_caching(implicit=True, implicit_minimum={DEFAULT_MODEL: 4_096})
    quiet = []
    try:
        for i in range(FETCHES):
            stub.script_tools([[{"name": "cell_outputs", "args": {"ref": f"o{i}"}}]])
            new = " --new" if i == 0 else ""
            notebook.run(f"%%gemini_ask --state interactions{new}\nwhat does it say? ({i})", cell_id=f"f{i}")
        for i in range(QUIET):
            quiet.append(notebook.run(f"%%gemini_ask --state interactions\nand then? ({i})", cell_id=f"q{i}"))
        stub.script_tools([[{"name": "read_cell", "args": {"ref": "small"}}]])
        notebook.run("%%gemini_ask --state interactions\nwhat is total?", cell_id="m1")
        sent = len(api_requests(stub))
        weighed = notebook.run("%%gemini_ask --state interactions\nand in one word?", cell_id="m2")
    finally:
        stub.configure_caching(implicit=False)
        emptied(notebook, "ctx", *(f"o{i}" for i in range(FETCHES)))
    # each quiet turn re-read the chain's excess at about the cached rate (~$0.00015 a turn): the rent passes what
    # a new chain loses before the small fetch, and the turn after it starts one
    assert not any(messages.CHAIN_RESTARTED.render() in shown.plain for shown in quiet)
    assert all("previous_interaction_id" in r["json"] for r in api_requests(stub)[1:sent])
    assert messages.CHAIN_RESTARTED.render() in weighed.plain
    assert "previous_interaction_id" not in api_requests(stub)[sent]["json"]


def test_a_new_chain_after_the_first_reads_what_its_seed_shares_with_the_last_one_at_the_cached_price(notebook, stub):
    """Implicit caching serving, a seed that begins as the chain's own did (its earlier turns before the turn's own
    keys) is served up to where they differ: a new chain then loses only what is new to it, so it starts as soon as
    the chain's excess has cost that (``caching.new_chain_pays``'s ``shared``). Before, a seed began with the turn's
    prompt, nothing of it was served, and every new chain paid its whole seed at full price again."""
    notebook.run(CONTEXT * 2, cell_id="ctx")
    for i in range(TURNS):
        notebook.run(f'print("\\n".join(f"value {i}.{{j}} = {{j * {i}}}" for j in range(60)))', cell_id=f"o{i}")
    stub.configure_caching(implicit=True, implicit_minimum={DEFAULT_MODEL: 4_096})
    try:
        for i in range(TURNS):
            stub.script_tools([[{"name": "cell_outputs", "args": {"ref": f"o{i}"}}]])
            new = " --new" if i == 0 else ""
            shown = notebook.run(f"%%gemini_ask --state interactions{new}\nwhat does it say? ({i})", cell_id=f"q{i}")
            assert shown.stderr == ""
    finally:
        stub.configure_caching(implicit=False)
        emptied(notebook, "ctx", *(f"o{i}" for i in range(TURNS)))
    requests = api_requests(stub)
    starts = [i for i, r in enumerate(requests) if "previous_interaction_id" not in r["json"]]
    assert len(starts) >= 4, starts  # the first turn, a first new chain, and more after it
    first_seed = requests[starts[1]]
    assert first_seed["cached_tokens"] == 0  # it begins unlike the first turn: nothing of it served
    for at in starts[2:]:
        seed = requests[at]
        assert seed["cached_tokens"] >= 4_096, (at, seed["cached_tokens"])  # the last seed's beginning, served
        assert seed["input_tokens"] - seed["cached_tokens"] < 600, (at, seed["input_tokens"])
