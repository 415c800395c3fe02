"""Parallel calls (issue 33.4): the model asks for several functions in one answer, and they are
answered together in ONE request, with the same ids and names, in order, in both state modes. The
stand-in plays Gemini: it scripts several functionCall parts in one answer (only the first with the
thought signature) and refuses an answer that leaves one of them for a later request.

The extension in an in-process IPython shell, the real SDK over real HTTP to the stand-in.
"""

from __future__ import annotations

import pytest
from google import genai
from google.genai import errors, types
from helpers.footer import footer_line
from helpers.wire import api_requests

from genai_magics import messages
from genai_magics.gemini.errors import status_code
from genai_magics.gemini.models import DEFAULT_MODEL
from genai_magics.stub.tools import signature

PARALLEL = [
    {"name": "inspect_variable", "args": {"name": "df"}},
    {"name": "read_cell", "args": {"ref": "c1"}},
    {"name": "list_variables", "args": {}},
]


@pytest.fixture
def notebook(magic_shell):
    magic_shell.run("%gemini reset --all", cell_id="reset")
    for name in ("tools", "max_tool_calls", "model", "cache"):
        setattr(magic_shell.magics, name, magic_shell.magics.trait_defaults(name))
    magic_shell.run("df = {'a': [1, 2, 3]}", cell_id="c1")
    return magic_shell


@pytest.mark.parametrize(
    ("state", "arguments"), [("contents", "whole"), ("interactions", "whole"), ("interactions", "delta")]
)
def test_parallel_calls_of_one_answer_are_answered_in_one_request_in_order(notebook, stub, state, arguments):
    stub.script_tools([PARALLEL], arguments)
    shown = notebook.run(f"%%gemini_ask --state {state} --new\nwhat is df?", cell_id="m")
    assert "Stub answer to: what is df?" in shown.plain, shown.stderr
    asked, answered = api_requests(stub)  # two requests: the one that asked, the ONE that answered all
    assert all(r["status"] == 200 for r in (asked, answered))
    calls = [(c["id"], c["name"]) for c in asked["tool_calls"]]
    assert [name for _, name in calls] == [c["name"] for c in PARALLEL] and len(set(calls)) == 3
    assert [(r["id"], r["name"]) for r in answered["tool_results"]] == calls  # same ids, names, order
    if state == "contents":
        # the model's content goes back as it came: only its first call carries the thought signature
        model, results = answered["json"]["contents"][-2:]
        assert [p["functionCall"]["id"] for p in model["parts"]] == [i for i, _ in calls]
        assert ["thoughtSignature" in p for p in model["parts"]] == [True, False, False]
        assert model["parts"][0]["thoughtSignature"] == signature(calls[0][0])
        assert [(p["functionResponse"]["id"], p["functionResponse"]["name"]) for p in results["parts"]] == calls
    else:
        # the answers continue the interaction that asked, one function_result each, in its order
        assert answered["json"]["previous_interaction_id"] == asked["interaction_id"]
        assert [(i["call_id"], i["name"]) for i in answered["json"]["input"]] == calls
    turn = notebook.magics.session.conversations["default"].history[-1]
    assert turn.usage.requests == 2 and [len(r.results) for r in turn.tool_rounds] == [3]
    footer = footer_line(shown.plain, turn=1)
    assert messages.FOOTER_REQUESTS.within(footer, count=2) and messages.FOOTER_CALLS.render(count=3) in footer


# -- the stand-in: so the test above can fail -----------------------------------------------------

DECLARED = [{"name": c["name"], "description": c["name"]} for c in PARALLEL]


def test_the_stand_in_refuses_parallel_calls_answered_over_two_requests_in_contents_mode(stub):
    stub.reset()
    stub.script_tools([PARALLEL])
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=stub.url))
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[types.FunctionDeclaration(**d) for d in DECLARED])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    question = types.Content(role="user", parts=[types.Part(text="what is df?")])
    reply = client.models.generate_content(model=DEFAULT_MODEL, contents=[question], config=config)
    model = reply.candidates[0].content
    assert [p.function_call.name for p in model.parts] == [c["name"] for c in PARALLEL]
    assert [p.thought_signature is not None for p in model.parts] == [True, False, False]

    def answers(*parts: types.Part) -> types.Content:
        return types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=p.function_call.id, name=p.function_call.name, response={"text": "ok"}
                    )
                )
                for p in parts
            ],
        )

    first_only = [question, model, answers(model.parts[0])]
    with pytest.raises(errors.ClientError) as refused:
        client.models.generate_content(model=DEFAULT_MODEL, contents=first_only, config=config)
    assert refused.value.code == 400
    reordered = [question, model, answers(*reversed(model.parts))]
    with pytest.raises(errors.ClientError):
        client.models.generate_content(model=DEFAULT_MODEL, contents=reordered, config=config)
    together = [question, model, answers(*model.parts)]
    assert client.models.generate_content(model=DEFAULT_MODEL, contents=together, config=config).text


def test_the_stand_in_refuses_parallel_calls_answered_over_two_requests_in_interactions_mode(stub):
    stub.reset()
    stub.script_tools([PARALLEL])
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=stub.url))
    tools = [{"type": "function", **d} for d in DECLARED]
    asked = client.interactions.create(model=DEFAULT_MODEL, input="what is df?", tools=tools)
    steps = [s for s in asked.steps if s.type == "function_call"]
    assert [s.name for s in steps] == [c["name"] for c in PARALLEL]

    def results(*chosen) -> list[dict]:
        return [{"type": "function_result", "call_id": s.id, "name": s.name, "result": "ok"} for s in chosen]

    for partial in (results(steps[0]), results(*reversed(steps))):
        with pytest.raises(Exception) as refused:  # the interactions client's own error class
            client.interactions.create(
                model=DEFAULT_MODEL, input=partial, tools=tools, previous_interaction_id=asked.id
            )
        assert status_code(refused.value) == 400
    whole = client.interactions.create(
        model=DEFAULT_MODEL, input=results(*steps), tools=tools, previous_interaction_id=asked.id
    )
    assert whole.status == "completed"
