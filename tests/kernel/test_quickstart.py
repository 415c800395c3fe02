"""The shipped notebooks (notebooks/), executed by pytest-notebook (nbclient) on the stand-in: each runs top to
bottom as shipped, as Run All does, and leaves the folder as it was."""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import pytest
from helpers.footer import footer_line
from helpers.hashing import sha
from helpers.kernel import FAKE_KEY
from helpers.lazy import lazy_import
from helpers.wire import api_requests, current_payload

from genai_magics import messages

nb_regression = lazy_import("pytest_notebook.nb_regression")

pytestmark = pytest.mark.kernel  # every test here starts a kernel (directly or through nbclient)

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def shipped() -> dict[str, bytes]:
    """The notebooks/ folder: each file's name and bytes."""
    return {p.name: p.read_bytes() for p in sorted(NOTEBOOK.parent.iterdir())}


def ran_as_shipped(nb, before: dict[str, bytes]) -> None:
    """Every code cell ran, in order (an error stops a run unless its cell is tagged ``raises-exception``),
    and nothing in notebooks/ changed or appeared (the record is the user's, not the checkout's)."""
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    assert None not in counts and counts == sorted(counts), counts
    assert shipped() == before


def _text(cell) -> str:
    parts = []
    for out in cell.outputs:
        parts.append(
            out.get("text") or out.get("data", {}).get("text/markdown") or out.get("data", {}).get("text/plain", "")
        )
    return "\n".join(parts)


def test_quickstart_runs_on_the_stand_in(stub):
    stub.reset()
    before = shipped()
    fixture = nb_regression.NBRegressionFixture(
        exec_timeout=180,
        exec_env={**os.environ, "GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY},
        # outputs hold ports, widget ids and timings: the run must succeed, the outputs are checked below
        diff_ignore=("/cells/*/outputs", "/cells/*/execution_count", "/metadata"),
    )
    result = fixture.check(str(NOTEBOOK))
    ran_as_shipped(result.nb_final, before)
    cells = {}  # by first line: the first such cell
    for c in result.nb_final.cells:
        cells.setdefault(c.source.split("\n", 1)[0], c)
    edit = _text(cells["%%gemini_edit"])
    assert "Stub edit for: Add input validation" in edit and "In[" in edit and "sent" in edit
    assert "Applied" in _text(cells["%gemini apply"])
    assert messages.DOCUMENT_SYNCHRONIZED.within(_text(cells["%%gemini_ask"]))  # the applied proposal is held
    assert _text(cells["%gemini undo"]).startswith("Undone for the conversation")
    assert _text(cells["%gemini discard"]).startswith("Discarded")
    follow = _text(cells["%%gemini_ask -c server"])
    assert messages.DOCUMENT_SYNCHRONIZED.within(follow)
    # the 2,000-line cell: sent once into a context cache, the follow-up served from it
    first_big, second_big = (c for c in result.nb_final.cells if c.source.startswith("%%gemini_ask -c big"))
    assert messages.DOCUMENT_CACHED.within(_text(first_big))
    second_footer = footer_line(_text(second_big))
    assert re.search(r"\(1[89],\d{3} cached\)", second_footer) and messages.BILL_SAVED.within(second_footer)
    assert messages.DOCUMENT_SYNCHRONIZED.within(second_footer)
    table = _text(cells["%gemini tokens"])
    assert all(f"conversation '{name}'" in table for name in ("default", "server", "big"))
    # unscripted, the stand-in looks at the variable the question names: list, inspect, answer
    looked = _text(next(c for c in result.nb_final.cells if c.source.endswith("`orders` would parse() reject?")))
    assert messages.TOOL_CALLED.within(looked, call="list_variables()")
    assert messages.TOOL_CALLED.within(looked, call="inspect_variable(orders)")
    assert "[' 42 ', '7', 'x', '3.5']" in looked and messages.FOOTER_CALLS.within(looked, count=2)
    kinds = [r["kind"] for r in api_requests(stub)]
    assert kinds == ["stream"] * 3 + ["interaction.create"] * 2 + ["stream"] * 5, kinds
    calls = [[c["name"] for c in r["tool_calls"]] for r in api_requests(stub)]
    assert calls[5:8] == [["list_variables"], ["inspect_variable"], []] and not any(calls[:5] + calls[8:])
    assert [r["kind"] for r in stub.requests].count("cache.create") == 1
    server_follow = current_payload(api_requests(stub)[4])
    assert server_follow["sourceSynchronized"] is True and "currentSource" not in server_follow
    assert FAKE_KEY not in json.dumps(result.nb_final)


def test_context_notebook_sends_error_and_variables_once(stub):
    stub.reset()
    before = shipped()
    fixture = nb_regression.NBRegressionFixture(
        exec_timeout=180,
        exec_env={**os.environ, "GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY},
        diff_ignore=("/cells/*/outputs", "/cells/*/execution_count", "/metadata"),
    )
    result = fixture.check(str(NOTEBOOK.with_name("context.ipynb")))
    ran_as_shipped(result.nb_final, before)
    # the notebook raises on purpose, to ask about it (its cell tagged raises-exception: Run All goes on)
    [raised] = [c for c in result.nb_final.cells if any(o.output_type == "error" for o in c.get("outputs", []))]
    assert raised.source == 'share(sales, "west")'
    requests = api_requests(stub)
    sent = [current_payload(r) for r in requests]
    assert [("lastError" in p, "variables" in p, "outputs" in p) for p in sent] == [
        (True, False, False),
        (False, True, False),
        (False, False, False),
        (False, True, False),
        (False, False, True),  # the plot cell's printed text and its figure
        (False, False, False),  # the follow-up about the same plot sends neither
    ]
    assert sent[0]["lastError"].startswith("IndexError raised in In[")
    assert "price" in sent[3]["variables"]["sales"]
    # a real matplotlib figure: the PNG the notebook shows is the image part the request carried
    plot = next(c for c in result.nb_final.cells if "plt.show()" in c.source)
    shown = base64.b64decode(next(o for o in plot.outputs if "image/png" in o.get("data", {}))["data"]["image/png"])
    [text, image] = sent[4]["outputs"]
    assert text["text"] == "units: [12, 7, 30]\n[image 1]\n"
    assert image["sha256"] == sha(shown) and image["mimeType"] == "image/png"
    [part] = [p for p in requests[4]["json"]["contents"][-1]["parts"] if "inlineData" in p or "inline_data" in p]
    inline = part.get("inlineData") or part["inline_data"]
    assert base64.urlsafe_b64decode(inline["data"].replace("+", "-").replace("/", "_")) == shown
    assert [i["sha256"] for i in requests[5]["current_images"]] == []
    # docs/frontends.md quotes the two asks' footers about the figure as this notebook prints them
    frontends = (NOTEBOOK.parents[1] / "docs" / "frontends.md").read_text(encoding="utf-8")
    asks = [c for c in result.nb_final.cells if c.source.startswith("%%gemini_ask")][-2:]
    for cell in asks:
        shown = footer_line(_text(cell))
        assert f"\n{shown}\n" in frontends, shown
