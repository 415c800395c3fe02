"""The fake model: what it holds (from the transcript) and its deterministic answers.

Its "reasoning" is a pure function of the turns: the held document, the current prompt, a
reply an ask or an edit gets, and the tokens read and written (``tokens``: ceil(bytes / 4)).
"""

from __future__ import annotations

import builtins
import hashlib
import json
import keyword
import math
import re
from typing import TYPE_CHECKING, Any

from . import agent_play
from . import edits as model_edits
from .patches import apply_patch
from .tools import read_note

if TYPE_CHECKING:
    from .request_record import RequestRecord


def tokens(text: str | None) -> int:
    """The stub's token count: ceil(utf-8 bytes / 4)."""
    if not text:
        return 0
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def texts(value: Any) -> list[str]:
    """Every ``text`` string inside a content value (str, part, content, list)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            out.extend(texts(item))
        return out
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return [value["text"]]
        for key in ("functionCall", "functionResponse"):  # read (and billed) as their JSON, images apart
            if isinstance(value.get(key), dict):
                shown = {k: v for k, v in value[key].items() if k != "parts"}
                return [json.dumps({key: shown}, ensure_ascii=False, sort_keys=True)]
        if value.get("type") == "function_result":
            result = value.get("result")
            return [result] if isinstance(result, str) else texts(result)
        for key in ("parts", "content"):
            if key in value:
                return texts(value[key])
    return []


def parse_turn(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def held_document(turns: list[tuple[str, str]], told: tuple[tuple[str, str], ...] = ()) -> str | None:
    """The full source the model holds, walking (role, text) turns newest first.

    User turns hold ``currentSource``, or ``sourcePatch``: hunks applied to what
    the turns before hold (a patch that does not apply leaves the model holding
    nothing, so a wrong patch shows); model turns hold ``proposedSource`` unless
    their ``outcome`` (or a later user turn's ``proposalOutcomes``, keyed by the
    proposal's sha256 prefix) says it was discarded or undone; the newest outcome told wins
    (``told``: outcomes newer turns gave, newest first).
    """
    outcomes_told = dict(told)  # proposal key -> the newest outcome told
    for i in range(len(turns) - 1, -1, -1):
        role, text = turns[i]
        turn = parse_turn(text)
        if turn is None:
            continue
        if role == "user":
            outcomes = turn.get("proposalOutcomes")
            if isinstance(outcomes, dict):
                for key, outcome in outcomes.items():
                    if isinstance(key, str):
                        outcomes_told.setdefault(key.lower(), outcome)
            if isinstance(turn.get("currentSource"), str):
                return turn["currentSource"]
            if isinstance(turn.get("sourcePatch"), str):
                base = held_document(turns[:i], tuple(outcomes_told.items()))
                return None if base is None else apply_patch(base, turn["sourcePatch"])
        else:
            source = turn.get("proposedSource")
            if "edits" in turn and not isinstance(source, str):
                # on what the model held when it answered: outcomes told later do not move that base
                source = model_edits.held(turn, held_document(turns[:i]))
            if not isinstance(source, str):
                continue
            if turn.get("outcome") in ("discarded", "undone"):
                continue
            sha = sha256(source)
            if any(sha.startswith(k) for k, v in outcomes_told.items() if k and v in ("discarded", "undone")):
                continue
            return source
    return None


def current_prompt(text: str) -> tuple[str | None, str]:
    """(mode, prompt) of the current user turn; plain text is an ask prompt."""
    turn = parse_turn(text)
    if turn is None:
        return None, text
    mode = turn.get("mode") if isinstance(turn.get("mode"), str) else None
    prompt = turn.get("prompt")
    return mode, prompt if isinstance(prompt, str) else text


def first_line(prompt: str, limit: int = 60) -> str:
    """The prompt's first line; a longer one cut after its last whole word, the cut marked with an ellipsis."""
    line = (prompt.strip().splitlines() or [""])[0].strip()
    if len(line) <= limit:
        return line
    head = line[: limit + 1].rsplit(" ", 1)[0] if " " in line[: limit + 1] else line[:limit]
    return head[:limit].rstrip(" ,;:") + "…"


def echoed(prompt: str) -> str:
    """The prompt's first line as a sentence: a full stop unless it ends in one (or ``?``, ``!``, ``…``)."""
    line = first_line(prompt)
    return line if line.endswith((".", "?", "!", "…")) else f"{line}."


def ask_reply(prompt: str, document: str | None) -> str:
    if document is None:
        holds = "I hold no document."
    else:
        holds = f"The document I hold has {len(document.splitlines())} lines (sha256 {sha256(document)[:12]})."
    return f"Stub answer to: {prompt}\n\n{holds}"


def edit_source(prompt: str, document: str | None) -> str:
    """The proposed source: a ``# stub edit: ...`` line added on top of the held document.

    A percent-format notebook (first line ``# %% ...``) gets the line inside its
    first cell, so the cell headers stay intact.
    """
    marker = f"# stub edit: {first_line(prompt)}"
    if document is None:
        return f"{marker}\nresult = {first_line(prompt)!r}\nprint(result)\n"
    if document.startswith("# %%"):
        head, sep, rest = document.partition("\n")
        return f"{head}\n{marker}\n{rest}" if sep else f"{head}\n{marker}\n"
    return f"{marker}\n{document}"


def edit_reply(prompt: str, document: str | None) -> str:
    source = edit_source(prompt, document)
    if document is None:
        explanation = f"Stub edit for: {echoed(prompt)} I held no document, so this is a new snippet."
    else:
        explanation = (
            f"Stub edit for: {echoed(prompt)} Added a comment line on top of the "
            f"{len(document.splitlines())}-line document (base sha256 {sha256(document)[:12]})."
        )
    return json.dumps({"explanation": explanation, "proposedSource": source}, ensure_ascii=False)


# A name a question gives as code: in backticks (`df`, `df.columns`), or a word with an underscore (sales_df).
_CODE_NAME = re.compile(r"`([A-Za-z_]\w*)|(?<![\w.])([A-Za-z]\w*_\w*|_\w+)")
_LISTED = re.compile(r"^([A-Za-z_]\w*): ", re.MULTILINE)  # a line of list_variables' result


def asked_names(prompt: str, document: str | None) -> list[str]:
    """The names a question gives as code that the document does not show: what the model may not know
    and the notebook may hold (builtins and keywords left out)."""
    names: list[str] = []
    for found in _CODE_NAME.finditer(prompt):
        name = found.group(1) or found.group(2)
        known = keyword.iskeyword(name) or hasattr(builtins, name)
        shown = document is not None and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", document)
        if not known and not shown and name not in names:
            names.append(name)
    return names


def _result_texts(value: Any) -> list[str]:
    """Every ``text`` string inside a function result's JSON (either state mode's shape)."""
    if isinstance(value, dict):
        own = [value["text"]] if isinstance(value.get("text"), str) else []
        return own + [t for v in value.values() for t in _result_texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _result_texts(v)]
    return []


def listed_names(result: dict[str, Any], turns: list[tuple[str, str]]) -> set[str]:
    """The variables a list_variables result names; one that came back unchanged, from the list the
    transcript holds (an earlier turn's result)."""
    texts_held = _result_texts(result.get("response"))
    if not texts_held:
        texts_held = [t for role, text in turns if role == "tool" for t in _result_texts(parse_turn(text))]
    return {name for text in texts_held for name in _LISTED.findall(text)}


def inspected_note(results: list[dict[str, Any]]) -> str:
    """What the answer says each inspected variable held (its summary's first lines), so a reader sees the
    call at work."""
    seen = [
        " ".join(text.split("\n")[:2])
        for r in results
        if r["name"] == "inspect_variable"
        for text in _result_texts(r["response"])[:1]
    ]
    return "".join(f"\nI looked at it: {first_line(line, 120)}" for line in seen)


def own_calls(
    turns: list[tuple[str, str]], results: list[dict[str, Any]], declared: list[str], edit: bool
) -> list[dict[str, Any]] | None:
    """The calls the model makes on its own in a turn no script runs: an agent turn asking to run, check or
    test plays an agent (agent_play.py); an ask naming, as code, a name the document does not show first
    lists the notebook's variables, then inspects each such name the list holds, then answers. Only what the
    request holds decides (the stand-in keeps nothing between turns)."""
    user_texts = [t for r, t in turns if r == "user"]
    mode, prompt = current_prompt(user_texts[-1] if user_texts else "")
    if edit or mode == "edit":
        return None
    if agent_play.acts_on(prompt, declared):
        return agent_play.next_calls(first_line(prompt), results)
    names = asked_names(prompt, held_document(turns))
    if not names:
        return None
    if not results:
        return [{"name": "list_variables", "args": {}}] if "list_variables" in declared else None
    if [r["name"] for r in results] != ["list_variables"] or "inspect_variable" not in declared:
        return None  # the variables were inspected (or the turn went another way): answer
    listed = listed_names(results[0], turns)
    return [{"name": "inspect_variable", "args": {"name": n}} for n in names if n in listed] or None


INVALID_JSON_REPLY = '{"explanation": "stub invalid_json fault", "proposedSource": "print(1)\\n'


def answer(
    turns: list[tuple[str, str]],
    current: str,
    system: str,
    fault: dict[str, Any] | None,
    info: RequestRecord,
    scripted: str | list[Any] | None = None,
    calls: list[dict[str, Any]] | None = None,
) -> tuple[str, int, int]:
    """The deterministic reply to a transcript, and the tokens it read and wrote (recorded in ``info``);
    with ``calls``, the reply is those function calls (their JSON is what it wrote)."""
    mode, prompt = current_prompt(current)
    document = held_document(turns)
    if calls:
        text = json.dumps(calls, ensure_ascii=False)
    elif fault and fault["fault"] == "invalid_json":
        text = INVALID_JSON_REPLY
    elif info.edit and isinstance(scripted, list):  # scripted edits, as given
        text = json.dumps({"explanation": f"Scripted stand-in edits for: {echoed(prompt)}", "edits": scripted})
    elif info.edit and scripted is not None:
        text = json.dumps(
            {"explanation": f"Scripted stand-in edit for: {echoed(prompt)}", "proposedSource": scripted},
            ensure_ascii=False,
        )
    elif info.edit:
        bad = bool(fault and fault["fault"] == "bad_edits")
        text = model_edits.answer(edit_reply(prompt, document), document, info.edits_offered, bad)
    else:
        results = info.tool_results
        text = ask_reply(prompt, document) + read_note(results) + inspected_note(results)
        text += agent_play.played_note(results)
    in_tokens = sum(tokens(t) for _, t in turns) + tokens(system)
    out_tokens = tokens(text)
    info.mode = mode or ("edit" if info.edit else "ask")
    info.prompt = prompt
    info.held_document_sha256 = sha256(document) if document is not None else None
    info.input_tokens, info.response_tokens, info.response_text = in_tokens, out_tokens, text
    return text, in_tokens, out_tokens
