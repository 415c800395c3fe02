"""The model asks the notebook (issue 25): six read-only functions, each result sent once, shown and bounded.

The extension in an in-process IPython shell, the real SDK over real HTTP to the stand-in, which plays
a model calling the functions it is scripted to call (``StubServer.script_tools``), in both state modes.
"""

from __future__ import annotations

import json

import pytest
from helpers.discovery import problems
from helpers.documents import BIG, MODEL
from helpers.footer import footer_line
from helpers.kernel import FAKE_KEY
from helpers.wire import api_requests, calling_off, current_payload
from traitlets import TraitError

from genai_magics import messages
from genai_magics.engine.redaction import MASK
from genai_magics.engine.tools import TOOL_NAMES, UNCHANGED_CHARS
from genai_magics.sources.variables import summarize

STATES = ["contents", "interactions"]
SETUP = "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})"


def call(function: str, **args: str) -> dict:
    return {"name": function, "args": args}


def results(stub) -> list[dict]:
    """Every function result the turns sent, in order: id, name, response."""
    return [r for req in api_requests(stub) for r in req["tool_results"]]


def ask(shell, state: str, prompt: str = "what is df?", flags: str = "", cell_id: str = "m"):
    return shell.run(f"%%gemini_ask --state {state} {flags}\n{prompt}", cell_id=cell_id)


@pytest.fixture
def notebook(magic_shell):
    # the shell is IPython's one instance: other tests' conversations and %config settings outlive them
    magic_shell.run("%gemini reset --all", cell_id="reset")
    settings = ("secondary_context_chars", "max_var_chars", "max_output_chars", "tools", "max_tool_calls", "model")
    for name in (*settings, "max_turn_cost"):
        setattr(magic_shell.magics, name, magic_shell.magics.trait_defaults(name))
    magic_shell.run(SETUP, cell_id="c1")
    magic_shell.run("print('hello from c2')", cell_id="c2")
    return magic_shell


def fail(shell) -> None:
    """The cell whose exception last_error reads (in the test itself: pytest forgets it after a fixture)."""
    shell.run("1/0", cell_id="c3")


@pytest.mark.parametrize(
    ("state", "arguments"), [("contents", "whole"), ("interactions", "whole"), ("interactions", "delta")]
)
def test_every_function_answers_what_the_flags_would_send_and_shows_one_line_each(notebook, stub, state, arguments):
    rounds = [
        [call("inspect_variable", name="df"), call("cell_outputs", ref="c2")],
        [
            call("last_error"),
            call("list_variables"),
            call("read_cell", ref="c1"),
            call("search_cells", pattern="hello"),
        ],
    ]
    stub.script_tools(rounds, arguments)
    fail(notebook)
    shown = ask(notebook, state)
    assert shown.stderr == ""
    requests = api_requests(stub)
    assert len(requests) == 3 and all(r["status"] == 200 for r in requests)
    got = {r["name"]: r["response"] for r in results(stub)}
    assert list(got) == [
        "inspect_variable",
        "cell_outputs",
        "last_error",
        "list_variables",
        "read_cell",
        "search_cells",
    ]
    df = notebook.ip.user_ns["df"]
    assert got["inspect_variable"]["text"] == summarize(df, "df", 2_000)  # what --vars df sends
    assert got["cell_outputs"]["text"] == "hello from c2\n" and got["cell_outputs"]["label"].startswith("In[")
    assert got["last_error"]["text"].startswith("ZeroDivisionError raised in In[")
    assert "\ndf: pandas.DataFrame shape=(3, 2) size=" in "\n" + got["list_variables"]["text"]
    assert "pd:" not in got["list_variables"]["text"]  # a module is no variable
    # the label beside the text, not in it (issue 32.3: a hash holds no execution count)
    assert got["read_cell"]["text"] == f"id=c1\n{SETUP}" and got["read_cell"]["label"].startswith("In[")
    assert "\nid=c2\n  1: print('hello from c2')" in got["search_cells"]["text"]
    assert got["search_cells"]["label"].startswith("In[") and got["search_cells"]["label"].endswith(" id=c2")
    # one line per call, as it happened, with the size of what the model got
    for label, response in zip(
        ["inspect_variable(df)", "cell_outputs(c2)", "last_error()", "list_variables()", "read_cell(c1)"],
        got.values(),
        strict=False,
    ):
        line = messages.TOOL_CALLED.render(
            call=label, chars=len(json.dumps(response, ensure_ascii=False, separators=(",", ":")))
        )
        assert line in shown.plain
    # the stand-in's answer names the results it read: they reached the model
    assert "Function results read: last_error (whole), list_variables (whole)" in shown.plain
    turn = notebook.magics.session.conversations["default"].history[-1]
    assert turn.usage.requests == 3 and len(turn.tool_rounds) == 2
    footer = footer_line("\n".join(b.get("text/plain", "") for b in shown.bundles), turn=1)
    assert messages.FOOTER_REQUESTS.within(footer, count=3) and messages.FOOTER_CALLS.render(count=6) in footer


@pytest.mark.parametrize("state", STATES)
def test_a_result_the_model_holds_is_short_and_a_changed_one_goes_whole(notebook, stub, state):
    stub.script_tools([[call("inspect_variable", name="df")], [call("inspect_variable", name="df")]])
    ask(notebook, state, "first", cell_id="m1")
    first, again = results(stub)
    assert "text" in first["response"] and again["response"]["unchanged"] is True
    assert again["response"]["sent"] == "earlier in this turn"
    assert len(json.dumps(again["response"])) < UNCHANGED_CHARS
    stub.clear()
    stub.script_tools([[call("inspect_variable", name="df")]])
    shown = ask(notebook, state, "second", cell_id="m2")
    (held,) = results(stub)
    if state == "contents":  # turn 1's result faded to a marker (issue 33): the model no longer holds it
        assert "text" in held["response"]
    else:
        assert held["response"]["unchanged"] is True and held["response"]["sent"] == "in turn 1"
        assert (
            messages.TOOL_UNCHANGED.render(
                call="inspect_variable(df)",
                chars=len(json.dumps(held["response"], ensure_ascii=False, separators=(",", ":"))),
            )
            in shown.plain
        )
    notebook.run("df['c'] = 0", cell_id="c4")  # df changed: it goes whole
    stub.clear()
    stub.script_tools([[call("inspect_variable", name="df")]])
    ask(notebook, state, "third", cell_id="m3")
    (changed,) = results(stub)
    assert "c:int64" in changed["response"]["text"]


@pytest.mark.parametrize("state", STATES)
def test_vars_after_inspect_variable_sends_nothing_new(notebook, stub, state):
    stub.script_tools([[call("inspect_variable", name="df")]])
    ask(notebook, state, "first", cell_id="m1")
    stub.clear()
    ask(notebook, state, "second", flags="--vars df", cell_id="m2")
    (request,) = api_requests(stub)
    # contents: the result faded to a marker after its turn (issue 33), so the flag sends df again
    assert ("variables" in current_payload(request)) == (state == "contents")


@pytest.mark.parametrize("state", STATES)
def test_bad_calls_get_error_results_the_model_reads_never_a_traceback(notebook, stub, state):
    notebook.magics.tools = ["inspect_variable", "read_cell", "search_cells"]  # (%config would outlive the test)
    stub.script_tools(
        [
            [
                call("inspect_variable", name="nope"),
                call("read_cell", ref="99999999"),  # no In[n] so high, however many cells the session ran
                call("last_error"),  # not offered now
                {"name": "inspect_variable", "args": {"name": 5}},  # garbage: a number
                {"name": "read_cell", "args": {}},  # garbage: no ref
                {"name": "search_cells", "args": {"pattern": "x", "more": 1}},
                call("search_cells", pattern="('hello"),  # no regular expression: searched as text
            ]
        ]
    )
    shown = ask(notebook, state)
    assert shown.stderr == "" and "Traceback" not in shown.plain
    got = [r["response"] for r in results(stub)]
    assert [set(r) for r in got[:6]] == [{"error"}] * 6
    assert got[0]["error"] == messages.TOOL_NO_VARIABLE.render(name="nope")
    assert got[1]["error"] == messages.NO_CELL_WITH_COUNT_OR_ID.render(flag="read_cell", ref="99999999")
    assert "last_error" in got[2]["error"] and "offered" in got[2]["error"]
    assert "searched as text" in got[6]["text"] and "hello from c2" in got[6]["text"]
    assert messages.TOOL_FAILED.render(call="inspect_variable(nope)", error=got[0]["error"]) in shown.plain
    assert api_requests(stub)[0]["tools_declared"] == ["inspect_variable", "read_cell", "search_cells"]


def test_an_unknown_name_in_the_tools_option_is_refused(magic_shell):
    expected = messages.UNKNOWN_TOOLS.render(names="run_code", known=", ".join(TOOL_NAMES))
    with pytest.raises(TraitError) as refused:
        magic_shell.magics.tools = ["read_cell", "run_code"]
    assert str(refused.value) == expected
    assert magic_shell.magics.tools == list(TOOL_NAMES)


@pytest.mark.parametrize("state", STATES)
def test_max_tool_calls_then_the_model_answers_without_tools(notebook, stub, state):
    notebook.magics.max_tool_calls = 2
    fail(notebook)
    stub.script_tools(
        [[call("list_variables")], [call("inspect_variable", name="df"), call("last_error")], [call("list_variables")]]
    )
    shown = ask(notebook, state)
    assert messages.TOOL_LIMIT.render(count=2) in shown.plain
    requests = api_requests(stub)
    assert len(requests) == 3  # the third request answers; the script's third round is never played
    over = results(stub)[-1]["response"]
    assert set(over) == {"error"} and "limit" in over["error"]
    body = requests[-1]["json"]
    if state == "contents":
        assert body["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    else:
        assert body["generation_config"]["tool_choice"] == "none"
    assert "Stub answer to: what is df?" in shown.plain


@pytest.mark.parametrize("state", STATES)
def test_no_tools_sends_no_declarations_and_the_dry_run_shows_them(notebook, stub, state):
    ask(notebook, state, flags="--no-tools")
    (request,) = api_requests(stub)
    assert request["tools_declared"] == [] and "tools" not in request["json"]
    shown = ask(notebook, state, flags="--dry-run", cell_id="m2")
    (bundle,) = [b for b in shown.bundles if "dry run" in b.get("text/plain", "")]
    body = json.loads(bundle["text/plain"].split("\n", 1)[1])
    if state == "contents":
        names = [d["name"] for d in body["config"]["tools"][0]["function_declarations"]]
    else:
        names = [t["name"] for t in body["tools"]]
    assert names == list(TOOL_NAMES)  # in their fixed order


@pytest.mark.parametrize("state", STATES)
def test_the_key_never_reaches_a_result_nor_a_part_of_it(notebook, stub, state):
    # the key right at the summary's cap: masked first, then capped, so no part of it is left
    notebook.run(f"secret = 'x' * 40 + {FAKE_KEY!r}", cell_id="k")
    notebook.magics.max_var_chars = 70
    stub.script_tools([[call("inspect_variable", name="secret"), call("read_cell", ref="k"), call("last_error")]])
    notebook.run("raise ValueError('y' * 980 + secret[40:])", cell_id="raise")  # the key across the message's cap
    ask(notebook, state)
    for request in api_requests(stub):
        text = json.dumps(request["json"])
        assert FAKE_KEY not in text and FAKE_KEY[:12] not in text
    variable, cell, error = (r["response"]["text"] for r in results(stub))
    assert MASK in cell and MASK in variable  # masked before the cap cut the summary
    assert "ValueError: yyy" in error and FAKE_KEY[:6] not in error


def test_the_model_content_goes_back_with_its_thought_signature(notebook, stub):
    stub.script_tools([[call("list_variables"), call("last_error")]])
    fail(notebook)
    ask(notebook, "contents")
    first, second = api_requests(stub)
    calls = second["json"]["contents"][-2]
    assert calls["role"] == "model"
    assert calls["parts"][0]["thoughtSignature"] and [p["functionCall"]["id"] for p in calls["parts"]] == [
        c["id"] for c in first["tool_calls"]
    ]
    answers = second["json"]["contents"][-1]["parts"]
    assert [(a["functionResponse"]["id"], a["functionResponse"]["name"]) for a in answers] == [
        (c["id"], c["name"]) for c in first["tool_calls"]
    ]


def test_every_body_the_stand_in_receives_is_of_googles_schema(notebook, stub):
    """Google's discovery document (Vertex AI v1beta1): every generateContent and cachedContents body,
    with functions, their results, an explicit cache holding the declarations (images: test_tools.py)."""
    notebook.magics.model = MODEL
    notebook.run(BIG, cell_id="big")
    stub.script_tools([[call("inspect_variable", name="df"), call("cell_outputs", ref="c2")], [call("last_error")]])
    fail(notebook)
    ask(notebook, "contents", cell_id="m1")
    stub.script_tools([[call("inspect_variable", name="df")]])
    notebook.run("%%gemini_edit --cell big\nadd a docstring", cell_id="m2")
    checked = 0
    for request in stub.requests:
        schema = {
            "stream": "GenerateContentRequest",
            "generate": "GenerateContentRequest",
            "cache.create": "CachedContent",
        }.get(request["kind"])
        if schema is None:
            continue
        body = dict(request["json"])
        assert problems(body, schema) == [], request["kind"]
        checked += 1
    kinds = [r["kind"] for r in stub.requests]
    assert checked >= 5 and "cache.create" in kinds, kinds
    cache = next(r["json"] for r in stub.requests if r["kind"] == "cache.create")
    assert [d["name"] for d in cache["tools"][0]["functionDeclarations"]] == list(TOOL_NAMES)


@pytest.mark.parametrize("lost", ["signature", "id"])
def test_the_stand_in_refuses_a_round_sent_back_without_its_signature_or_with_another_id(stub, lost):
    """As Gemini 3 refuses it: what keeps the transport honest about sending the model's content as received."""
    import urllib.error
    import urllib.request

    from genai_magics.stub.tools import MISSING_SIGNATURE, signature

    part = {
        "functionCall": {"id": "call_1", "name": "list_variables", "args": {}},
        "thoughtSignature": signature("call_1"),
    }
    answer = {"functionResponse": {"id": "call_1", "name": "list_variables", "response": {"text": "x"}}}
    if lost == "signature":
        del part["thoughtSignature"]
    else:
        answer["functionResponse"]["id"] = "call_2"
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [part]},
            {"role": "user", "parts": [answer]},
        ]
    }
    request = urllib.request.Request(
        f"{stub.url}/v1beta/models/m:generateContent",
        data=json.dumps(body).encode(),
        headers={"x-goog-api-key": FAKE_KEY, "content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    message = json.loads(refused.value.read())["error"]["message"]
    assert (message == MISSING_SIGNATURE) == (lost == "signature")


def test_an_interrupt_in_a_call_records_nothing_of_the_turn(notebook, stub):
    notebook.run(
        "class Stuck:\n    def __repr__(self):\n        raise KeyboardInterrupt\n\nstuck = Stuck()", cell_id="s"
    )
    stub.script_tools([[call("list_variables")], [call("inspect_variable", name="stuck")]])
    shown = ask(notebook, "contents")
    assert messages.STOPPED.shown() in shown.stderr
    assert "default" not in notebook.magics.session.conversations  # the first turn never happened
    assert len(api_requests(stub)) == 2  # the call's answer was never sent


@pytest.mark.parametrize("state", STATES)
def test_at_the_turn_cap_a_tool_loop_ends_with_the_model_answering_without_functions(notebook, stub, state):
    """issue 28's max_turn_cost is checked before every request of the loop, with what the earlier ones cost;
    issue 34.6: a request whose calls could not be answered under the cap goes with calling off and the model
    answers (before: the turn stopped before the request answering them)."""
    from genai_magics.gemini import budget
    from genai_magics.gemini.pricing import price_for

    shown = ask(notebook, state, flags="--dry-run", cell_id="d")
    (bundle,) = [b for b in shown.bundles if "dry run" in b.get("text/plain", "")]
    first = budget.estimate(
        price_for(notebook.magics.model), json.loads(bundle["text/plain"].split("\n", 1)[1]), [], ""
    )
    notebook.magics.max_turn_cost = first * 1.05  # the first request goes, the one answering its calls cannot
    stub.script_tools([[call("list_variables")], [call("list_variables")]])
    answered = ask(notebook, state)
    (request,) = api_requests(stub)
    assert calling_off(request) and answered.stderr == "" and "Stub answer to: what is df?" in answered.plain
    assert messages.BUDGET_ANSWER_NOW.within(answered.plain, name="max_turn_cost")
    assert len(notebook.magics.session.conversations["default"].history) == 1  # the answer is recorded


@pytest.mark.parametrize("state", STATES)
def test_search_cells_answers_nothing_about_a_key_and_its_pattern_is_masked_everywhere(notebook, stub, state):
    """32.2: the match ran on the unmasked source ("1 cell(s)" vs "0": a yes/no oracle for the key), and a
    pattern holding the key stayed unmasked in the call's line, the record and every later request."""
    notebook.run(f"key = {FAKE_KEY!r}", cell_id="k")
    prefix, whole = FAKE_KEY[:6], FAKE_KEY
    stub.script_tools([[call("search_cells", pattern=f"key = '{prefix}"), call("search_cells", pattern=whole)]])
    shown = ask(notebook, state, "where is the key?")
    by_prefix, by_key = (r["response"] for r in results(stub))
    assert by_prefix["text"].startswith("searched as regular expression: 0 cell(s)")  # the model saw ***
    assert f"key = '{MASK}'" in by_key["text"]  # the pattern was masked before it ran: it finds the mask
    assert FAKE_KEY not in shown.plain and f"search_cells({MASK})" in shown.plain
    stub.clear()
    ask(notebook, state, "and now?", cell_id="m2")  # a later request carries the earlier call back
    assert all(FAKE_KEY not in json.dumps(r["json"]) for r in api_requests(stub))
    turn = notebook.magics.session.conversations["default"].history[0]
    assert FAKE_KEY not in json.dumps([r.call.args for r in turn.tool_rounds[0].results])
    assert FAKE_KEY not in json.dumps(turn.tool_rounds[0].model_content)


@pytest.mark.parametrize("state", STATES)
def test_a_cell_only_run_again_is_unchanged_for_the_model(notebook, stub, state):
    """32.3: read_cell's text carried In[n]: a cell run again, same source, went whole again."""
    stub.script_tools([[call("read_cell", ref="c1"), call("search_cells", pattern="DataFrame")]])
    ask(notebook, state, "first", cell_id="m1")
    before = [r["response"]["sha256"] for r in results(stub)]
    notebook.run(SETUP, cell_id="c1")  # the same source, a new execution count
    stub.clear()
    stub.script_tools([[call("read_cell", ref="c1"), call("search_cells", pattern="DataFrame")]])
    ask(notebook, state, "second", cell_id="m2")
    read, found = (r["response"] for r in results(stub))
    if state == "contents":  # turn 1's results faded to markers (issue 33): whole again, the same to the hash
        assert [read["sha256"], found["sha256"]] == before and "text" in read and "text" in found
    else:
        assert read["unchanged"] is True and found["unchanged"] is True


@pytest.mark.parametrize("state", STATES)
def test_the_stand_in_looks_at_a_variable_an_ask_names_as_code(notebook, stub, state):
    """Unscripted, the stand-in does what the README says the model does: a question naming as code a name
    its document does not show lists the variables, then inspects the one named, then answers with it."""
    notebook.run("def parse(s):\n    return int(s)", cell_id="p")
    notebook.run("orders = [' 42 ', 'x']", cell_id="o")
    stub.reset()
    shown = ask(notebook, state, "Which of `orders` would parse() reject?", "--cell p", cell_id="m1")
    calls = [[c["name"] for c in r["tool_calls"]] for r in api_requests(stub)]
    assert calls == [["list_variables"], ["inspect_variable"], []]
    assert api_requests(stub)[1]["tool_calls"][0]["args"] == {"name": "orders"}
    assert messages.TOOL_CALLED.within(shown.plain, call="list_variables()")
    assert messages.TOOL_CALLED.within(shown.plain, call="inspect_variable(orders)")
    assert "[' 42 ', 'x']" in shown.plain  # the answer says what it looked at
    assert messages.FOOTER_CALLS.within(footer_line(shown.plain), count=2)
    # a name the notebook does not hold: listed, not inspected; one the document shows, or no name as code: no call
    for prompt, expected in [
        ("And `nothing_here`?", [["list_variables"], []]),
        ("Why does `parse` use int?", [[]]),
        ("what is orders?", [[]]),
    ]:
        before = len(api_requests(stub))  # the stand-in keeps the server-side chain: no reset
        ask(notebook, state, prompt, cell_id="m2")
        assert [[c["name"] for c in r["tool_calls"]] for r in api_requests(stub)[before:]] == expected, prompt
    before = len(api_requests(stub))
    notebook.run("%%gemini_edit\nValidate each of `orders`.", cell_id="m3")  # an edit: the stand-in calls nothing
    assert [[c["name"] for c in r["tool_calls"]] for r in api_requests(stub)[before:]] == [[]]
