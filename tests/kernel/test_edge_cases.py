"""What outsiders tried (issue 15), each case in a real kernel: the real SDK over HTTP to the
stand-in, real record files. Case numbers are the issue's."""

from __future__ import annotations

import json
import os
import signal

import pytest
from helpers.documents import BIG, MODEL
from helpers.kernel import FAKE_KEY, Kernel
from helpers.record import data_on_disk, text_on_disk
from helpers.wire import api_requests, current_payload, transcript
from test_replay import CELL_A, restart, start, the_record

from genai_magics import messages
from genai_magics.engine.hashing import sha256_text
from genai_magics.ui.diff import MAX_DIFF_TEXT

pytestmark = pytest.mark.kernel

MODES = ["contents", "interactions"]


@pytest.fixture
def notebook(tmp_path):
    return tmp_path / "work.ipynb"


@pytest.fixture
def k(stub, notebook):
    """A kernel on the notebook, its record in the private folder."""
    stub.reset()
    kernel = start(stub, notebook)
    yield kernel
    kernel.close()


def record_of(nb) -> dict:
    return data_on_disk(the_record(nb))


def no_traceback(*runs) -> None:
    for run in runs:
        assert run.errors == [] and "Traceback" not in run.plain and "unexpected" not in run.plain, run.plain


# -- 1. a restart, then a new magic cell first -------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_1_after_a_restart_a_new_magic_cell_is_a_new_turn_after_the_recorded_ones(k, stub, mode, notebook):
    k.run(CELL_A, cell_id="cell-a")
    k.run(f"%%gemini_ask --state {mode}\nWhat does this do?", cell_id="m1")
    k.run("%%gemini_ask\nAnd for negative numbers?", cell_id="m2")
    recorded = record_of(notebook)["conversations"]["default"]["turns"]
    before = len(api_requests(stub))

    restart(k)
    k.run(CELL_A, cell_id="cell-a")
    new = k.run("%%gemini_ask\nCan it parse floats?", cell_id="m3")  # not Run All: a new cell first
    no_traceback(new)
    assert messages.FOOTER_TURN.within(new.plain, turn=3)
    (sent,) = api_requests(stub)[before:]
    if mode == "interactions":
        assert sent["json"]["previous_interaction_id"] == recorded[1]["interaction_id"]
    else:
        assert [role for role, _ in transcript(sent)] == ["user", "model"] * 2 + ["user"]
    turns = record_of(notebook)["conversations"]["default"]["turns"]
    assert [t["prompt"] for t in turns] == [
        "What does this do?",
        "And for negative numbers?",
        "Can it parse floats?",
    ]
    status = k.run("%gemini status", cell_id="st").stdout
    assert "2 recorded turn(s), 0 replayed, live after turn 2 (every recorded turn kept)" in status

    restart(k)  # Run All now replays all three
    k.run(CELL_A, cell_id="cell-a")
    runs = [
        k.run(f"%%gemini_ask --state {mode}\nWhat does this do?", cell_id="m1"),
        k.run("%%gemini_ask\nAnd for negative numbers?", cell_id="m2"),
        k.run("%%gemini_ask\nCan it parse floats?", cell_id="m3"),
    ]
    assert len(api_requests(stub)) == before + 1
    assert [messages.REPLAYED_FOOTER.within(r.plain, turn=i) for i, r in enumerate(runs, 1)] == [True] * 3


def test_1_a_recorded_cell_run_alone_after_a_restart_replays_its_own_turn(k, stub, notebook):
    k.run(CELL_A, cell_id="cell-a")
    k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
    k.run("%%gemini_ask\nAnd for negative numbers?", cell_id="m2")
    before = len(api_requests(stub))
    restart(k)
    k.run(CELL_A, cell_id="cell-a")
    second = k.run("%%gemini_ask\nAnd for negative numbers?", cell_id="m2")
    assert messages.REPLAYED_FOOTER.within(second.plain, turn=2) and len(api_requests(stub)) == before
    assert len(record_of(notebook)["conversations"]["default"]["turns"]) == 2


# -- 2. a flag's name inside a one-line prompt --------------------------------------------------------
def test_2_a_flag_after_the_first_word_of_a_one_line_prompt_is_prompt_text(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    kernel.run("%gemini_ask what does parse do", cell_id="q1")
    second = kernel.run("%gemini_ask explain when I should use --new", cell_id="q2")
    no_traceback(second)
    assert messages.FOOTER_TURN.within(second.plain, turn=2)
    assert current_payload(api_requests(stub)[-1])["prompt"] == "explain when I should use --new"
    history = kernel.run("%gemini history", cell_id="h").stdout
    assert "what does parse do" in history and "explain when I should use --new" in history
    # flags before the prompt still count, with their values; a mistyped one is one line
    third = kernel.run("%gemini_ask --cell cell-a -c other what about --cell here?", cell_id="q3")
    assert current_payload(api_requests(stub)[-1])[
        "prompt"
    ] == "what about --cell here?" and messages.FOOTER_TURN.within(third.plain, turn=1)
    wrong = kernel.run("%gemini_ask --nwe explain", cell_id="q4")
    assert wrong.errors == [] and "unrecognized arguments: --nwe" in wrong.stderr
    cell = kernel.run("%%gemini_ask -c other about --new\nand the body", cell_id="q5")  # the same on a %% line
    assert current_payload(api_requests(stub)[-1])[
        "prompt"
    ] == "about --new\nand the body" and messages.FOOTER_TURN.within(cell.plain, turn=2)


# -- 3. a hand edit across form feeds and U+2028 -----------------------------------------------------------
def test_3_a_hand_edit_of_a_cell_with_form_feeds_reaches_the_model_exactly(kernel, stub):
    code = "".join(f"def f{i}(x):\n    return x * {i}  # \u2028 note\n\x0c\n" for i in range(60))
    kernel.run(code, cell_id="cell-a")
    kernel.run("%%gemini_ask\nWhat does f3 do?", cell_id="m1")
    edited = code.replace("return x * 30", "return x * 31")
    kernel.run(edited, cell_id="cell-a")
    kernel.run("%%gemini_ask\nAnd now?", cell_id="m2")
    last = api_requests(stub)[-1]
    assert "sourcePatch" in current_payload(last)
    assert last["held_document_sha256"] == sha256_text(edited)


# -- 4. nothing undecodable goes out, nothing after a 200 loses the answer ----------------------------------
NAMES = """
import os
class Listing:
    def __init__(self, names):
        self.names = names
    def __repr__(self):  # as a DataFrame prints them: the names as they are
        return "\\n".join(self.names)
listing = Listing(["ok.txt", os.fsdecode(b"bad\\xff.txt")])
bad_name = os.fsdecode(b"bad\\xff.txt")
"""


def test_4_vars_with_an_undecodable_file_name_is_sent_escaped_and_the_answer_is_recorded(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    kernel.run(NAMES, cell_id="names")
    run = kernel.run("%%gemini_ask --vars listing\nWhich files are there?", cell_id="m1")
    no_traceback(run)
    assert "Stub answer to: Which files are there?" in run.plain and messages.FOOTER_TURN.within(run.plain, turn=1)
    (sent,) = api_requests(stub)
    assert current_payload(sent)["variables"]["listing"].endswith("ok.txt\nbad\\udcff.txt")  # the escape, as text
    history = kernel.run("%gemini history", cell_id="h").stdout
    assert "Which files are there?" in history


def test_4_a_prompt_that_is_not_utf8_text_is_refused_before_anything_is_sent(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    kernel.run(NAMES, cell_id="names")
    run = kernel.run("%%gemini_ask --interpolate\nWhat is in $bad_name?", cell_id="m1")
    assert run.errors == [] and api_requests(stub) == []
    assert (messages.FIELD_NOT_TEXT.parse(run.stderr.strip()) or {}).get("name") == "prompt", run.stderr


# -- 5. an explicit cache after a restart: SIGKILL, or polite (Kernel > Restart: atexit runs) ------------------
def test_5_after_sigkill_a_reset_without_a_new_turn_deletes_the_recorded_cache(k, stub):
    k.run(f"%config GeminiMagics.model = {MODEL!r}", cell_id="cfg")
    k.run(BIG, cell_id="big")
    k.run("%%gemini_ask\nWhat does step_3 do?", cell_id="m1")
    kill(k)
    reset = k.run("%gemini forget --all", cell_id="f")  # nothing asked in this kernel
    no_traceback(reset)
    assert [c["state"] for c in stub.caches] == ["deleted"]


def polite_restart(k) -> None:
    k.km.restart_kernel(now=False)  # a shutdown request: the kernel exits by itself, running atexit
    k.kc.wait_for_ready(timeout=60)
    k.models.clear()
    k.run("%load_ext genai_magics", cell_id="setup")


def kill(k) -> None:
    os.kill(k.km.provisioner.pid, signal.SIGKILL)  # OOM, a crash: nothing deleted on the way out
    k.km.provisioner.process.wait()
    restart(k)


@pytest.mark.parametrize("end", [kill, polite_restart], ids=["sigkill", "polite"])
def test_5_after_a_restart_the_recorded_cache_is_reused_by_run_all_never_a_second_one_beside_it(k, stub, end):
    k.run(f"%config GeminiMagics.model = {MODEL!r}", cell_id="cfg")
    k.run(BIG, cell_id="big")
    k.run("%%gemini_ask\nWhat does step_3 do?", cell_id="m1")
    (first,) = stub.caches
    end(k)
    assert [c["state"] for c in stub.caches] == ["live"], "the exit kept the cache the record names"
    k.run(f"%config GeminiMagics.model = {MODEL!r}", cell_id="cfg")  # Run All
    k.run(BIG, cell_id="big")
    k.run("%%gemini_ask\nWhat does step_3 do?", cell_id="m1")  # replayed
    live = k.run("%%gemini_ask\nAnd step_4?", cell_id="m2")
    no_traceback(live)
    assert [r["kind"] for r in stub.requests].count("cache.create") == 1, "a second cache creation"
    assert [c["name"] for c in stub.caches] == [first["name"]], "a second cache beside the first"
    assert api_requests(stub)[-1]["json"]["cachedContent"] == first["name"]
    k.run("%gemini reset", cell_id="r")
    assert [c["state"] for c in stub.caches] == ["deleted"]


def test_5_after_a_polite_restart_a_kept_cache_that_no_longer_matches_is_replaced_and_deleted(k, stub):
    k.run(f"%config GeminiMagics.model = {MODEL!r}", cell_id="cfg")
    k.run(BIG, cell_id="big")
    k.run("%%gemini_ask\nWhat does step_3 do?", cell_id="m1")
    polite_restart(k)
    k.run(f"%config GeminiMagics.model = {MODEL!r}", cell_id="cfg")
    k.run(BIG.replace("return [v", "return [-v"), cell_id="big")  # rewritten since: the head changes
    k.run("%%gemini_ask\nWhat does step_3 do?", cell_id="m1")
    live = k.run("%%gemini_ask\nAnd step_4?", cell_id="m2")
    no_traceback(live)
    assert [c["state"] for c in stub.caches] == ["deleted", "live"], "the stale cache is deleted, one new"
    assert api_requests(stub)[-1]["json"]["cachedContent"] == stub.caches[1]["name"]


@pytest.mark.parametrize(
    "setup",
    ["%config GeminiMagics.persist = False", "%config GeminiMagics.cache_ttl = 7200.0"],
    ids=["no-record", "would-bill-longer-than-a-new-one"],
)
def test_5_a_polite_exit_deletes_a_cache_no_record_names_or_that_would_bill_long(k, stub, setup):
    k.run(f"%config GeminiMagics.model = {MODEL!r}", cell_id="cfg")
    k.run(BIG, cell_id="big")
    k.run("%%gemini_ask\nWhat does step_3 do?", cell_id="m1")
    k.run(setup, cell_id="setup2")
    k.run("%%gemini_ask\nAnd step_4?", cell_id="m2")  # the same cache (its TTL now extended to 7200 s)
    assert [c["state"] for c in stub.caches] == ["live"]
    k.km.shutdown_kernel(now=False)
    assert [c["state"] for c in stub.caches] == ["deleted"]


# -- 6. every key seen stays out of the record ------------------------------------------------------------------
def test_6_the_old_key_stays_out_of_the_record_and_the_wire_after_a_key_rotation(k, stub, notebook):
    new_key = "AIzaROTATED-key-9876543210"
    k.run(f"API_KEY = {FAKE_KEY!r}\n\ndef call(x):\n    return x\n", cell_id="cell-a")
    k.run("%%gemini_ask\nWhat does call do?", cell_id="m1")
    k.run(f"import os\nos.environ['GEMINI_API_KEY'] = {new_key!r}", cell_id="rotate")
    k.run(f"import os\nos.environ['GOOGLE_API_KEY'] = {'AIzaGOOGLE-other-1234567'!r}", cell_id="other-var")
    run = k.run("%%gemini_ask\nAnd with a key?", cell_id="m2")
    no_traceback(run)
    text = text_on_disk(the_record(notebook))
    assert FAKE_KEY not in text and new_key not in text and "API_KEY = '***'" in text
    assert all(FAKE_KEY not in json.dumps(r["json"]) for r in api_requests(stub))


# -- 7. 8. 9. the record's schema --------------------------------------------------------------------------------
def test_7_a_record_of_the_wrong_shape_is_set_aside_and_forget_all_works(k, notebook):
    path = the_record(notebook)  # read at the first magic, not at start
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"schema":1,"notebook":"x","created":0,"generation":1,"conversations":[]}')
    k.run(CELL_A, cell_id="cell-a")
    ask = k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
    no_traceback(ask)
    why = (messages.RECORD_SET_ASIDE.parse(ask.stderr.strip()) or {}).get("why", "")
    assert messages.RECORD_WRONG_SHAPE.matches(why, prefixed=False) and messages.FOOTER_TURN.within(
        ask.plain, turn=1
    ), ask.stderr
    forget = k.run("%gemini forget --all", cell_id="f")
    no_traceback(forget)
    assert "forgotten: default" in forget.stdout and not path.exists()


def test_8_a_record_with_a_bad_field_is_set_aside_at_load_never_a_traceback_in_run_all(k, notebook):
    k.run(CELL_A, cell_id="cell-a")
    k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
    data = record_of(notebook)
    data["conversations"]["default"]["turns"][0]["at"] = "yesterday"
    the_record(notebook).write_text(json.dumps(data, separators=(",", ":")))
    restart(k)
    k.run(CELL_A, cell_id="cell-a")
    again = k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
    no_traceback(again)
    why = (messages.RECORD_SET_ASIDE.parse(again.stderr.strip()) or {}).get("why", "")
    assert "turns[0].at: str 'yesterday', not a number" in why, again.stderr
    assert messages.FOOTER_TURN.within(again.plain, turn=1)  # asked live: the record did not hold a usable turn


@pytest.mark.parametrize(
    "content",
    ['{"schema":99,"notebook":"x","created":0,"generation":3,"conversations":{}}', '{"name": "a package", "v": [1]}'],
    ids=["newer", "foreign"],
)
def test_9_a_newer_or_foreign_record_is_left_untouched_and_the_session_keeps_working(k, tmp_path, content):
    path = tmp_path / "shared" / "record.json"
    path.parent.mkdir()
    path.write_text(content)
    k.run(f"%config GeminiMagics.record_location = {str(path)!r}", cell_id="cfg")
    k.run(CELL_A, cell_id="cell-a")
    ask = k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
    no_traceback(ask)
    assert messages.RECORD_LEFT_UNTOUCHED.matches(ask.stderr.strip()), ask.stderr
    assert messages.FOOTER_TURN.within(ask.plain, turn=1)
    follow = k.run("%%gemini_ask\nAnd then?", cell_id="m2")
    forget = k.run("%gemini forget --all", cell_id="f")
    no_traceback(follow, forget)
    assert messages.FOOTER_TURN.within(follow.plain, turn=2) and "forgotten: default" in forget.stdout
    assert path.read_text() == content and sorted(p.name for p in path.parent.iterdir()) == ["record.json"]
    assert "left untouched" in k.run("%gemini status", cell_id="st").stdout


# -- 10. no cell ids: an edited re-run is the document edited -------------------------------------------------------
def run_without_cell_id(k: Kernel, source: str):
    content = {"code": source, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False}
    return k.finish(k.send_execute(content, {}))  # as nbclient sends it: no cellId


def test_10_without_cell_ids_an_edited_rerun_of_the_document_is_what_the_model_gets(kernel, stub):
    run_without_cell_id(kernel, CELL_A)
    run_without_cell_id(kernel, "%%gemini_ask\nWhat does parse do?")
    edited = "def parse(s):\n    if not s.strip():\n        raise ValueError('empty')\n    return int(s)\n"
    run_without_cell_id(kernel, edited)
    run_without_cell_id(kernel, "x = 1")  # another cell ran since: the edit still is the document
    ask = run_without_cell_id(kernel, "%%gemini_ask\nAnd now?")
    no_traceback(ask)
    assert not messages.DOCUMENT_SYNCHRONIZED.within(ask.plain)
    last = api_requests(stub)[-1]
    assert last["held_document_sha256"] == sha256_text(edited)
    assert "In[4] sent" in ask.plain  # the footer names the run the model holds (In[1] loaded the extension)


# -- 11. a huge proposal's text form ------------------------------------------------------------------------------
def test_11_a_two_megabyte_proposal_keeps_the_cells_text_fallback_capped(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    stub.script_edit("".join(f"value_{i} = {i}  # a long generated table of constants\n" for i in range(40_000)))
    run = kernel.run("%%gemini_edit\nAdd the table.", cell_id="m1")
    no_traceback(run)
    bundles = [m["content"]["data"] for m in run.messages if m["msg_type"] == "display_data"]
    widget = next(b for b in bundles if "application/vnd.jupyter.widget-view+json" in b)
    assert len(widget["text/plain"]) < MAX_DIFF_TEXT + 1_000 and messages.DIFF_TOO_LARGE.within(widget["text/plain"])
    assert sum(len(json.dumps(m["content"])) for m in run.messages) < 1_000_000


# -- 12. settings that change answers are part of a turn -----------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_12_a_changed_temperature_asks_again_instead_of_replaying(k, stub, mode):
    k.run(CELL_A, cell_id="cell-a")
    k.run(f"%%gemini_ask --state {mode}\nWhat does this do?", cell_id="m1")
    before = len(api_requests(stub))
    restart(k)
    k.run("%config GeminiMagics.temperature = 0.2", cell_id="cfg")
    k.run(CELL_A, cell_id="cell-a")
    again = k.run(f"%%gemini_ask --state {mode}\nWhat does this do?", cell_id="m1")
    no_traceback(again)
    assert "replayed" not in again.plain and len(api_requests(stub)) == before + 1
    body = api_requests(stub)[-1]["json"]
    config = body.get("generationConfig") or body.get("generation_config") or {}
    assert config.get("temperature") == 0.2
    restart(k)  # the same settings again: replayed
    k.run("%config GeminiMagics.temperature = 0.2", cell_id="cfg")
    k.run(CELL_A, cell_id="cell-a")
    replayed = k.run(f"%%gemini_ask --state {mode}\nWhat does this do?", cell_id="m1")
    assert messages.REPLAYED_FOOTER.within(replayed.plain, turn=1)
