"""The functions the model calls, in real kernels: a cell's images as parts of a function result, and a
tool-using turn replayed after a restart with zero requests while its results would be the same.

Real kernels (jupyter_client), the real SDK over real HTTP to the stand-in, real record files.
"""

from __future__ import annotations

import base64

import pytest
from helpers.discovery import problems
from helpers.hashing import sha
from helpers.images import png
from helpers.kernel import notebook_kernel, restart
from helpers.wire import api_requests
from test_outputs import show

from genai_magics import messages

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
