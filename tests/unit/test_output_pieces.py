"""Cell outputs as pieces, without a kernel: rendering, caps, the record, compaction, the capture's taps."""

from __future__ import annotations

import base64
import json
import sys

import pytest
from helpers.hashing import sha
from helpers.images import png

from genai_magics import messages
from genai_magics.engine.cells import Document
from genai_magics.engine.contents import build_contents
from genai_magics.engine.conversation import Conversation
from genai_magics.engine.outputs import (
    ImagePiece,
    Output,
    OutputPiece,
    cell_output_pieces,
    held_after_restore,
    html_table_text,
    image_size,
    image_tokens,
)
from genai_magics.engine.record import NotebookRecord, dumps
from genai_magics.engine.replay import RecordedConversation, TurnKey
from genai_magics.persistence.schema import loads
from genai_magics.sources.outputs import OutputCapture, fit_images, over_image_cap


def bundle(data: bytes) -> dict:
    return {"image/png": base64.b64encode(data).decode(), "text/plain": "<Figure size 640x480 with 1 Axes>"}


def test_text_tables_and_what_is_only_named():
    outputs = [
        Output("stream", {"text/plain": "epoch 1\r epoch 2\r epoch 3\nloss 0.1\n"}, "stdout"),
        Output("stream", {"text/plain": "careful\n"}, "stderr"),
        Output("execute_result", {"text/plain": "42"}),
        Output(
            "display_data", {"text/html": "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>x</td></tr></table>"}
        ),
        Output("display_data", {"text/html": "<b>bold</b>", "text/plain": "<IPython.core.display.HTML object>"}),
        Output("display_data", {"application/javascript": "alert(1)", "text/plain": "<JS>"}),
        Output(
            "display_data",
            {"application/vnd.jupyter.widget-view+json": {"model_id": "m"}, "text/plain": "IntSlider(value=3)"},
        ),
    ]
    [text] = cell_output_pieces("c1", "In[2]", outputs, 4_000)
    assert text.text == (
        " epoch 3\nloss 0.1\n[stderr] careful\n42\na | b\n1 | x\n[a text/html output, not sent]\n"
        "[a application/javascript output, not sent]\n[a widget, not sent: IntSlider(value=3)]\n"
    )
    assert "alert" not in text.text and "<b>" not in text.text
    assert html_table_text("<p>no table</p>") is None


def test_text_is_capped_and_says_so():
    [text] = cell_output_pieces("c", "In[1]", [Output("stream", {"text/plain": "x" * 10_000}, "stdout")], 500)
    assert len(text.text) < 600 and text.text.endswith(messages.OUTPUT_CUT.render(cap=500))


def test_each_image_has_its_own_sha_and_the_text_does_not_change_with_it():
    one, two = png(20, 10, seed=1), png(20, 10, seed=2)
    first = cell_output_pieces("c", "In[1]", [Output("display_data", bundle(one))], 100)
    second = cell_output_pieces("c", "In[9]", [Output("display_data", bundle(two))], 100)
    assert [p.sha256 for p in first] == [first[0].sha256, sha(one)]
    assert first[0].sha256 == second[0].sha256 and first[1].sha256 != second[1].sha256
    assert first[1].key == second[1].key == "outputs:c#image1"  # the cell's id, never its run count
    assert image_size(one) == (20, 10)


def test_image_token_rule():
    assert image_tokens(300, 300, "gemini-2.5-flash") == 258
    assert image_tokens(1000, 800, "gemini-2.0-flash") == 4 * 258
    assert image_tokens(1000, 800, "gemini-3.8-flash") == 1_120


def test_too_big_image_without_pillow_is_refused_in_one_line(monkeypatch):
    big = png(600, 600, noise=True)
    pieces = cell_output_pieces("c", "In[3]", [Output("display_data", bundle(big))], 100)
    monkeypatch.setitem(sys.modules, "PIL", None)  # an import of PIL now fails, as without Pillow
    fitted = fit_images(pieces, 100_000)
    assert [type(p) for p in fitted.pieces] == [OutputPiece]
    [note] = fitted.notes.values()
    assert note == messages.IMAGE_NEEDS_PILLOW.render(label="In[3]", position=1, size=len(big), cap=100_000)


def test_too_big_image_with_pillow_is_downscaled():
    pytest.importorskip("PIL")
    big = png(600, 600, noise=True)
    pieces = cell_output_pieces("c", "In[3]", [Output("display_data", bundle(big))], 100)
    fitted = fit_images(pieces, 100_000)
    small = fitted.pieces[1]
    assert isinstance(small, ImagePiece) and small.data is not None and len(small.data) <= 100_000
    assert small.sha256 == sha(small.data) and small.width < 600
    assert "downscaled to" in fitted.notes[small.key]


def test_images_over_max_images_wait():
    pieces = cell_output_pieces("c", "In[1]", [Output("display_data", bundle(png(4, 4, seed=i))) for i in range(5)], 99)
    assert [p.key for p in over_image_cap(pieces, 3)] == ["outputs:c#image4", "outputs:c#image5"]


def plotted_turn(image: bytes, state_mode: str = "contents") -> Conversation:
    conv = Conversation("default", state_mode=state_mode)  # type: ignore[arg-type]
    doc = Document("c", "In[1]", "plt.hist(x)")
    plan = conv.plan_turn(
        "ask", "why skewed?", doc, cell_output_pieces("c", "In[1]", [Output("display_data", bundle(image))], 99)
    )
    conv.commit(plan, "because", interaction_id="int_1" if state_mode == "interactions" else None)
    return conv


def test_record_keeps_hashes_and_sizes_not_image_bytes():
    image = png(30, 20, seed=3)
    conv = plotted_turn(image)
    text = dumps(NotebookRecord("x.ipynb", 0.0, conversations={"default": RecordedConversation(conv)}))
    assert base64.b64encode(image).decode()[:40] not in text and sha(image) in text
    restored = loads(text).conversations["default"].conversation
    piece = restored.history[0].pieces[1]
    assert isinstance(piece, ImagePiece) and piece.data is None and piece.sha256 == sha(image)
    assert (piece.width, piece.height, piece.nbytes) == (30, 20, len(image))
    # contents mode: the kernel's transcript has no bytes now, so the image goes again; it is a marker meanwhile
    assert "outputs:c#image1" not in restored.sync.context_hashes
    plan = restored.plan_turn("ask", "and now?", Document("c", "In[1]", "plt.hist(x)"), [])
    contents = build_contents(restored.history, plan)
    assert all(len(c["parts"]) == 1 for c in contents)
    assert json.loads(contents[0]["parts"][0]["text"])["supersededOutputsSha256"] == [sha(image)]


def test_after_a_restart_a_server_chain_still_holds_the_image():
    hashes = {"outputs:c#image1": "a", "outputs:c": "b", "lastError": "c"}
    assert held_after_restore(hashes, "interactions") == hashes
    assert held_after_restore(hashes, "contents") == {"outputs:c": "b", "lastError": "c"}


def test_a_changed_plot_is_another_turn():
    def key(image: bytes) -> TurnKey:
        pieces = tuple(cell_output_pieces("c", "In[1]", [Output("display_data", bundle(image))], 99))
        return TurnKey.of("ask", "why?", "m", "contents", (), "magic", "doc-sha", pieces)

    assert key(png(4, 4, seed=1)) == key(png(4, 4, seed=1))
    assert key(png(4, 4, seed=1)) != key(png(4, 4, seed=2))


class _Stream:
    def __init__(self) -> None:
        self.written: list[str] = []

    def write(self, text: str) -> int:
        self.written.append(text)
        return len(text)


class _Publisher:
    def __init__(self) -> None:
        self.shown: list[dict] = []

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
        self.shown.append(data)

    def clear_output(self, wait=False):
        self.shown.clear()


class _Hook:
    def __init__(self) -> None:
        self.results: list[dict] = []

    def write_format_data(self, format_dict, md_dict=None):
        self.results.append(format_dict)


class _Shell:
    def __init__(self) -> None:
        self.display_pub, self.displayhook = _Publisher(), _Hook()


def test_capture_taps_see_everything_and_change_nothing(monkeypatch):
    out, err, shell = _Stream(), _Stream(), _Shell()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    capture = OutputCapture()
    capture.install(shell)
    capture.start("a")
    print("hello")
    shell.display_pub.publish({"text/plain": "shown"}, transient={"display_id": "d1"})
    shell.displayhook.write_format_data({"text/plain": "7"})
    capture.start(None)  # a frontend's helper code: its output is nobody's
    print("helper")
    capture.start("b")
    shell.display_pub.publish({"text/plain": "updated"}, transient={"display_id": "d1"}, update=True)
    print("in b")
    assert out.written == ["hello", "\n", "helper", "\n", "in b", "\n"]  # the user sees what they saw before
    assert [o.data["text/plain"] for o in capture.outputs("a")] == ["hello\n", "updated", "7"]
    assert [o.data["text/plain"] for o in capture.outputs("b")] == ["in b\n"]
    shell.display_pub.clear_output()
    assert capture.outputs("b") == []
    capture.uninstall()
    print("after")
    assert "write" not in vars(out) and "publish" not in vars(shell.display_pub)
    assert capture.outputs("b") == []


def test_only_what_goes_out_with_the_running_cells_request_is_its_output(monkeypatch):
    """ipykernel's streams and publisher tell each write's parent request; a frontend shows under a cell only what
    has that cell's request as its parent."""
    out, shell = _Stream(), _Shell()
    monkeypatch.setattr(sys, "stdout", out)
    capture = OutputCapture()
    capture.install(shell)
    out.parent_header = shell.display_pub.parent_header = {"msg_id": "run-a"}
    capture.start("a")
    print("from a")
    shell.display_pub.publish({"text/plain": "shown by a"})
    out.parent_header = shell.display_pub.parent_header = {}  # a kernel thread's
    print("No such comm: 0")
    shell.display_pub.publish({"text/plain": "no request's"})
    out.parent_header = shell.display_pub.parent_header = {"msg_id": "comm"}
    print("a click's")
    shell.display_pub.clear_output()  # a click's clear is not the cell's either
    assert [o.data["text/plain"] for o in capture.outputs("a")] == ["from a\n", "shown by a"]
    assert "".join(out.written).count("\n") == 3, "the user still sees every write"
    capture.uninstall()


def test_record_images_keeps_the_bytes_and_the_model_keeps_holding_them():
    image = png(30, 20, seed=4)
    conv = plotted_turn(image)
    record = NotebookRecord("x.ipynb", 0.0, conversations={"default": RecordedConversation(conv)}, images=True)
    restored = loads(dumps(record)).conversations["default"].conversation
    piece = restored.history[0].pieces[1]
    assert isinstance(piece, ImagePiece) and piece.data == image
    assert restored.sync.context_hashes["outputs:c#image1"] == sha(image)  # held: not sent again
    doc = Document("c", "In[1]", "plt.hist(x)")
    again = cell_output_pieces("c", "In[1]", [Output("display_data", bundle(image))], 99)
    plan = restored.plan_turn("ask", "and now?", doc, again)
    assert plan.pieces == () and len(plan.omitted) == 2
    parts = build_contents(restored.history, plan)[0]["parts"]
    assert base64.b64decode(parts[1]["inlineData"]["data"]) == image  # the transcript still shows it


def test_a_display_update_reaches_every_cell_showing_it_and_none_that_ran_again():
    shell = _Shell()
    capture = OutputCapture()
    capture.install(shell)
    for cell in ("a", "b"):
        capture.start(cell)
        shell.display_pub.publish({"text/plain": f"progress in {cell}"}, transient={"display_id": "bar"})
    capture.start("c")
    shell.display_pub.publish({"text/plain": "100%"}, transient={"display_id": "bar"}, update=True)
    assert [o.data["text/plain"] for o in capture.outputs("a") + capture.outputs("b")] == ["100%", "100%"]
    capture.start("a")  # ran again: its old outputs are gone, and so is their display
    shell.display_pub.publish({"text/plain": "done"}, transient={"display_id": "bar"}, update=True)
    assert capture.outputs("a") == [] and [o.data["text/plain"] for o in capture.outputs("b")] == ["done"]
    capture.start("b")
    shell.display_pub.clear_output()
    assert capture._displays == {}, "no display id is remembered for outputs that are gone"
    capture.uninstall()
