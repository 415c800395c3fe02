"""Grounding with Google Search as the stand-in plays it: a request offering ``google_search`` is answered
with one search and two sources, in Gemini's shapes (generateContent: the candidate's ``groundingMetadata``,
camelCase as the REST API sends it; interactions: a ``google_search_call`` and a ``google_search_result`` step
before the text, and the text's ``url_citation`` annotations). The query and the first source's title are
the prompt's first line, as sent: a test puts markup there to see it escaped."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

SECOND = {"uri": "https://docs.python.org/3/library/", "title": "The Python Standard Library"}


def contents_searches(body: dict[str, Any]) -> bool:
    return any(isinstance(t, dict) and ("googleSearch" in t or "google_search" in t) for t in body.get("tools") or [])


def interaction_searches(body: dict[str, Any]) -> bool:
    return any(isinstance(t, dict) and t.get("type") == "google_search" for t in body.get("tools") or [])


def query_of(user_text: str) -> str:
    """The prompt's first line (a turn's JSON text names it ``prompt``; any other text is the prompt)."""
    try:
        prompt = json.loads(user_text).get("prompt", user_text)
    except (ValueError, AttributeError):
        prompt = user_text
    return (str(prompt).strip().splitlines() or [""])[0][:120]


def sources(query: str) -> list[dict[str, str]]:
    return [{"uri": f"https://example.com/search?q={quote(query)}", "title": query}, SECOND]


def metadata(query: str, text: str) -> dict[str, Any]:
    """generateContent's ``groundingMetadata``: the query run, the sources, the answer's first line backed
    by both (its UTF-8 byte offsets, as the API counts them)."""
    first = text.split("\n", 1)[0]
    return {
        "webSearchQueries": [query],
        "groundingChunks": [{"web": s} for s in sources(query)],
        "groundingSupports": [
            {
                "segment": {"startIndex": 0, "endIndex": len(first.encode("utf-8")), "text": first},
                "groundingChunkIndices": [0, 1],
            }
        ],
        "searchEntryPoint": {"renderedContent": "<div>stub search suggestions</div>"},
    }


def interaction_steps(query: str) -> list[dict[str, Any]]:
    """The search's two steps of an interaction, before its model output."""
    return [
        {"type": "google_search_call", "id": "search_1", "arguments": {"queries": [query]}},
        {"type": "google_search_result", "call_id": "search_1", "result": [{"search_suggestions": "stub"}]},
    ]


def citations(query: str, text: str) -> list[dict[str, Any]]:
    """The text's ``url_citation`` annotations: its first line, backed by each source."""
    end = len(text.split("\n", 1)[0])
    return [
        {"type": "url_citation", "url": s["uri"], "title": s["title"], "start_index": 0, "end_index": end}
        for s in sources(query)
    ]
