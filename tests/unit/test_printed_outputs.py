"""What strangers' notebooks print (issue 26): nothing of the key leaves, nothing printed is erased.

The fast layer: the extension in an in-process IPython shell, the real SDK over HTTP to the
stand-in, the record on disk at a named path. What a kernel adds (IPython's ``!`` output) is in
``test_outputs.py``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers.images import png
from helpers.kernel import FAKE_KEY
from helpers.properties import examples
from helpers.record import text_on_disk
from helpers.wire import api_requests, current_payload
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from genai_magics import messages
from genai_magics.engine.outputs import ImagePiece, Output, cell_output_pieces, payload_entry, shown_text
from genai_magics.engine.redaction import redact
from genai_magics.engine.text import clip, cut, one_line
from genai_magics.sources.outputs import fit_images
from genai_magics.sources.variables import summarize

# Characters the key does not hold: any 8 characters of the key found anywhere came from the key.
FILLER = "bcdfghjlmnopqruvwxBCDGHJ =/?&:,.;"
PIECES = {FAKE_KEY[i : i + 8] for i in range(len(FAKE_KEY) - 7)}


def leaked(text: str) -> list[str]:
    return sorted(p for p in PIECES if p in text)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.integers(0, 1_100),
    after=st.integers(0, 30),
    output_cap=st.integers(1, 1_200),
    context_cap=st.integers(1, 1_300),
    var_cap=st.integers(1, 1_200),
    seed=st.text(FILLER, min_size=1, max_size=20),
)
# the cuts of the issue, each falling inside the key (its first 14 characters before the cut): the
# outputs cap, the other cells' cap, the --vars cap, the traceback's source line (200) and message (1,000)
@example(before=100, after=20, output_cap=115, context_cap=4_000, var_cap=2_000, seed="x")
@example(before=100, after=20, output_cap=4_000, context_cap=180, var_cap=2_000, seed="x")
@example(before=100, after=20, output_cap=4_000, context_cap=4_000, var_cap=128, seed="x")
@example(before=167, after=20, output_cap=4_000, context_cap=4_000, var_cap=2_000, seed="x")
@example(before=985, after=20, output_cap=4_000, context_cap=4_000, var_cap=2_000, seed="x")
def test_no_piece_of_the_key_is_sent_or_recorded_whatever_the_cut(
    magic_shell, stub, tmp_path, before, after, output_cap, context_cap, var_cap, seed
):
    stub.reset()
    record = tmp_path / "shared.json"
    head = (seed * (before // len(seed) + 1))[:before]
    text = f"{head}{FAKE_KEY}{FILLER[:after]}"
    for line in (
        f"GeminiMagics.max_output_chars = {output_cap}",
        f"GeminiMagics.secondary_context_chars = {context_cap}",
        f"GeminiMagics.max_var_chars = {var_cap}",
        f"GeminiMagics.record_location = {str(record)!r}",
    ):
        magic_shell.run(f"%config {line}")
    magic_shell.run(f"settings = {text!r}\nprint(settings)", cell_id="dump")  # an output and another cell
    magic_shell.run(f"raise ValueError({text!r})", cell_id="boom")  # the traceback's line and message
    magic_shell.run("def f():\n    return 1\n", cell_id="doc")
    shown = magic_shell.run("%%gemini_ask --new --cell doc --outputs dump --vars settings --error\nwhy?", cell_id="m")
    assert shown.stderr == "", shown.stderr
    (request,) = api_requests(stub)
    payload = current_payload(request)
    assert {"outputs", "variables", "lastError", "secondaryContext"} <= payload.keys()  # every cap was there
    assert leaked(json.dumps(stub.requests)) == []
    assert leaked(text_on_disk(record)) == []  # .prev too, before its flush ends
    magic_shell.magics.session.keeper.store.wait()
    assert leaked(text_on_disk(record)) == []


# -- the line ends and the key over what the corpus notebooks printed -----------------------------
CORPUS = Path(__file__).parents[1] / "corpus"


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def corpus_outputs() -> list[list[Output]]:
    """Every corpus cell's outputs that hold text, as the kernel's capture notes them (an error's traceback
    is not a cell's output there)."""
    cells = []
    for path in sorted(CORPUS.glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            outs = []
            for out in cell.get("outputs", []):
                if out["output_type"] == "stream":
                    outs.append(Output("stream", {"text/plain": _text(out["text"])}, out["name"]))
                elif out["output_type"] in ("execute_result", "display_data"):
                    outs.append(Output(out["output_type"], {k: _text(v) for k, v in out["data"].items()}))
            if any("text/plain" in o.data for o in outs):
                cells.append(outs)
    return cells


CORPUS_OUTPUTS = corpus_outputs()


def with_text(outputs: list[Output], change: Callable[[str], str]) -> list[Output]:
    """The outputs with ``change`` made to every text (streams, text/plain, markdown)."""
    texts = ("text/plain", "text/markdown")
    return [replace(o, data={k: change(v) if k in texts else v for k, v in o.data.items()}) for o in outputs]


def test_the_corpus_prints_text_to_test_on():
    assert len(CORPUS_OUTPUTS) >= 20 and any(o.kind == "stream" for c in CORPUS_OUTPUTS for o in c)


@settings(max_examples=examples(400), deadline=None)
@given(cell=st.sampled_from(CORPUS_OUTPUTS), cap=st.integers(1, 5_000))
@example(cell=[Output("stream", {"text/plain": "a,b\n1,2\n3,4\n"}, "stdout")], cap=4_000)  # the CRLF CSV
def test_crlf_line_ends_show_what_lf_ones_show_over_the_corpus(cell, cap):
    """Every text a corpus notebook printed, its lines ended with \\r\\n (IPython's ``!``, a Windows file),
    is sent as with \\n: nothing erased."""
    lf = cell_output_pieces("c", "In[1]", cell, cap)
    crlf = cell_output_pieces(
        "c", "In[1]", with_text(cell, lambda t: t.replace("\r\n", "\n").replace("\n", "\r\n")), cap
    )
    assert [p.text for p in crlf] == [p.text.replace("\r\n", "\n") for p in lf]


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cell=st.sampled_from(CORPUS_OUTPUTS), at=st.floats(0, 1), cap=st.integers(1, 5_000), odd=st.booleans())
@example(cell=[Output("stream", {"text/plain": "x" * 100 + "\n"}, "stdout")], at=0.5, cap=60, odd=False)
def test_the_key_is_masked_before_any_cut_and_undecodable_text_escaped_over_the_corpus(monkeypatch, cell, at, cap, odd):
    """The key put anywhere in what a corpus cell printed, any cap: no 8 characters of it in the pieces, what
    the payload carries or the record keeps; a lone surrogate there (an undecodable file name) goes escaped."""
    monkeypatch.setenv("GEMINI_API_KEY", FAKE_KEY)

    def insert(text: str) -> str:
        i = int(len(text) * at)
        return text[:i] + FAKE_KEY + ("\udce9" if odd else "") + text[i:]

    pieces = cell_output_pieces("c", "In[1]", with_text(cell, insert), cap)
    texts = [p.text for p in pieces]
    assert leaked(json.dumps([payload_entry(p) for p in pieces] + texts)) == []
    assert all(t.encode("utf-8") for t in texts)  # no lone surrogate: each is text the API takes


@pytest.mark.parametrize(
    "text, shown",
    [
        ("a\r\nb\r\n", "a\nb\n"),  # Windows line ends, IPython's ! output
        ("10%\r50%\r100%\n", "100%\n"),  # a progress bar
        ("Downloading 50%\rDone\n", "Doneloading 50%\n"),  # a shorter rewrite leaves the rest, as on screen
        ("last\r", "last"),  # a lone \r with nothing after it erases nothing
        ("x\r\r\ny", "x\ny"),  # \r\r\n (Python on Windows writing \r\n in text mode) is one line end
    ],
)
def test_a_line_end_is_crlf_or_lf_and_only_a_lone_cr_writes_over_the_line(text, shown):
    assert shown_text(text) == shown
    [piece] = cell_output_pieces("c", "In[1]", [Output("stream", {"text/plain": text}, "stdout")], 4_000)
    assert piece.text == shown


def test_image_bytes_that_are_not_what_their_mime_type_says_are_left_out_in_one_line_each():
    """Issue 26, case 5, without a kernel: base64 of an HTML page labelled image/png, a PNG labelled image/jpeg,
    text that is not base64 (it was decoded by skipping characters, into garbage); a real PNG in base64 with
    nbformat's line breaks goes as its bytes exactly."""
    real = png(16, 8, seed=3)
    bundles = [
        {"image/png": base64.b64encode(b"<html><body>502 Bad Gateway</body></html>").decode()},
        {"image/jpeg": base64.b64encode(real).decode()},
        {"image/png": "<html><body>502</body></html>"},
        {"image/png": base64.encodebytes(real).decode()},
    ]
    outputs = [Output("display_data", {**b, "text/plain": "<chart>"}) for b in bundles]
    found = fit_images(cell_output_pieces("c", "In[3]", outputs, 4_000), 1_000_000)
    [image] = [p for p in found.pieces if isinstance(p, ImagePiece)]
    assert image.data == real and image.position == 4 and (image.width, image.height) == (16, 8)
    assert sorted(found.notes.values()) == sorted(
        messages.IMAGE_NOT_WHAT_IT_SAYS.render(label="In[3]", position=k, mime_type=m)
        for k, m in ((1, "image/png"), (2, "image/jpeg"), (3, "image/png"))
    )


def test_a_record_at_a_symbolic_link_stays_a_link_over_asks(magic_shell, stub, tmp_path):
    """Issue 26, case 4, through the magics: the named path is a link to a shared record."""
    shared = tmp_path / "shared" / "team.json"
    shared.parent.mkdir()
    link = tmp_path / "team.json"
    link.symlink_to(shared)
    magic_shell.run(f"%config GeminiMagics.record_location = {str(link)!r}")
    magic_shell.run("x = 1", cell_id="doc")
    for prompt in ("first?", "second?"):
        shown = magic_shell.run(f"%%gemini_ask --cell doc\n{prompt}", cell_id=f"m-{prompt}")
        assert shown.stderr == "", shown.stderr
        magic_shell.magics.session.keeper.store.wait()
        assert link.is_symlink() and prompt in shared.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared", "team.json"]


@settings(max_examples=examples(800), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.integers(0, 200), after=st.integers(0, 50), limit=st.integers(-1, 300), how=st.sampled_from("cjo"))
@example(before=100, after=10, limit=115, how="c")  # a cut inside the key
@example(before=100, after=10, limit=115, how="j")
def test_every_cut_of_engine_text_masks_the_key_first(monkeypatch, before, after, limit, how):
    """engine/text.py's cuts, which every cap uses: what any of them leaves holds the key whole or nothing of
    it, so masking where it goes (a payload, the record: as a whole) leaves no 8 characters of it."""
    monkeypatch.setenv("GEMINI_API_KEY", FAKE_KEY)
    text = "b" * before + FAKE_KEY + "c" * after
    do = {"c": clip, "j": cut, "o": one_line}[how]
    assert leaked(redact(do(text, limit))) == []


@pytest.mark.parametrize("kind", ["dataframe", "series", "deque"])
def test_a_summary_cut_by_pandas_or_reprlib_holds_no_piece_of_the_key(monkeypatch, kind):
    """--vars summaries that a library cuts itself (pandas at its column width, reprlib in a string's middle):
    each string is masked before that cut."""
    import collections

    pd = __import__("pandas")
    monkeypatch.setenv("GEMINI_API_KEY", FAKE_KEY)
    url = "https://example.org/api?key=" + FAKE_KEY + "&q=1"  # 28 characters before the key: cut inside it
    value = {
        "dataframe": lambda: pd.DataFrame({"url": [url] * 3}),
        "series": lambda: pd.Series([url * 3] * 2),
        "deque": lambda: collections.deque([url * 40]),
    }[kind]()
    summary = summarize(value, "v", 2_000)
    assert "***" in summary and leaked(summary) == []
