"""The stand-in playing an agent on its own (``%%gemini_agent``, no script): what a new user sees it do.

An agent turn (the request declares ``insert_cell`` and ``run_cell``) whose prompt asks to run, check or
test something (one of ``ACTING_WORDS`` as a word) is played as an agent works: it inserts a cell below the
latest cell run (``after="-1"``) whose first version uses a name it never defined, runs it, reads the
``NameError`` in the run's result, edits the cell to define that name and runs it again, then answers.
Each round is decided by the results the request carries alone (the stand-in keeps nothing between
requests): an error result anywhere, or a run that failed otherwise, ends the play with the answer.
"""

from __future__ import annotations

import re
from typing import Any

ACTING_WORDS = ("run", "runs", "check", "checks", "test", "tests")
NAME = "checked"  # the name the first version forgets to define
_WORDS = re.compile(r"[a-z]+")
_NOT_DEFINED = re.compile(r"NameError: name '(\w+)' is not defined")


def acts_on(prompt: str, declared: list[str]) -> bool:
    """Whether the stand-in plays the agent for this prompt: an agent turn asking to run, check or test."""
    agent = "insert_cell" in declared and "run_cell" in declared
    return agent and any(word in ACTING_WORDS for word in _WORDS.findall(prompt.lower()))


def first_version(line: str) -> str:
    """The inserted cell: a comment naming the request, and a print of a name not defined yet."""
    return f"# stub agent: {line}\nprint({NAME})\n"


def next_calls(line: str, results: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The next round's calls after ``results`` (the last round's function responses); None: answer now.
    ``line``: the prompt's first line, which the inserted cell names."""
    if not results:
        return [{"name": "insert_cell", "args": {"after": "-1", "source": first_version(line)}}]
    responses = [r["response"] if isinstance(r.get("response"), dict) else {} for r in results]
    names = [r.get("name") for r in results]
    if any("error" in response and name != "run_cell" for name, response in zip(names, responses, strict=True)):
        return None  # a write refused, a ref not found: the model says so in its answer
    if names == ["insert_cell"] and isinstance(responses[0].get("id"), str):
        return [{"name": "run_cell", "args": {"ref": responses[0]["id"]}}]
    if names == ["run_cell"]:
        ran, error = responses[0].get("ran"), str(responses[0].get("error", ""))
        missing = _NOT_DEFINED.search(error)
        if not isinstance(ran, str) or missing is None:
            return None  # ran cleanly, or failed in a way the play does not fix
        name = missing.group(1)
        defined = f"{name} = True  # defined after reading the NameError\nprint({name})"
        fix = {"find": f"print({name})", "replace": defined}
        return [
            {"name": "edit_cell", "args": {"ref": ran, "edits": [fix]}},
            {"name": "run_cell", "args": {"ref": ran}},
        ]
    return None  # the edit and the second run came back: answer


def played_note(results: list[dict[str, Any]]) -> str:
    """What the answer says the play did, once its second run came back."""
    if [r.get("name") for r in results] != ["edit_cell", "run_cell"]:
        return ""
    response = results[1].get("response")
    run: dict[str, Any] = response if isinstance(response, dict) else {}
    how = "it failed again" if "error" in run else "it ran without an error"
    return (
        f"\n\nI inserted a cell, ran it, read its NameError, defined the name in it and ran it again "
        f"as {run.get('ran', 'the cell')}: {how}."
    )
