"""Conversations that outlive the kernel: restart, Run All, replay, continue (issue 9).

Real kernels (jupyter_client, nbclient), the real SDK over HTTP to the stand-in,
real record files on disk.
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

import pytest
from helpers.kernel import FAKE_KEY, Kernel, notebook_kernel, restart
from helpers.lazy import lazy_import
from helpers.record import data_on_disk, text_on_disk
from helpers.wire import api_requests, current_payload, earlier_turns, transcript

from genai_magics import messages
from genai_magics.messages import REPLAYED_FOOTER
from genai_magics.persistence.store import record_path

nbformat = lazy_import("nbformat")
nbclient = lazy_import("nbclient")

pytestmark = pytest.mark.kernel  # every test here starts kernels (directly or through nbclient)

CELL_A = "def parse(s):\n    return int(s)\n"
OTHER = "import math\nRADIUS = 2\n"
MODES = ["contents", "interactions"]
GET_PROPOSAL = (
    "print(get_ipython().magics_manager.registry['GeminiMagics']"
    ".session.conversations['default'].history[-1].proposal_source, end='')"
)


def the_record(nb: Path) -> Path:
    return record_path("user", nb)


@pytest.fixture
def notebook(tmp_path) -> Path:
    return tmp_path / "work.ipynb"


def start(stub, nb: Path, key: str | None = FAKE_KEY, **extra) -> Kernel:
    return notebook_kernel(stub, nb, key, **extra)


@pytest.mark.parametrize("mode", MODES)
def test_restart_replays_then_continues_without_resending_the_document(stub, notebook, mode):
    stub.reset()
    k = start(stub, notebook)
    try:
        k.run(OTHER, cell_id="other")
        k.run(CELL_A, cell_id="cell-a")
        first = k.run(f"%%gemini_ask --state {mode}\nWhat does this do?", cell_id="m1")
        k.run("%%gemini_edit\nAdd input validation.", cell_id="m2")
        k.click("Apply")
        proposal = k.run(GET_PROPOSAL, cell_id="peek").stdout
        assert "# stub edit" in proposal
        before = len(api_requests(stub))
        journal = the_record(notebook).with_name(the_record(notebook).name + ".journal")
        assert journal.read_bytes().count(b"\n") == 2, "the edit and its Apply: each a line of the journal"

        restart(k)  # killed (now=True): the lines are what the next kernel reads
        # Run All: the code cells as the notebook holds them now (the applied proposal pasted in)
        k.run(OTHER, cell_id="other")
        k.run(proposal, cell_id="cell-a")
        again = k.run(f"%%gemini_ask --state {mode}\nWhat does this do?", cell_id="m1")
        edit = k.run("%%gemini_edit\nAdd input validation.", cell_id="m2")
        assert len(api_requests(stub)) == before, "a replayed cell sent a request"
        (when,) = [f["when"] for f in map(REPLAYED_FOOTER.parse, again.plain.splitlines()) if f and f["turn"] == "1"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", when)
        assert "Stub answer to: What does this do?" in again.plain and again.stderr == ""
        first_answer = [m for m in first.messages if "text/markdown" in m["content"].get("data", {})][-1]
        replayed_answer = [m for m in again.messages if "text/markdown" in m["content"].get("data", {})][-1]
        assert replayed_answer["content"]["data"] == first_answer["content"]["data"]
        assert REPLAYED_FOOTER.within(edit.plain, turn=2)
        status_line = next(v for v in k.html_values() if messages.REPLAYED_PROPOSAL.within(v))
        assert messages.REPLAYED_PROPOSAL.within(status_line, outcome=messages.REPLAYED_APPLIED.render())
        assert messages.REPLAYED_HOLDS_PROPOSAL.within(status_line)
        assert k.state(k.buttons("Apply")[-1])["disabled"] and not k.state(k.buttons("Undo")[-1])["disabled"]

        status = k.run("%gemini status", cell_id="st").stdout
        assert messages.RECORD_RESTORED.within(status, name="default", loaded=2, replayed=2)
        assert str(the_record(notebook)) in status

        live = k.run("%%gemini_ask\nCan we log rejected input too?", cell_id="m3")
        assert live.stderr == "" and messages.FOOTER_TURN.within(live.plain, turn=3)
        sent = api_requests(stub)[before:]
        assert len(sent) == 1
        payload = current_payload(sent[0])
        assert "currentSource" not in payload and payload["sourceSynchronized"] is True
        if mode == "interactions":
            recorded = data_on_disk(the_record(notebook))["conversations"]["default"]["turns"][1]
            assert (
                recorded["interaction_id"] and sent[0]["json"]["previous_interaction_id"] == recorded["interaction_id"]
            )
        else:
            roles = [role for role, _ in transcript(sent[0])]
            assert roles == ["user", "model"] * 2 + ["user"]
            assert transcript(sent[0])[3][1]["proposedSource"] == proposal
    finally:
        k.close()


def test_within_one_kernel_rerunning_a_cell_asks_again(stub, notebook):
    stub.reset()
    k = start(stub, notebook)
    try:
        k.run(CELL_A, cell_id="cell-a")
        k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
        k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
        assert len(api_requests(stub)) == 2
        restart(k)
        k.run(CELL_A, cell_id="cell-a")
        k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
        k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
        assert len(api_requests(stub)) == 2, "both recorded turns replay, in order"
        third = k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
        assert len(api_requests(stub)) == 3 and messages.FOOTER_TURN.within(third.plain, turn=3)
        rerun = k.run("%%gemini_ask --rerun\nWhat does this do?", cell_id="m1")
        assert len(api_requests(stub)) == 4 and messages.FOOTER_TURN.within(rerun.plain, turn=4)
    finally:
        k.close()


# -- Run All with nbclient ---------------------------------------------------
PROMPTS = [
    ("gemini_ask", "What does parse do?"),
    ("gemini_edit", "Add input validation."),
    ("gemini_ask", "Which inputs fail?"),
    ("gemini_ask", "Explain the error message."),
    ("gemini_edit", "Add a docstring."),
    ("gemini_ask", "Summarise the changes."),
]


def write_notebook(path: Path, prompts=PROMPTS, state: str = "contents") -> None:
    nb = nbformat.v4.new_notebook()
    cells = [
        nbformat.v4.new_code_cell("%load_ext genai_magics"),
        nbformat.v4.new_code_cell(f"%config GeminiMagics.state = '{state}'"),
        nbformat.v4.new_code_cell(OTHER),
        nbformat.v4.new_code_cell(CELL_A),
    ]
    cells += [nbformat.v4.new_code_cell(f"%%{magic}\n{prompt}") for magic, prompt in prompts]
    nb.cells = cells
    nbformat.write(nb, str(path))


def run_all(path: Path, stub, key: str | None = FAKE_KEY, **config) -> nbformat.NotebookNode:
    """Restart (a new kernel) and Run All, as nbclient does in CI."""
    nb = nbformat.read(str(path), as_version=4)
    for name, value in config.items():  # in the config cell: the execution counts stay as they were
        nb.cells[1].source += f"\n%config GeminiMagics.{name} = {value!r}"
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "JPY_SESSION_NAME": str(path), "GEMINI_API_KEY": key or ""}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        nbclient.NotebookClient(
            nb,
            timeout=120,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return nb


def magic_outputs(nb) -> list[list[dict]]:
    return [c.outputs for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%gemini")]


def is_footer(text: str) -> bool:
    return "\n" not in text and (messages.FOOTER_TURN.within(text) or REPLAYED_FOOTER.matches(text))


def shown_text(outputs: list[dict]) -> str:
    """What a cell's outputs show as plain text (streams, and the plain text of rich outputs)."""
    return "\n".join(o.get("text") or o.get("data", {}).get("text/plain", "") for o in outputs)


def normalised(outputs: list[list[dict]]) -> list[list[dict]]:
    """Outputs with the honestly volatile parts named: the footer (a live turn's tokens and bytes
    vs 'replayed …'), widget model ids, which are new objects in every kernel, and a proposal's
    status line in its text forms (live: what Apply will do; replayed: that it was replayed)."""
    out = copy.deepcopy(outputs)
    for cell in out:
        for o in cell:
            data = o.get("data", {})
            if is_footer(data.get("text/plain", "")):
                o["data"] = {"footer": "FOOTER"}
            if "application/vnd.jupyter.widget-view+json" in data:
                data["application/vnd.jupyter.widget-view+json"]["model_id"] = "MODEL"
                plain, saved = data["text/plain"].rsplit("\n", 1)
                assert saved == messages.SAVED_VIEW.render()  # a widget's saved text ends in it
                data["text/plain"] = plain.rsplit("\n", 1)[0] + "\nSTATUS"
                data["text/html"] = data["text/html"].rsplit(STATUS_LINE, 1)[0] + "STATUS"
    return out


STATUS_LINE = '<div style="font-size:12px;margin-top:4px">'


def proposal_views(nb) -> list[tuple[str, str]]:
    """(diff HTML, status line) of every proposal widget nbclient saved with the notebook."""
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    values = sorted(
        s["state"]["value"]
        for s in state.values()
        if s["model_name"] == "HTMLModel" and STATUS_LINE in s["state"].get("value", "")
    )
    return [tuple(v.rsplit(STATUS_LINE, 1)) for v in values]


def test_run_all_twice_sends_nothing_the_second_time_and_shows_the_same(stub, notebook):
    stub.reset()
    write_notebook(notebook)
    first = run_all(notebook, stub)
    assert len(api_requests(stub)) == 6
    assert all(o.get("name") != "stderr" for cell in magic_outputs(first) for o in cell), magic_outputs(first)
    second = run_all(notebook, stub)
    assert len(api_requests(stub)) == 6, "the second Run All sent requests"
    assert normalised(magic_outputs(second)) == normalised(magic_outputs(first))
    footers = [
        o["data"]["text/plain"]
        for cell in magic_outputs(second)
        for o in cell
        if REPLAYED_FOOTER.matches(o.get("data", {}).get("text/plain", ""))
    ]
    assert [REPLAYED_FOOTER.parse(f)["turn"] for f in footers] == [str(i) for i in range(1, 7)]
    # the two proposals show the same diffs; their status line says they were replayed
    live, replayed = proposal_views(first), proposal_views(second)
    assert len(live) == 2 and [d for d, _ in replayed] == [d for d, _ in live]
    not_acted = messages.REPLAYED_PROPOSAL.pattern(outcome=messages.REPLAYED_NOT_ACTED.render())
    assert all(not_acted.match(status) for _, status in replayed)
    texts = [
        o["data"]["text/plain"]
        for cell in magic_outputs(second)
        for o in cell
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert len(texts) == 2 and all(messages.REPLAYED_PROPOSAL.matches(t.rsplit("\n", 2)[1]) for t in texts)
    # replayed again, with no key and replay 'only' (CI): exactly the same outputs
    third = run_all(notebook, stub, key=None, replay="only")
    assert len(api_requests(stub)) == 6
    assert normalised(magic_outputs(third)) == normalised(magic_outputs(second))
    assert [o for cell in magic_outputs(third) for o in cell if o.get("name") == "stderr"] == []


def test_replay_only_without_a_key_fails_a_cell_with_no_record_in_one_line(stub, notebook):
    stub.reset()
    write_notebook(notebook, PROMPTS[:2])
    run_all(notebook, stub)
    write_notebook(notebook, PROMPTS[:3])  # a new cell the record does not hold
    nb = run_all(notebook, stub, key=None, replay="only")
    outs = magic_outputs(nb)
    assert len(api_requests(stub)) == 2
    assert REPLAYED_FOOTER.within(shown_text(outs[1]), turn=2)
    errors = [o["text"] for o in outs[2] if o.get("name") == "stderr"]
    why = messages.REPLAY_ONLY_NO_MATCH.render(position=3, name="default")
    assert errors == [messages.REPLAY_ONLY.shown(why=why) + "\n"]
    assert not any(o.get("output_type") == "error" for o in outs[2])


@pytest.mark.parametrize("mode", MODES)
def test_a_diverging_cell_goes_live_and_so_do_the_later_ones(stub, notebook, mode):
    stub.reset()
    write_notebook(notebook, state=mode)
    run_all(notebook, stub)
    changed = list(PROMPTS)
    changed[3] = ("gemini_ask", "Explain the error message, briefly.")
    write_notebook(notebook, changed, state=mode)
    stub.clear()
    nb = run_all(notebook, stub)
    sent = api_requests(stub)
    assert [current_payload(r)["prompt"] for r in sent] == [p for _, p in changed[3:]]
    outs = "\n".join(map(shown_text, magic_outputs(nb)))
    assert [REPLAYED_FOOTER.within(outs, turn=i) for i in (1, 2, 3, 4)] == [True, True, True, False]
    # a continuation of turns 1-3, not of the turns it replaces; the model holds the cell already
    first_live = sent[0]
    if mode == "contents":
        prompts = [p["prompt"] for role, p in transcript(first_live) if role == "user"]
        assert prompts == [p for _, p in changed[:4]]
    else:
        assert first_live["json"]["previous_interaction_id"]
    assert "currentSource" not in current_payload(first_live)
    # the record now holds the new branch: Run All again replays all six
    stub.clear()
    again = run_all(notebook, stub)
    assert api_requests(stub) == []
    assert normalised(magic_outputs(again)) == normalised(magic_outputs(nb))


# -- the record itself ---------------------------------------------------------
@pytest.mark.parametrize("damage", ["garbage", "truncated"])  # a newer one is left untouched (test_edge_cases.py)
def test_a_damaged_record_is_set_aside_with_one_line_and_the_session_starts_fresh(stub, notebook, damage):
    stub.reset()
    write_notebook(notebook, PROMPTS[:1])
    run_all(notebook, stub)
    path = the_record(notebook)
    text = path.read_text()
    bad = {
        "garbage": "\x00not json",
        "truncated": text[: len(text) // 2],
    }[damage]
    path.write_text(bad)
    nb = run_all(notebook, stub)
    out = magic_outputs(nb)[0]
    lines = [o["text"] for o in out if o.get("name") == "stderr"]
    assert len(lines) == 1 and (messages.RECORD_SET_ASIDE.parse(lines[0].rstrip("\n")) or {}).get("path") == str(
        path
    ), lines
    aside = [p for p in path.parent.iterdir() if p.name.startswith(path.name + ".") and p.name.endswith(".set-aside")]
    assert len(aside) == 1 and aside[0].read_text() == bad
    assert len(api_requests(stub)) == 2, "the turn went live"
    assert json.loads(path.read_text())["conversations"]["default"]["turns"][0]["prompt"] == PROMPTS[0][1]


def test_two_kernels_on_one_notebook_never_interleave_the_record(stub, notebook):
    stub.reset()
    one, two = start(stub, notebook), start(stub, notebook)
    try:
        for k in (one, two):
            k.run(CELL_A, cell_id="cell-a")
            k.run("%gemini status", cell_id="st")  # both read the (empty) record
        assert one.run("%%gemini_ask\nfrom kernel one", cell_id="m1").stderr == ""
        lost = two.run("%%gemini_ask\nfrom kernel two", cell_id="m1")
        assert "Stub answer to: from kernel two" in lost.plain
        assert messages.RECORD_LOST.within(lost.plain)
        again = two.run("%%gemini_ask\nfrom kernel two again", cell_id="m2")
        assert "another kernel" not in again.plain, "the line is said once"
        assert one.run("%%gemini_ask\nkernel one again", cell_id="m2").stderr == ""
        record = data_on_disk(the_record(notebook))
        prompts = [t["prompt"] for t in record["conversations"]["default"]["turns"]]
        # one whole write, then a journal line: kernel two wrote neither
        assert prompts == ["from kernel one", "kernel one again"] and record["generation"] == 1
    finally:
        one.close()
        two.close()


def test_the_key_never_reaches_the_record(stub, notebook):
    stub.reset()
    k = start(stub, notebook)
    try:
        k.run(f"SECRET = {FAKE_KEY!r}\nprint(len(SECRET))", cell_id="secret")
        k.run(f"token = '{FAKE_KEY}'\ndef call():\n    return token\n", cell_id="cell-a")
        k.run(f"%%gemini_ask --vars SECRET\nIs {FAKE_KEY} safe here?", cell_id="m1")
        k.run("%%gemini_edit\nRead the token from the environment.", cell_id="m2")
        k.click("Apply")
        text = text_on_disk(the_record(notebook))
        assert FAKE_KEY not in text and "***" in text
        assert data_on_disk(the_record(notebook))["conversations"]["default"]["turns"][1]["outcome"] == "applied"
        proposal = k.run(GET_PROPOSAL, cell_id="peek").stdout
        assert FAKE_KEY in proposal, "the in-kernel proposal keeps the user's key in place"
        # after a restart the replayed proposal's Undo writes the key back, never *** over it
        restart(k)
        k.run(f"SECRET = {FAKE_KEY!r}\nprint(len(SECRET))", cell_id="secret")
        k.run(proposal, cell_id="cell-a")
        k.run(f"%%gemini_ask --vars SECRET\nIs {FAKE_KEY} safe here?", cell_id="m1")
        replayed = k.run("%%gemini_edit\nRead the token from the environment.", cell_id="m2")
        assert REPLAYED_FOOTER.within(replayed.plain, turn=2)
        k.click("Undo")
        holds = k.run(
            "m = get_ipython().magics_manager.registry['GeminiMagics']\n"
            "src = m.session.executed.by_id['cell-a'].source\n"
            f"print({FAKE_KEY!r} in src, '***' in src, 'stub edit' in src)",
            cell_id="check",
        ).stdout
        assert holds == "True False False\n"
        assert FAKE_KEY not in text_on_disk(the_record(notebook))
    finally:
        k.close()


def test_forget_and_persist_off(stub, notebook):
    stub.reset()
    k = start(stub, notebook)
    try:
        k.run(CELL_A, cell_id="cell-a")
        k.run("%%gemini_ask -c other\nfirst", cell_id="m1")
        k.run("%%gemini_ask\nsecond", cell_id="m2")
        record = the_record(notebook)
        assert set(data_on_disk(record)["conversations"]) == {"other", "default"}
        assert k.run("%gemini forget other", cell_id="f").stdout == "forgotten: other\n"
        assert set(data_on_disk(record)["conversations"]) == {"default"}
        assert k.run("%gemini forget --all", cell_id="f2").stdout == "forgotten: default\n"
        assert not record.exists()
        k.run("%config GeminiMagics.persist = False", cell_id="cfg")
        k.run("%%gemini_ask\nthird", cell_id="m3")
        assert not record.exists()
        assert "record: off" in k.run("%gemini status", cell_id="st").stdout
    finally:
        k.close()


def test_without_a_notebook_path_nothing_is_persisted_unless_a_path_is_set(stub, tmp_path):
    stub.reset()
    data = Path(os.environ["JUPYTER_DATA_DIR"])
    before = set(data.rglob("*"))
    k = Kernel(
        env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY, "JPY_SESSION_NAME": ""}, cwd=str(tmp_path)
    )
    try:
        k.run("%load_ext genai_magics", cell_id="setup")
        k.run(CELL_A, cell_id="cell-a")
        k.run("%%gemini_ask\nfirst", cell_id="m1")
        assert set(data.rglob("*")) == before and list(tmp_path.iterdir()) == []
        assert messages.RECORD_NONE.render() in k.run("%gemini status", cell_id="st").stdout.splitlines()
        k.run(f"%config GeminiMagics.record_location = '{tmp_path / 'ci.json'}'", cell_id="cfg")
        k.run("%%gemini_ask\nsecond", cell_id="m2")
        assert data_on_disk(tmp_path / "ci.json")["conversations"]["default"]["turns"][-1]["prompt"] == "second"
    finally:
        k.close()


@pytest.mark.parametrize(
    "fault", [dict(fault="http", status=400), dict(fault="invalid_json", match="edit")], ids=["http400", "invalid_json"]
)
def test_a_failed_turn_writes_nothing_and_a_replayed_run_after_it_still_matches(stub, notebook, fault):
    stub.reset()
    k = start(stub, notebook)
    try:
        k.run(CELL_A, cell_id="cell-a")
        k.run("%%gemini_ask\nfirst", cell_id="m1")
        record = the_record(notebook)
        before = record.read_bytes()
        stub.inject(**fault)
        failed = k.run("%%gemini_edit\nsecond", cell_id="m2")
        assert failed.stderr.startswith("genai_magics: ") and len(failed.stderr.splitlines()) == 1
        assert record.read_bytes() == before
        restart(k)
        k.run(CELL_A, cell_id="cell-a")
        assert REPLAYED_FOOTER.within(k.run("%%gemini_ask\nfirst", cell_id="m1").plain, turn=1)
    finally:
        k.close()


def test_after_a_restart_a_chain_the_server_lost_falls_back_to_the_existing_recovery(stub, notebook):
    stub.reset()
    k = start(stub, notebook)
    try:
        k.run(OTHER, cell_id="other")
        k.run(CELL_A, cell_id="cell-a")
        k.run("%%gemini_ask --state interactions\nWhat does this do?", cell_id="m1")
        recorded = data_on_disk(the_record(notebook))["conversations"]["default"]["last_interaction_id"]
        assert stub.forget_interaction(recorded)
        restart(k)
        k.run(OTHER, cell_id="other")
        k.run(CELL_A, cell_id="cell-a")
        replayed = k.run("%%gemini_ask --state interactions\nWhat does this do?", cell_id="m1")
        assert REPLAYED_FOOTER.within(replayed.plain, turn=1)
        live = k.run("%%gemini_ask\nAnd why int()?", cell_id="m2")
        assert messages.CHAIN_LOST.within(live.plain) and live.stderr == ""
        lost, fresh = api_requests(stub)[-2:]
        assert lost["json"]["previous_interaction_id"] == recorded and lost["status"] == 404
        payload = current_payload(fresh)
        assert "previous_interaction_id" not in fresh["json"] and payload["currentSource"] == CELL_A
        assert [t["prompt"] for t in earlier_turns(payload)] == ["What does this do?"]
        after = data_on_disk(the_record(notebook))["conversations"]["default"]
        assert after["last_interaction_id"] not in (None, recorded)
        assert after["turns"][-1]["interaction_id"] == after["last_interaction_id"]
    finally:
        k.close()


def test_run_all_resolves_each_cell_as_the_conversation_did_then(stub, notebook):
    """A conversation that moved to another cell: replayed turn 1 is about the first cell again."""
    stub.reset()
    k = start(stub, notebook)
    cell_b = "def area(r):\n    return 3.14 * r * r\n"

    def run_all() -> list[str]:
        k.run(CELL_A, cell_id="cell-a")
        outs = [k.run("%%gemini_ask\nWhat does this do?", cell_id="m1").plain]
        k.run(cell_b, cell_id="cell-b")
        outs.append(k.run("%%gemini_ask --cell cell-b\nAnd this one?", cell_id="m2").plain)
        outs.append(k.run("%%gemini_ask\nAny bug in it?", cell_id="m3").plain)
        return outs

    try:
        first = run_all()
        assert "2 lines" in first[0] and "2 lines" in first[2]
        sent = [current_payload(r) for r in api_requests(stub)]
        assert sent[0]["currentSource"] == CELL_A and sent[1]["currentSource"] == cell_b
        restart(k)
        again = run_all()
        assert len(api_requests(stub)) == 3
        assert [REPLAYED_FOOTER.within(out, turn=i) for i, out in enumerate(again, start=1)] == [True, True, True]
        live = k.run("%%gemini_ask\nAnd now?", cell_id="m4")
        assert messages.FOOTER_TURN.within(live.plain, turn=4)
        payload = current_payload(api_requests(stub)[-1])
        assert payload["sourceSynchronized"] is True and "currentSource" not in payload  # still cell B
    finally:
        k.close()


def test_replay_off_asks_again_and_continues_the_restored_conversation(stub, notebook):
    stub.reset()
    k = start(stub, notebook)
    try:
        k.run(CELL_A, cell_id="cell-a")
        k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
        restart(k)
        k.run("%config GeminiMagics.replay = 'off'", cell_id="cfg")
        k.run(CELL_A, cell_id="cell-a")
        again = k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
        assert len(api_requests(stub)) == 2 and messages.FOOTER_TURN.within(again.plain, turn=2)
        payload = current_payload(api_requests(stub)[-1])
        assert payload["sourceSynchronized"] is True, "the restored conversation holds the cell"
    finally:
        k.close()


def test_vscode_run_all_does_not_stop_at_a_replayed_proposal_and_never_writes_another_cell(stub, notebook):
    """VS Code (request shapes: tests/helpers/vscode.py): a proposal nobody acted on is replayed after a
    restart without making the cell wait for a click; Apply is staged for that cell's next run only."""
    from helpers.vscode import VSCode, set_next_input

    stub.reset()
    k = Kernel(env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}, cwd=str(notebook.parent))
    vs = VSCode(k, path=str(notebook))
    edit = "%%gemini_edit\nAdd input validation."
    try:
        vs.open_notebook()
        vs.run("%load_ext genai_magics\n%config GeminiMagics.apply_wait = 1", 1)
        vs.run(CELL_A, 2)
        first = vs.run(edit, 3)  # nobody clicks: released after apply_wait, the proposal stays open
        assert first.errors == [] and "Stub" not in first.stderr
        before = len(api_requests(stub))

        k.km.restart_kernel(now=True)
        k.kc.wait_for_ready(timeout=60)
        k.models.clear()
        vs.open_notebook()
        vs.run("%load_ext genai_magics", 1)  # apply_wait back at its default of 300 s
        vs.run(CELL_A, 2)
        replayed = vs.run(edit, 3, timeout=30)
        assert REPLAYED_FOOTER.within(replayed.plain, turn=1) and len(api_requests(stub)) == before
        assert set_next_input(replayed) == []
        assert any(messages.STAGED_APPLY.render() in v for v in k.html_values())
        k.click("Apply")
        assert set_next_input(vs.run("y = 2", 4)) == [], "Apply's text must never land on another cell"
        (payload,) = set_next_input(vs.run(edit, 3))
        assert payload["replace"] is True and "# stub edit" in payload["text"]
    finally:
        k.close()
