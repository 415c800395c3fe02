"""What a cell showed goes with the document: printed text in the JSON, images as real image parts.

Real kernel, real SDK over HTTP, the stand-in decoding and recording every image part,
in both state modes.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from helpers.footer import footer_line
from helpers.hashing import sha
from helpers.images import png
from helpers.kernel import FAKE_KEY, Kernel, Run
from helpers.record import text_on_disk
from helpers.wire import api_requests, current_payload

from genai_magics import messages
from genai_magics.persistence.store import record_path

MODES = ("contents", "interactions")


def sent_images(record) -> list[bytes]:
    """The decoded bytes of every image part the request carried, as the SDK wrote them."""
    body = record["json"]
    if record["kind"] == "interaction.create":
        steps = body["input"] if isinstance(body["input"], list) else []  # the SDK's one user_input step
        items = [i for step in steps for i in step["content"] if i["type"] == "image"]
        assert all(i["mime_type"] == "image/png" for i in items)
        return [base64.urlsafe_b64decode(i["data"].replace("+", "-").replace("/", "_")) for i in items]
    out = []
    for content in body["contents"]:
        for part in content["parts"]:
            inline = part.get("inlineData") or part.get("inline_data")
            if inline:
                out.append(base64.urlsafe_b64decode(inline["data"].replace("+", "-").replace("/", "_")))
    return out


def current_images(record) -> list[bytes]:
    """The image parts of the current user turn only (contents: after the last model content)."""
    body = record["json"]
    if record["kind"] == "interaction.create":
        return sent_images(record)
    contents = body["contents"]
    last_model = max((i for i, c in enumerate(contents) if c["role"] == "model"), default=-1)
    tail = {**record, "json": {"contents": contents[last_model + 1 :]}}
    return sent_images(tail)


def show(kernel, tmp_path: Path, image: bytes, cell_id: str = "plot", text: str = "mean 4.2 over 100 rows") -> None:
    (tmp_path / f"{cell_id}.png").write_bytes(image)
    kernel.run(
        f"from IPython.display import Image, display\nprint({text!r})\ndisplay(Image(filename={cell_id + '.png'!r}))\n",
        cell_id=cell_id,
    )


@pytest.mark.parametrize("mode", MODES)
def test_printed_text_and_png_go_once_and_a_new_png_goes_alone(kernel, stub, tmp_path, mode):
    kernel.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
    first_png, second_png = png(64, 48, seed=1), png(64, 48, seed=2)
    show(kernel, tmp_path, first_png)
    asked = kernel.run("%%gemini_ask\nwhy is this histogram skewed?", cell_id="m1")
    request = api_requests(stub)[-1]
    payload = current_payload(request)
    [text, image] = payload["outputs"]
    assert text["label"].startswith("In[") and text["text"] == "mean 4.2 over 100 rows\n[image 1]\n"
    assert text["sha256"] == sha(text["text"].encode())
    assert image == {
        "label": text["label"],
        "sha256": sha(first_png),
        "image": 1,
        "mimeType": "image/png",
        "width": 64,
        "height": 48,
    }
    assert current_images(request) == [first_png]  # the bytes exactly, after the JSON text part
    assert [i["sha256"] for i in request["current_images"]] == [sha(first_png)]  # the stand-in decoded it too
    assert request["input_tokens"] >= 258  # the stand-in reads the image as tokens

    footer = footer_line(asked.plain, turn=1)
    assert messages.BILL_IN.within(footer, tokens=f"{request['input_tokens']:,}")  # the image's tokens included
    sent = [messages.PIECE_SENT.render(name=f"{text['label']} output")]
    sent.append(messages.IMAGE_SENT.render(name=f"{text['label']} image 1", tokens=1120))
    assert messages.FOOTER_SEPARATOR.join(sent) in footer
    again = kernel.run("%%gemini_ask\nand the outliers?", cell_id="m2")
    follow_up = api_requests(stub)[-1]
    assert messages.PIECE_UNCHANGED.render(name=f"{text['label']} image 1") in again.plain
    assert "outputs" not in current_payload(follow_up)
    assert current_images(follow_up) == []

    show(kernel, tmp_path, second_png)  # the same print, another plot
    kernel.run("%%gemini_ask\nand now?", cell_id="m3")
    rerun = api_requests(stub)[-1]
    [again] = current_payload(rerun)["outputs"]  # no text entry: the printed text did not change
    assert again == {**image, "sha256": sha(second_png), "label": again["label"]} and again["label"] != image["label"]
    assert current_images(rerun) == [second_png]
    table = kernel.run("%gemini tokens", cell_id="t").stdout
    rows = [line.split() for line in table.splitlines() if line.strip()[:1].isdigit()]
    assert "images" in table and [r[8] for r in rows] == ["1", "0", "1"]  # images sent, per turn
    assert [int(r[3].replace(",", "")) for r in rows] == [r["input_tokens"] for r in (request, follow_up, rerun)]
    if mode == "contents":  # the old plot compacts to its sha, like superseded code
        assert sent_images(rerun) == [second_png]
        older = [json.loads(c["parts"][0]["text"]) for c in rerun["json"]["contents"] if c["role"] == "user"]
        assert sha(first_png) in older[0]["supersededOutputsSha256"]
        assert older[0]["outputs"] == [text]  # the unchanged text stays where it was sent


@pytest.mark.parametrize("mode", MODES)
def test_no_outputs_and_outputs_of_another_cell(kernel, stub, tmp_path, mode):
    kernel.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
    other = png(32, 32, seed=5)
    show(kernel, tmp_path, other, cell_id="shown", text="from the other cell")
    kernel.run("total = 41 + 1\nprint('total is', total)", cell_id="doc")
    kernel.run("%%gemini_ask --no-outputs\nwhat does this do?", cell_id="m1")
    request = api_requests(stub)[-1]
    assert "outputs" not in current_payload(request) and sent_images(request) == []
    assert current_payload(request)["currentSource"].startswith("total = 41 + 1")

    kernel.run("%%gemini_ask --outputs shown\ncompare with that plot", cell_id="m2")
    request = api_requests(stub)[-1]
    entries = current_payload(request)["outputs"]
    assert [e.get("text") for e in entries] == ["total is 42\n", "from the other cell\n[image 1]\n", None]
    assert entries[2]["sha256"] == sha(other) and current_images(request) == [other]


def _warm_up_logs(stub, tmp_path) -> Kernel:
    """A kernel whose SDK prints a log line from the warm-up thread (an unknown GOOGLE_GENAI_HTTP_CLIENT), on a
    notebook of its own (it keeps a record); the extension is not loaded yet."""
    env = {
        "GOOGLE_GEMINI_BASE_URL": stub.url,
        "GEMINI_API_KEY": FAKE_KEY,
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JPY_SESSION_NAME": str(tmp_path / "work.ipynb"),
        "GOOGLE_GENAI_HTTP_CLIENT": "no-such-client",
    }
    return Kernel(env=env, cwd=str(tmp_path))


def _run_all(k: Kernel, *cells: tuple[str, str]) -> list[Run]:
    """The cells sent at once, as Run All does: the second starts while the warm-up still imports the SDK."""
    return [k.finish(msg_id) for msg_id in [k.start(source, cell_id) for source, cell_id in cells]]


JOIN_WARM_UP = "import threading\n[t.join() for t in threading.enumerate() if t.name == 'genai_magics warm-up']\n"
LOAD = ("%load_ext genai_magics", "setup")
DOC = (JOIN_WARM_UP + "print('printed by the cell')", "doc")
ASK = ("%%gemini_ask\nwhat does it print?", "m1")


@pytest.mark.kernel
def test_a_line_the_sdk_warm_up_prints_while_a_cell_runs_is_not_that_cells_output(stub, tmp_path):
    """Restart and Run All: the cell after ``%load_ext`` runs while the SDK's warm-up thread still works, and a
    log line the SDK prints then shows under that cell. It is not the cell's output, and is not sent as such."""
    stub.reset()
    k = _warm_up_logs(stub, tmp_path)
    try:
        [_, doc, _] = _run_all(k, LOAD, DOC, ASK)
        assert "Unrecognized GOOGLE_GENAI_HTTP_CLIENT" in doc.plain  # the line came while the cell ran
        [entry] = current_payload(api_requests(stub)[-1])["outputs"]
        assert entry["text"] == "printed by the cell\n"
    finally:
        k.close()


@pytest.mark.kernel
def test_run_all_after_a_restart_replays_although_the_warm_up_printed_under_the_first_cell(stub, tmp_path):
    """Seen in VS Code in CI: cells run one by one recorded the turn; after Restart and Run All the warm-up's
    line came while the document cell ran, the turn differed from the recorded one and was asked again."""
    stub.reset()
    k = _warm_up_logs(stub, tmp_path)
    try:
        k.run(*LOAD)
        k.run(JOIN_WARM_UP, cell_id="wait")  # one by one: the warm-up is done before the document cell runs
        assert "Unrecognized" not in k.run(*DOC).plain
        assert messages.FOOTER_TURN.within(k.run(*ASK).plain, turn=1)
        sent = len(api_requests(stub))
        k.km.restart_kernel(now=True)
        k.kc.wait_for_ready(timeout=60)
        [_, doc, ask] = _run_all(k, LOAD, DOC, ASK)
        assert "Unrecognized GOOGLE_GENAI_HTTP_CLIENT" in doc.plain
        assert messages.REPLAYED_FOOTER.within(ask.plain, turn=1) and len(api_requests(stub)) == sent
    finally:
        k.close()


# The cell waits until the kernel logged the unknown comm: ipykernel 7 routes a comm message in its shell
# channel thread, which logs "No such comm" at once, while the cell still runs (a logger's filter runs first).
WAITS_FOR_THE_LOG = (
    "import logging, threading\n"
    "logged = threading.Event()\n"
    "logging.getLogger('Comm').addFilter(lambda record: logged.set() or True)\n"
    "print('printed by the cell', flush=True)\n"
    "assert logged.wait(30)"
)


@pytest.mark.kernel
def test_the_kernels_line_on_a_message_to_an_unknown_comm_while_a_cell_runs_is_not_its_output(kernel, stub):
    """Seen in VS Code in CI after Restart and Run All: the frontend messaged a widget of the old kernel while the
    document cell ran. The kernel's line about it goes out with no request as its parent, so no frontend shows it
    under the cell: it is not the cell's output, and the turn sends none of it (the replay would miss on it)."""
    running = kernel.start(WAITS_FOR_THE_LOG, cell_id="doc")
    kernel.wait_until(lambda k: "printed by the cell" in k.so_far(running).plain, running)
    kernel.kc.shell_channel.send(kernel.kc.session.msg("comm_msg", {"comm_id": "0" * 32, "data": {}}))
    doc = kernel.finish(running)
    assert doc.reply["content"]["status"] == "ok"
    kernel.run("%%gemini_ask\nwhat does it print?", cell_id="m1")
    [entry] = current_payload(api_requests(stub)[-1])["outputs"]
    assert entry["text"] == "printed by the cell\n"


def test_outputs_of_a_cell_that_is_not_there_is_one_line(kernel, stub):
    kernel.run("x = 1", cell_id="doc")
    run = kernel.run("%%gemini_ask --outputs nosuchcell\nhm?", cell_id="m1")
    assert run.stderr.strip().startswith("genai_magics: --outputs nosuchcell: no such cell")
    assert api_requests(stub) == []


@pytest.mark.parametrize("mode", MODES)
def test_a_key_printed_in_an_output_is_never_sent(kernel, stub, mode):
    kernel.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
    kernel.run("import os\nprint('key:', os.environ['GEMINI_API_KEY'])", cell_id="leak")
    kernel.run("%%gemini_ask\nwhat did it print?", cell_id="m1")
    request = api_requests(stub)[-1]
    assert current_payload(request)["outputs"][0]["text"] == "key: ***\n"
    assert FAKE_KEY not in json.dumps(request["json"])


@pytest.mark.parametrize("mode", MODES)
def test_a_3_mb_image_is_downscaled_in_one_line(kernel, stub, tmp_path, mode):
    kernel.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
    big = png(1000, 1000, noise=True)
    assert len(big) > 3_000_000
    show(kernel, tmp_path, big, text="noise")
    run = kernel.run("%%gemini_ask\nwhat is this?", cell_id="m1")
    request = api_requests(stub)[-1]
    [small] = current_images(request)
    assert len(small) <= 1_000_000 and small[:8] == b"\x89PNG\r\n\x1a\n"
    lines = [line for line in run.plain.splitlines() if "max_image_bytes" in line]
    assert len(lines) == 1 and "downscaled to" in lines[0] and f"{len(big):,} bytes" in lines[0]
    entry = current_payload(request)["outputs"][1]
    assert entry["sha256"] == sha(small) and entry["width"] < 1000


def test_images_of_the_stable_head_go_into_the_explicit_cache(kernel, stub, tmp_path):
    kernel.run("%config GeminiMagics.model = 'gemini-3.7-flash'", cell_id="cfg")
    plot = png(64, 48, seed=9)
    (tmp_path / "p.png").write_bytes(plot)
    big = "".join(f"def step_{i}(v, limit={i}):\n    return [x * {i} for x in v if x < limit]\n\n" for i in range(320))
    kernel.run(big + "from IPython.display import Image, display\ndisplay(Image(filename='p.png'))\n", cell_id="big")
    kernel.run("%%gemini_ask\nWhat does the plot show?", cell_id="m1")
    kernel.run("%%gemini_ask\nAnd step_4?", cell_id="m2")
    create, first, second = [r for r in stub.requests if r["kind"] in ("cache.create", "stream")]
    assert create["kind"] == "cache.create" and [i["sha256"] for i in create["images"]] == [sha(plot)]
    assert stub.caches[0]["tokens"] >= 258  # the cache counts the image's tokens with the document
    assert first["images"] == [] and second["images"] == []  # the requests name the cache, not the image again
    assert first["json"]["cachedContent"] == second["json"]["cachedContent"] == stub.caches[0]["name"]


def test_more_images_than_max_images_wait_for_the_next_turn_and_say_so(kernel, stub, tmp_path):
    images = [png(8, 8, seed=i) for i in range(3)]
    for i, data in enumerate(images):
        (tmp_path / f"i{i}.png").write_bytes(data)
    kernel.run("%config GeminiMagics.max_images = 2", cell_id="cfg")
    # each turn's images in its own request: a cache (the head filled up to the minimum) would hold them
    kernel.run("%config GeminiMagics.cache = 'off'", cell_id="cfg-cache")
    kernel.run(
        "from IPython.display import Image, display\nfor i in range(3):\n    display(Image(filename=f'i{i}.png'))",
        cell_id="three",
    )
    first = kernel.run("%%gemini_ask\nwhat are these?", cell_id="m1")
    assert current_images(api_requests(stub)[-1]) == images[:2]
    assert messages.IMAGES_WAIT.render(count=1, cap=2, then=messages.IMAGES_LATER.render()) in first.plain
    kernel.run("%%gemini_ask\nand the last one?", cell_id="m2")
    assert current_images(api_requests(stub)[-1]) == images[2:]


def test_dry_run_names_the_image_by_size_and_estimates_its_tokens(kernel, stub, tmp_path):
    show(kernel, tmp_path, png(64, 48, seed=4))
    run = kernel.run("%%gemini_ask --dry-run\nwhy?", cell_id="m1")
    assert api_requests(stub) == []
    assert "1 image(s) sent: ~1,120 input tokens by Gemini's rule for images (an estimate" in run.plain
    assert "characters of base64>" in run.plain and base64.b64encode(png(64, 48, seed=4)).decode()[:30] not in run.plain


@pytest.mark.kernel
@pytest.mark.parametrize("mode", MODES)
def test_after_a_restart_the_same_plot_replays_and_a_changed_plot_goes_live(stub, tmp_path, mode):
    from test_replay import restart, start

    stub.reset()
    notebook = tmp_path / "work.ipynb"
    k = start(stub, notebook)
    try:
        k.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
        show(k, tmp_path, png(16, 16, seed=1))
        k.run("%%gemini_ask\nwhat does the plot show?", cell_id="m1")
        k.run("%%gemini_ask\nand the colour?", cell_id="m2")
        record = record_path("user", notebook)
        assert base64.b64encode(png(16, 16, seed=1)).decode()[:40] not in text_on_disk(record)  # hashes, not bytes
        assert sha(png(16, 16, seed=1)) in text_on_disk(record)
        before = len(api_requests(stub))

        restart(k)
        k.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
        show(k, tmp_path, png(16, 16, seed=1))  # Run All: the same plot
        replayed = k.run("%%gemini_ask\nwhat does the plot show?", cell_id="m1")
        assert messages.REPLAYED_FOOTER.within(replayed.plain, turn=1) and len(api_requests(stub)) == before
        show(k, tmp_path, png(16, 16, seed=2))  # the plot changed before the second ask
        live = k.run("%%gemini_ask\nand the colour?", cell_id="m2")
        assert messages.FOOTER_TURN.within(live.plain, turn=2) and len(api_requests(stub)) == before + 1
        assert current_images(api_requests(stub)[-1]) == [png(16, 16, seed=2)]
    finally:
        k.close()


def test_vscode_cells_send_their_plot_and_its_helper_code_shows_nothing_of_its_own(kernel, stub, tmp_path):
    from helpers.vscode import VSCode

    vs = VSCode(kernel)
    vs.open_notebook()
    plot = png(24, 24, seed=8)
    (tmp_path / "v.png").write_bytes(plot)
    vs.run("from IPython.display import Image, display\nprint('shown in VS Code')\ndisplay(Image('v.png'))", 0)
    vs.run_silently("print('the variable viewer asks something')")  # VS Code's own request: nobody's output
    vs.run("%%gemini_ask\nwhat is in the plot?", 1)
    request = api_requests(stub)[-1]
    [text, image] = current_payload(request)["outputs"]
    assert text["text"] == "shown in VS Code\n[image 1]\n" and image["sha256"] == sha(plot)
    assert current_images(request) == [plot]


def test_a_dataframe_goes_as_its_table_and_widgets_scripts_and_html_are_named_not_sent(kernel, stub):
    kernel.run(
        "import pandas as pd, ipywidgets\nfrom IPython.display import HTML, Javascript, display\n"
        "display(HTML('<b>bold words</b>'))\ndisplay(Javascript('alert(1)'))\n"
        "display(ipywidgets.IntSlider(value=3))\n"
        "pd.DataFrame({'city': ['Oslo', 'Rome'], 'temp': [4, 18]})",
        cell_id="frame",
    )
    kernel.run("%%gemini_ask\nwhich city is warmer?", cell_id="m1")
    [text] = current_payload(api_requests(stub)[-1])["outputs"]
    lines = text["text"].splitlines()
    assert lines[:2] == [
        messages.OUTPUT_NOT_SENT.render(kind="text/html"),
        messages.OUTPUT_NOT_SENT.render(kind="application/javascript"),
    ]
    assert messages.WIDGET_NOT_SENT.matches(lines[2], prefixed=False) and "IntSlider(value=3" in lines[2]
    assert lines[3:] == [" | city | temp", "0 | Oslo | 4", "1 | Rome | 18"]  # the DataFrame's HTML table, as rows
    assert "bold words" not in text["text"] and "alert" not in text["text"]


def test_bang_output_and_a_crlf_csv_reach_the_model_whole(kernel, stub, tmp_path):
    """Issue 26, case 2: IPython's ``!`` output ends its lines with \\r\\n; a CSV with Windows line ends too."""
    html = "".join(f"<p>row {i}: {'x' * 40}</p>\n" for i in range(34)) + "</html>\n"
    (tmp_path / "chart.html").write_text(html)
    (tmp_path / "data.csv").write_bytes(b"a,b\r\n1,2\r\n3,4\r\n")
    shown = kernel.run("!cat chart.html", cell_id="bang")
    assert "\r\n" in shown.stdout  # the kernel really sent CRLF lines (what the bug erased)
    kernel.run("%%gemini_ask --outputs bang\nwhat is in it?", cell_id="m1")
    [text] = current_payload(api_requests(stub)[-1])["outputs"]
    assert text["text"] == html
    kernel.run("print(open('data.csv', newline='').read(), end='')", cell_id="csv")
    kernel.run("%%gemini_ask --outputs csv\nand this?", cell_id="m2")
    [text] = current_payload(api_requests(stub)[-1])["outputs"]
    assert text["text"] == "a,b\n1,2\n3,4\n"


def test_an_undecodable_file_name_in_a_listing_is_sent_escaped_and_the_turn_goes_on(kernel, stub, tmp_path):
    """Issue 26, case 3: os.listdir() gives a Latin-1 byte as a lone surrogate; printed, it is one output."""
    (tmp_path / b"caf\xe9.csv".decode("utf-8", "surrogateescape")).write_text("x")
    kernel.run("import os, sys\nfor name in sorted(os.listdir('.')):\n    sys.stdout.write(name + '\\n')", cell_id="ls")
    asked = kernel.run("%%gemini_ask\nwhich files are there?", cell_id="m1")
    assert "genai_magics:" not in asked.stderr, asked.stderr
    [text] = current_payload(api_requests(stub)[-1])["outputs"]
    assert "caf\\udce9.csv" in text["text"]
    assert "1 ask on In[" in kernel.run("%gemini history", cell_id="h").stdout  # recorded


@pytest.mark.parametrize("mode", MODES)
def test_an_html_page_labelled_png_is_left_out_in_one_line_and_the_turn_goes_on(kernel, stub, tmp_path, mode):
    """Issue 26, case 5: valid base64 of an HTML error page, labelled image/png; a real PNG beside it goes as its
    bytes exactly."""
    kernel.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
    page = base64.b64encode(b"<html><body>502 Bad Gateway</body></html>").decode()
    real = png(16, 8, seed=3)
    kernel.run(
        "from IPython.display import display\n"
        f"display({{'image/png': {page!r}, 'text/plain': '<chart>'}}, raw=True)\n"
        f"display({{'image/png': {base64.encodebytes(real).decode()!r}, 'text/plain': '<chart>'}}, raw=True)\n",
        cell_id="plot",
    )
    asked = kernel.run("%%gemini_ask\nwhat does the chart show?", cell_id="m1")
    notes = [line for line in asked.plain.splitlines() if messages.IMAGE_NOT_WHAT_IT_SAYS.matches(line)]
    assert len(notes) == 1 and "genai_magics:" not in asked.stderr, asked.plain + asked.stderr
    assert messages.IMAGE_NOT_WHAT_IT_SAYS.parse(notes[0]) == {
        "label": "In[3]",
        "position": "1",
        "mime_type": "image/png",
    }
    request = api_requests(stub)[-1]
    assert current_images(request) == [real]  # the cell's bytes exactly (base64 with line breaks, as nbformat's)
    assert "1 ask on In[" in kernel.run("%gemini history", cell_id="h").stdout
