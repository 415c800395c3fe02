"""An answer grounded in Google Search: the searches the model ran and the sources it cites.

``--search`` offers Gemini's built-in ``google_search`` and ``url_context`` tools beside our
functions. What comes back is read here from either state mode's shape (contents: the candidate's
``groundingMetadata``, its ``webSearchQueries``, ``groundingChunks`` and ``groundingSupports``;
interactions: the ``google_search_call`` steps' queries and the text's ``url_citation`` annotations)
into one value the turn keeps, the record stores, a replay shows again, and the bill counts (each query
at the model's rate). ``sources_markdown`` renders it for people: every title and address escaped,
only http(s) addresses made links.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from .. import messages


@dataclass(frozen=True)
class Source:
    title: str
    uri: str


@dataclass(frozen=True)
class Support:
    """A piece of the answer and the sources (indices into ``Grounding.sources``) that support it."""

    text: str
    sources: tuple[int, ...]


@dataclass(frozen=True)
class Grounding:
    queries: tuple[str, ...] = ()  # the searches run: each is billed
    sources: tuple[Source, ...] = ()
    supports: tuple[Support, ...] = ()

    @property
    def searches(self) -> int:
        return len(self.queries)

    def __bool__(self) -> bool:
        return bool(self.queries or self.sources)

    def to_json(self) -> dict[str, Any]:
        return {
            "queries": list(self.queries),
            "sources": [{"title": s.title, "uri": s.uri} for s in self.sources],
            "supports": [{"text": s.text, "sources": list(s.sources)} for s in self.supports],
        }

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Grounding:
        return Grounding(
            tuple(d.get("queries", ())),
            tuple(Source(s["title"], s["uri"]) for s in d.get("sources", ())),
            tuple(Support(s["text"], tuple(s["sources"])) for s in d.get("supports", ())),
        )


def joined(parts: Iterable[Grounding | None]) -> Grounding | None:
    """A turn's requests' groundings as one (sources once each, the supports' indices moved); None: none."""
    queries: list[str] = []
    sources: list[Source] = []
    supports: list[Support] = []
    for part in parts:
        if not part:
            continue
        queries += part.queries
        at = [_index(sources, s) for s in part.sources]
        supports += [Support(s.text, tuple(at[i] for i in s.sources if i < len(at))) for s in part.supports]
    found = Grounding(tuple(queries), tuple(sources), tuple(supports))
    return found or None


def _index(sources: list[Source], source: Source) -> int:
    if source not in sources:
        sources.append(source)
    return sources.index(source)


def from_metadata(meta: Mapping[str, Any] | None) -> Grounding | None:
    """contents mode: a candidate's ``groundingMetadata`` as the SDK dumps it (by alias, camelCase)."""
    if not meta:
        return None
    sources = []
    for chunk in meta.get("groundingChunks") or ():
        web = chunk.get("web") or {}
        sources.append(Source(str(web.get("title") or web.get("domain") or ""), str(web.get("uri") or "")))
    supports = [
        Support(
            str((s.get("segment") or {}).get("text") or ""), tuple(int(i) for i in s.get("groundingChunkIndices") or ())
        )
        for s in meta.get("groundingSupports") or ()
    ]
    return Grounding(tuple(str(q) for q in meta.get("webSearchQueries") or ()), tuple(sources), tuple(supports)) or None


def from_interaction(queries: Sequence[str], citations: Sequence[Mapping[str, Any]], text: str) -> Grounding | None:
    """interactions mode: the queries of its ``google_search_call`` steps and its text's ``url_citation``
    annotations (each names its source and the piece of the text it supports)."""
    sources: list[Source] = []
    supports = []
    for c in citations:
        at = _index(sources, Source(str(c.get("title") or ""), str(c.get("url") or "")))
        start, end = c.get("start_index"), c.get("end_index")
        piece = text[start:end] if isinstance(start, int) and isinstance(end, int) else ""
        supports.append(Support(piece, (at,)))
    return Grounding(tuple(queries), tuple(sources), tuple(supports)) or None


_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def _text(value: str) -> str:
    """Plain text safe inside Markdown (and the HTML it becomes): no markup, no tag, on one line."""
    return _MARKDOWN.sub(r"\\\1", html.escape(" ".join(value.split()), quote=True))


def _link(uri: str) -> str | None:
    """An address fit for a link: http(s) only (never ``javascript:``), its specials percent-encoded."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return quote(uri, safe=":/?#[]@!$&'*+,;=%~-._")


def sources_markdown(grounding: Grounding) -> str:
    """The sources under an answer: each as a link (its title escaped), then the pieces of the answer each
    one supports."""
    lines = [messages.GROUNDING_SOURCES.render(searches=grounding.searches)]
    for n, source in enumerate(grounding.sources, 1):
        title = _text(source.title or source.uri)
        link = _link(source.uri)
        shown = f"[{title}]({link})" if link else f"{title} ({_text(source.uri)})"
        backed = [_text(s.text) for s in grounding.supports if n - 1 in s.sources and s.text.strip()]
        quoted = "".join(f"\n   > {piece}" for piece in backed[:3])
        lines.append(f"{n}. {shown}{quoted}")
    return "\n".join(lines)
