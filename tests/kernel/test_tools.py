"""The functions the model calls, in real kernels: a cell's images as parts of a function result, and a
tool-using turn replayed after a restart with zero requests while its results would be the same.

Real kernels (jupyter_client), the real SDK over real HTTP to the stand-in, real record files.
"""

from __future__ import annotations

import base64
import time

import pytest
from helpers.discovery import problems
from helpers.fake_frontend import FakeCell, FakeFrontend
from helpers.hashing import sha
from helpers.images import png
from helpers.kernel import FAKE_KEY, notebook_kernel, restart
from helpers.wire import api_requests
from test_corpus import corpus_cells
from test_outputs import show

from genai_magics import messages
from genai_magics.engine.tools import CALL_SECONDS

pytestmark = pytest.mark.kernel
MODES = ["contents", "interactions"]


def function_images(request: dict) -> list[bytes]:
    """The image bytes a request's function results carry (contents: inlineData parts of the
    functionResponse; interactions: image items of the function_result)."""
    body = request["json"]
    found: list[str] = []
    if request["kind"] == "interaction.create":
        for item in body["input"] if isinstance(body["input"], list) else []:
            if item.get("type") == "function_result" and isinstance(item["result"], list):
                found += [r["data"] for r in item["result"] if r.get("type") == "image"]
    else:  # google-genai 3.6 writes these parts snake_case (proto JSON takes both)
        for part in body["contents"][-1]["parts"]:
            inline = [
                p.get("inlineData") or p["inline_data"] for p in part.get("functionResponse", {}).get("parts", [])
            ]
            found += [i["data"] for i in inline]
    return [base64.urlsafe_b64decode(d) for d in found]


@pytest.mark.parametrize("mode", MODES)
def test_cell_outputs_sends_a_cells_images_as_parts_of_its_result(kernel, stub, tmp_path, mode):
    kernel.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
    image = png(64, 48, seed=7)
    show(kernel, tmp_path, image)
    kernel.run("x = 1", cell_id="other")  # the plot is not the document: only the function sends it
    stub.script_tools([[{"name": "cell_outputs", "args": {"ref": "plot"}}]])
    shown = kernel.run("%%gemini_ask --no-outputs\nwhat does the plot show?", cell_id="m1")
    assert shown.stderr == ""
    first, answer = api_requests(stub)
    assert function_images(answer) == [image]
    (result,) = answer["tool_results"]
    assert result["images"] == 1
    entry = result["response"]["images"][0]
    assert entry["sha256"] == sha(image) and (entry["width"], entry["height"]) == (64, 48)
    assert answer["input_tokens"] >= 258  # the stand-in read the image
    if mode == "contents":
        assert problems(dict(answer["json"]), "GenerateContentRequest") == []
    # asked again: the server chain holds it, nothing is sent twice; the contents-mode transcript kept a
    # marker of it after its turn (issue 33), so it goes whole again
    stub.script_tools([[{"name": "cell_outputs", "args": {"ref": "plot"}}]])
    kernel.run("%%gemini_ask --no-outputs\nand now?", cell_id="m2")
    again = api_requests(stub)[-1]
    if mode == "interactions":
        assert function_images(again) == [] and again["tool_results"][0]["response"]["unchanged"] is True
    else:
        assert function_images(again) == [image] and "text" in again["tool_results"][0]["response"]


@pytest.mark.parametrize("mode", MODES)
def test_a_turn_with_calls_replays_with_zero_requests_until_a_result_would_differ(stub, tmp_path, mode):
    stub.reset()
    nb = tmp_path / "work.ipynb"
    k = notebook_kernel(stub, nb)
    try:
        k.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
        k.run("data = {'a': 1, 'b': 2}", cell_id="c1")
        stub.script_tools([[{"name": "inspect_variable", "args": {"name": "data"}}]])
        live = k.run("%%gemini_ask\nwhat is in data?", cell_id="m1")
        assert messages.TOOL_CALLED.within(live.plain)
        sent = len(api_requests(stub))
        assert sent == 2
        # Restart & Run All: the same cells, the same result: shown from the record, no request
        restart(k)
        k.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
        k.run("data = {'a': 1, 'b': 2}", cell_id="c1")
        replayed = k.run("%%gemini_ask\nwhat is in data?", cell_id="m1")
        assert len(api_requests(stub)) == sent, "a replay sent requests"
        assert (
            messages.REPLAYED_FOOTER.within(replayed.plain, turn=1)
            and "Function results read: inspect_variable" in replayed.plain
        )
        # replay 'only' with the same inputs: still nothing sent
        restart(k)
        k.run("%config GeminiMagics.replay = 'only'", cell_id="cfg0")
        k.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
        k.run("data = {'a': 1, 'b': 2}", cell_id="c1")
        only = k.run("%%gemini_ask\nwhat is in data?", cell_id="m1")
        assert len(api_requests(stub)) == sent and only.stderr == ""
        # data changed: the function would answer otherwise, so replay 'only' refuses to ask ...
        restart(k)
        k.run("%config GeminiMagics.replay = 'only'", cell_id="cfg0")
        k.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
        k.run("data = {'a': 1, 'b': 3}", cell_id="c1")
        refused = k.run("%%gemini_ask\nwhat is in data?", cell_id="m1")
        assert len(api_requests(stub)) == sent
        assert messages.PREFIX + messages.REPLAY_ONLY.render(why="").split(":")[0] in refused.stderr
        # ... and replay 'auto' runs it live
        restart(k)
        k.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
        k.run("data = {'a': 1, 'b': 3}", cell_id="c1")
        stub.script_tools([[{"name": "inspect_variable", "args": {"name": "data"}}]])
        again = k.run("%%gemini_ask\nwhat is in data?", cell_id="m1")
        assert len(api_requests(stub)) == sent + 2 and "replayed" not in again.plain
        assert "'b': 3" in api_requests(stub)[-1]["tool_results"][0]["response"]["text"]
    finally:
        k.close()


# -- issue 32: every call bounded in time and in what it shows; labels shown, never hashed --------------
PROSE = "handson-ml2_09_unsupervised_learning.ipynb"  # 38+ prose lines on which re's backtracking explodes


def call(function: str, **args: str) -> dict:
    return {"name": function, "args": args}


def responses(stub) -> list[dict]:
    return [r["response"] for req in api_requests(stub) for r in req["tool_results"]]


def test_search_cells_is_bounded_on_a_prose_heavy_public_notebook(stub, tmp_path):
    """32.1: ``^(\\w+\\s*)+=`` ("where is something assigned?") took re 69 s on one 48-character line of
    prose; a pattern that explodes even for the bounded matcher stops at the call's bound, an error
    result the model reads and one line in the cell."""
    stub.reset()
    cells = [FakeCell("setup", "%load_ext genai_magics"), *corpus_cells(PROSE), FakeCell("ask", "%%gemini_ask\nwhere?")]
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}
    with FakeFrontend(cells=cells, env=env, cwd=str(tmp_path), path=PROSE) as ff:
        ff.execute("setup")
        stub.script_tools(
            [[call("search_cells", pattern=r"^(\w+\s*)+=")], [call("search_cells", pattern=r"(\w|\w\w)+$")]]
        )
        started = time.monotonic()
        shown = ff.execute("ask", timeout=90)
        took = time.monotonic() - started
    assigned, exploded = responses(stub)
    assert int(assigned["text"].split(": ")[1].split(" ")[0]) > 10, assigned["text"][:200]  # "…: 97 cell(s)"
    bound = messages.TOOL_PAST_BOUND.render(name="search_cells", seconds=CALL_SECONDS)
    assert exploded == {"error": bound}
    assert messages.TOOL_FAILED.render(call=r"search_cells((\w|\w\w)+$)", error=bound) in shown.plain
    assert took < CALL_SECONDS + 20, took


LAZY = """
import lazy_object_proxy
loads = []
def load_model():
    loads.append(1)
    return [0.5] * 3
model = lazy_object_proxy.Proxy(load_model)
class ImproperlyConfigured(Exception):
    pass
class LazySettings:  # as django.conf's: reading __class__ asks for the settings, which are not configured
    @property
    def __class__(self):
        raise ImproperlyConfigured("Requested settings, but settings are not configured.")
settings = LazySettings()
data = {"a": 1}
"""


def test_list_variables_lists_beside_lazy_objects_without_loading_them(kernel, stub):
    """32.7: one lazy object used to turn the whole listing into one error, and a lazy proxy was loaded by
    being listed: a value is classified by type(), each variable guarded on its own."""
    kernel.run(LAZY, cell_id="lazy")
    stub.script_tools([[call("list_variables")]])
    shown = kernel.run("%%gemini_ask\nwhat is there?", cell_id="m1")
    assert shown.stderr == ""
    (listing,) = responses(stub)
    lines = listing["text"].splitlines()
    assert [line.split(":")[0] for line in lines] == ["data", "loads", "model", "settings"], lines
    assert lines[0].startswith("data: dict len=1 size=") and lines[3].startswith(
        "settings: __main__.LazySettings size="
    )
    assert kernel.run("print(loads)", cell_id="check").stdout == "[]\n"  # the model was never loaded


def test_inspect_variable_stops_at_its_bound_on_a_repr_that_never_ends(kernel, stub):
    """A ``__repr__`` is user code: the call's alarm stops it at the bound, an error result, and the
    next call of the round still answers."""
    kernel.run(
        "class Slow:\n    def __repr__(self):\n        import time\n        time.sleep(600)\n\nslow = Slow()\nx = 1"
    )
    stub.script_tools([[call("inspect_variable", name="slow"), call("inspect_variable", name="x")]])
    started = time.monotonic()
    shown = kernel.run("%%gemini_ask\nwhat is slow?", cell_id="m1", timeout=120)
    assert time.monotonic() - started < CALL_SECONDS + 20
    slow, x = responses(stub)
    bound = messages.TOOL_PAST_BOUND.render(name="inspect_variable", seconds=CALL_SECONDS)
    assert slow == {"error": bound} and x["text"] == "int\n1"
    assert messages.TOOL_FAILED.render(call="inspect_variable(slow)", error=bound) in shown.plain


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_turn_replays_after_run_all_renumbered_its_cells(stub, tmp_path, mode):
    """32.3: read_cell, cell_outputs and search_cells name cells by In[n]: that label is shown beside the
    result, never hashed into it, so Run All (which numbers the cells anew) replays the turn."""
    stub.reset()
    k = notebook_kernel(stub, tmp_path / "work.ipynb")
    functions = [call("read_cell", ref="c-b"), call("cell_outputs", ref="c-b"), call("search_cells", pattern="total")]
    try:
        k.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
        k.run("x = 1", cell_id="c-a")
        k.run("x = 2", cell_id="c-a")  # run twice by hand: c-b's number is one more than after Run All
        k.run("total = x + 1\nprint(total)", cell_id="c-b")
        stub.script_tools([functions])
        k.run("%%gemini_ask\nwhat is total?", cell_id="m1")
        sent = len(api_requests(stub))
        restart(k)  # Restart & Run All: every cell once
        k.run(f"%config GeminiMagics.state = {mode!r}", cell_id="cfg")
        k.run("x = 2", cell_id="c-a")
        k.run("total = x + 1\nprint(total)", cell_id="c-b")
        replayed = k.run("%%gemini_ask\nwhat is total?", cell_id="m1")
        assert len(api_requests(stub)) == sent, "the turn went live after Run All"
        assert messages.REPLAYED_FOOTER.within(replayed.plain, turn=1)
        read, _, found = responses(stub)  # cell_outputs: unchanged, the request itself carried c-b's output
        assert read["label"].startswith("In[") and found["label"] == f"{read['label']} id=c-b"
    finally:
        k.close()


def test_each_call_line_stands_before_the_answer_it_led_to(kernel, stub):
    """32's UX: the ``→ function(arg)`` lines used to land under the final answer."""
    kernel.run("data = {'a': 1}", cell_id="c1")
    stub.script_tools([[call("inspect_variable", name="data")], [call("list_variables")]])
    shown = kernel.run("%%gemini_ask\nwhat is in data?", cell_id="m1")
    area = [text for text in shown.area if text]
    lines = [i for i, text in enumerate(area) if text.startswith("→ ")]
    answer = next(i for i, text in enumerate(area) if "Stub answer to: what is in data?" in text)
    assert len(lines) == 2 and lines[-1] < answer, area
    assert area[lines[0]].startswith("→ inspect_variable(data)") and area[lines[1]].startswith("→ list_variables()")
    assert not any(text.endswith("…") for text in area), area  # no "asking…" left behind
