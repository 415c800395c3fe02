"""Cached tokens, cost and explicit context caches over the wire: real kernels, the real SDK, the stand-in."""

from __future__ import annotations

import json
import re

from helpers.display import RecordingDisplay
from helpers.documents import BIG, MODEL
from helpers.footer import footer_line
from helpers.wire import api_requests, current_payload

from genai_magics import messages
from genai_magics.engine.hashing import sha256_text
from genai_magics.stub import edits as model_edits

OTHER = "import math\nRADIUS = 2\n"


def kinds(stub) -> list[str]:
    return [r["kind"] for r in stub.requests]


def big_conversation(kernel, stub):
    kernel.run(f"%config GeminiMagics.model = {MODEL!r}", cell_id="cfg")
    kernel.run(OTHER, cell_id="other")
    kernel.run(BIG, cell_id="big")


def test_a_cache_is_created_once_referenced_by_the_next_turns_and_billed_in_the_footer(kernel, stub):
    big_conversation(kernel, stub)
    first = kernel.run("%%gemini_ask\nWhat does step_3 do?", cell_id="m1")
    second = kernel.run("%%gemini_ask\nAnd step_4?", cell_id="m2")
    third = kernel.run("%%gemini_edit\nAdd type hints.", cell_id="m3")
    assert kinds(stub) == ["cache.create", "stream", "stream", "stream"]
    create, r1, r2, r3 = stub.requests
    name = stub.caches[0]["name"]
    assert [r["json"].get("cachedContent") for r in (r1, r2, r3)] == [name] * 3
    # the cache holds the system instruction and the document; no request repeats them
    assert create["json"]["systemInstruction"]["parts"][0]["text"].startswith("You assist in a Jupyter notebook")
    assert '"currentSource"' in create["json"]["contents"][0]["parts"][0]["text"]
    assert all(
        "systemInstruction" not in r["json"] and BIG[:200] not in str(r["json"]["contents"]) for r in (r1, r2, r3)
    )
    assert current_payload(r1) == {"mode": "ask", "prompt": "What does step_3 do?"}
    assert "The document I hold has 960 lines" in first.plain  # the model reads the cached document
    cached = stub.caches[0]["tokens"]
    for run, record in ((first, r1), (second, r2), (third, r3)):
        footer = footer_line(run.plain)
        assert messages.BILL_IN.render(tokens=f"{record['input_tokens']:,}", cached=f" ({cached:,} cached)") in footer
        assert re.search(r" · ~\$0\.\d+", footer)
    assert messages.BILL_WRITTEN.render(tokens=cached) in first.plain and messages.BILL_MORE.within(first.plain)
    assert messages.DOCUMENT_CACHED.render(label="In[4]", chars=26_550) in first.plain
    assert messages.BILL_SAVED.within(second.plain)
    # 3.8 Flash prices: $0.75 in, $0.075 cached, $3.75 out per 1M tokens
    fresh = r2["input_tokens"] - cached
    cost = (fresh * 0.75 + cached * 0.075 + r2["response_tokens"] * 3.75) / 1e6
    assert f"~${cost:.2g} ·" in second.plain

    table = kernel.run("%gemini tokens", cell_id="t").stdout
    rows = [line.split() for line in table.splitlines() if line.strip()[:1].isdigit()]
    assert [int(r[4].replace(",", "")) for r in rows] == [cached] * 3  # the cached column
    assert float(rows[1][-2]) == round(cost, 4)
    assert "session: 1 conversation(s), 3 turn(s)" in table
    assert re.search(r"cache storage gemini-3.7-flash: [\d.]+ token-hours, ~\$", table)


def test_the_cache_is_replaced_when_the_document_changes_and_deleted_on_reset(kernel, stub):
    big_conversation(kernel, stub)
    kernel.run("%%gemini_ask\nWhat does step_3 do?", cell_id="m1")
    rewritten = BIG.replace("return [", "return sorted([").replace("limit]", "limit])")
    kernel.run(rewritten, cell_id="big")  # a change by hand on every function: too big for a patch
    changed = kernel.run("%%gemini_ask\nWhat changed?", cell_id="m2")
    assert kinds(stub) == ["cache.create", "stream", "cache.delete", "cache.create", "stream"]
    old, new = stub.caches
    assert old["state"] == "deleted" and new["state"] == "live"
    assert stub.requests[2]["path"].endswith(old["name"]) and stub.requests[4]["json"]["cachedContent"] == new["name"]
    assert "sorted([v * 7" in str(stub.requests[3]["json"]["contents"])  # the new version is cached, not re-read
    assert stub.requests[4]["held_document_sha256"] == sha256_text(rewritten)
    assert messages.DOCUMENT_CACHED.within(changed.plain)
    out = kernel.run("%gemini reset", cell_id="r").stdout
    assert "reset: default" in out
    assert kinds(stub)[-1] == "cache.delete" and stub.requests[-1]["path"].endswith(new["name"])
    assert [c["state"] for c in stub.caches] == ["deleted", "deleted"]


def ask_around_a_hand_edit(kernel, stub, flags: str = ""):
    """An ask, a one-line hand edit of the big cell, two asks: (its lines, the edited cell, the two runs)."""
    big_conversation(kernel, stub)
    kernel.run(f"%%gemini_ask {flags}\nWhat does step_3 do?", cell_id="m1")
    lines = BIG.split("\n")
    lines[480:480] = ["THRESHOLD = 0.75  # by hand"]
    edited = "\n".join(lines)
    kernel.run(edited, cell_id="big")
    changed = kernel.run("%%gemini_ask\nWhat changed?", cell_id="m2")
    return lines, edited, changed, kernel.run("%%gemini_ask\nAnd now?", cell_id="m3")


def test_a_small_hand_edit_goes_as_a_patch_and_the_cache_stays(kernel, stub):
    lines, edited, changed, after = ask_around_a_hand_edit(kernel, stub)
    assert kinds(stub) == ["cache.create", "stream", "stream", "stream"]  # no new cache for a one-line change
    name = stub.caches[0]["name"]
    assert [r["json"]["cachedContent"] for r in stub.requests[1:]] == [name] * 3
    patch = current_payload(stub.requests[2])
    assert set(patch) == {"mode", "prompt", "document", "sourcePatch"}
    assert "+THRESHOLD = 0.75  # by hand\n" in patch["sourcePatch"] and len(patch["sourcePatch"]) < 300
    # the stand-in model applies the hunks to the version it holds: it holds the edited cell, on both turns
    assert [r["held_document_sha256"] for r in stub.requests[2:]] == [sha256_text(edited)] * 2
    assert current_payload(stub.requests[3]) == {"mode": "ask", "prompt": "And now?", "sourceSynchronized": True}
    assert "The document I hold has 961 lines" in after.plain
    assert messages.DOCUMENT_PATCHED.within(changed.plain)
    kernel.run("%%gemini_edit\nAdd a header comment", cell_id="m3e")
    edit = stub.requests[-1]
    assert edit["held_document_sha256"] == sha256_text(edited) and edit["json"]["cachedContent"] == name
    # the model's proposal is built on the patched version: the hand edit is in it (a small change: as edits)
    answer = json.loads(edit["response_text"])
    assert model_edits.apply(edited, answer["edits"]) == "# stub edit: Add a header comment\n" + edited
    table = kernel.run("%gemini tokens", cell_id="t").stdout
    rows = [line.split()[7] for line in table.splitlines() if line.strip()[:1].isdigit()]
    assert rows == ["sent", "patch", "synced", "synced"]

    kernel.run("%config GeminiMagics.patches = False", cell_id="cfg3")
    lines[481:481] = ["LIMIT = 3"]
    kernel.run("\n".join(lines), cell_id="big")
    kernel.run("%%gemini_ask\nAnd this?", cell_id="m4")
    assert kinds(stub)[-3:] == ["cache.delete", "cache.create", "stream"]  # the whole document, in a new cache
    assert "LIMIT = 3" in str(stub.requests[-2]["json"]["contents"])


def test_interactions_mode_sends_a_small_hand_edit_as_a_patch_on_the_server_chain(kernel, stub):
    _, edited, _, after = ask_around_a_hand_edit(kernel, stub, "--state interactions")
    first, patched, synced = api_requests(stub)
    assert [r["kind"] for r in (first, patched, synced)] == ["interaction.create"] * 3
    assert patched["json"]["previous_interaction_id"] and len(patched["json"]["input"]) < 1_000
    assert set(current_payload(patched)) == {"mode", "prompt", "document", "sourcePatch"}
    assert current_payload(synced) == {"mode": "ask", "prompt": "And now?", "sourceSynchronized": True}
    # the stand-in applies the patch to the version its stored chain holds
    assert [r["held_document_sha256"] for r in (patched, synced)] == [sha256_text(edited)] * 2
    assert "The document I hold has 961 lines" in after.plain


def test_new_unload_and_kernel_exit_delete_the_caches(kernel, stub):
    big_conversation(kernel, stub)
    kernel.run("%%gemini_ask\nq1", cell_id="m1")
    kernel.run("%%gemini_ask --new\nq2", cell_id="m2")  # starts over: a new cache, the old one deleted
    assert kinds(stub) == ["cache.create", "stream", "cache.create", "stream", "cache.delete"]
    kernel.run("%%gemini_ask -c other\nq3", cell_id="m3")
    kernel.run("%unload_ext genai_magics", cell_id="u")
    assert sorted(kinds(stub)[-2:]) == ["cache.delete", "cache.delete"]
    assert [c["state"] for c in stub.caches] == ["deleted"] * 3

    kernel.run("%load_ext genai_magics", cell_id="l")
    kernel.run(f"%config GeminiMagics.model = {MODEL!r}", cell_id="cfg2")
    kernel.run(BIG, cell_id="big")  # a fresh extension knows the cells run after it was loaded
    kernel.run("%%gemini_ask\nq4", cell_id="m4")
    assert len(stub.caches) == 4 and stub.caches[-1]["state"] == "live"
    kernel.km.shutdown_kernel(now=False)  # a kernel shutdown runs atexit: the cache is deleted
    assert stub.caches[-1]["state"] == "deleted" and kinds(stub)[-1] == "cache.delete"


def test_an_expired_cache_is_created_again_once_with_a_note(kernel, stub):
    big_conversation(kernel, stub)
    kernel.run("%%gemini_ask\nq1", cell_id="m1")
    stub.advance(601)  # the 600 s TTL ran out on the server's clock
    again = kernel.run("%%gemini_ask\nq2", cell_id="m2")
    assert messages.CACHE_GONE.render() in again.plain
    assert "Stub answer to: q2" in again.plain and again.stderr == ""
    assert kinds(stub) == ["cache.create", "stream", "stream", "cache.create", "stream"]
    assert [r["status"] for r in stub.requests] == [200, 200, 403, 200, 200]
    assert [c["state"] for c in stub.caches] == ["expired", "live"]
    history = kernel.run("%gemini history", cell_id="h").stdout
    assert history.count("-> ") == 2  # nothing recorded twice

    stub.configure_caching(missing_status=404)  # some report a 404
    stub.advance(601)
    third = kernel.run("%%gemini_ask\nq3", cell_id="m3")
    assert messages.CACHE_GONE.within(third.plain) and "Stub answer to: q3" in third.plain
    assert [r["status"] for r in stub.requests][-3:] == [404, 200, 200]


def test_cache_off_sends_no_cache_call_and_dry_run_shows_the_plan(kernel, stub):
    big_conversation(kernel, stub)
    dry = kernel.run("%%gemini_ask --dry-run\nq0", cell_id="d1")
    assert messages.CACHE_PLAN_CREATE.within(dry.plain, contents=1, ttl_s=600, replaced="")
    assert '"cached_content": "cachedContents/(created before the request)"' in dry.plain
    assert stub.requests == []
    kernel.run('%config GeminiMagics.cache = "off"', cell_id="off")
    dry = kernel.run("%%gemini_ask --dry-run\nq0", cell_id="d2")
    assert messages.CACHE_PLAN_NONE.render(reason=messages.CACHE_OFF.render()) in dry.plain
    kernel.run("%%gemini_ask\nq1", cell_id="m1")
    kernel.run("%%gemini_ask\nq2", cell_id="m2")
    assert kinds(stub) == ["stream", "stream"]
    assert all("cachedContent" not in r["json"] and "systemInstruction" in r["json"] for r in stub.requests)


def test_an_unknown_model_shows_tokens_and_no_price(kernel, stub):
    kernel.run(OTHER, cell_id="other")
    run = kernel.run("%%gemini_ask --model my-own-model\nq", cell_id="m1")
    footer = footer_line(run.plain)
    assert messages.BILL_IN.within(footer) and "$" not in footer
    assert kinds(stub) == ["stream"]


def test_implicit_cache_hits_show_in_the_footer_in_both_modes(kernel, stub):
    stub.configure_caching(implicit=True, implicit_minimum={MODEL: 10})
    kernel.run(f"%config GeminiMagics.model = {MODEL!r}", cell_id="cfg")
    kernel.run(OTHER, cell_id="other")
    for mode in ("contents", "interactions"):
        kernel.run(f"%%gemini_ask --state {mode} -c {mode}\nq1", cell_id=f"{mode}1")
        second = kernel.run(f"%%gemini_ask -c {mode}\nq2", cell_id=f"{mode}2")
        cached = api_requests(stub)[-1]["cached_tokens"]
        assert cached > 0 and messages.BILL_CACHED.render(tokens=cached) in second.plain


def test_an_ask_after_an_ask_repeats_the_whole_previous_request_as_its_prefix(kernel, stub):
    kernel.run(OTHER, cell_id="other")
    kernel.run("def parse(s):\n    return int(s)\n", cell_id="cell-a")
    kernel.run("%%gemini_ask\nq1", cell_id="m1")
    kernel.run("%%gemini_ask\nq2", cell_id="m2")
    kernel.run("%%gemini_ask\nq3", cell_id="m3")
    r1, r2, r3 = (r["json"] for r in api_requests(stub))
    for before, after in ((r1, r2), (r2, r3)):
        assert after["systemInstruction"] == before["systemInstruction"]
        assert after["generationConfig"] == before.get("generationConfig")
        # every earlier content as it was sent, the last user turn included; then the reply and the new turn
        assert after["contents"][: len(before["contents"])] == before["contents"]
        assert len(after["contents"]) == len(before["contents"]) + 2


def test_a_cache_that_cannot_be_made_leaves_the_turn_going_without_one(kernel, stub):
    big_conversation(kernel, stub)
    stub.inject("http", status=400, match="cache.create", message="Cached content is too small. (stub)")
    run = kernel.run("%%gemini_ask\nq1", cell_id="m1")
    assert messages.CACHE_NOT_MADE.render(why=400) in run.plain
    assert "Stub answer to: q1" in run.plain and run.stderr == ""
    assert kinds(stub) == ["cache.create", "stream"]
    assert "cachedContent" not in stub.requests[1]["json"] and "systemInstruction" in stub.requests[1]["json"]


def test_switching_to_interactions_mode_deletes_the_contents_cache(stub, monkeypatch):
    from helpers.kernel import point_sdk_at

    from genai_magics.turn import pipeline
    from genai_magics.turn.requests import Settings, TurnRequest
    from genai_magics.turn.session import Session

    stub.reset()
    point_sdk_at(monkeypatch, stub.url)

    session = Session()
    session.executed.add("big", BIG, 1)
    settings = Settings(model=MODEL, state="contents")
    pipeline.run(session, TurnRequest(mode="ask", prompt="q1", cell="big"), settings, RecordingDisplay())
    pipeline.run(
        session, TurnRequest(mode="ask", prompt="q2", cell="big", state="interactions"), settings, RecordingDisplay()
    )
    assert kinds(stub) == ["cache.create", "stream", "cache.delete", "interaction.create"]
    assert [c["state"] for c in stub.caches] == ["deleted"]
    assert session.caches.entries == {}
