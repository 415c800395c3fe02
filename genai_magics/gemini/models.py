"""Which Gemini models there are: the default, and what a key can use.

The default is named here and nowhere else in the package. Nothing here imports
google.genai: ``available_models`` works on the client it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A generally available Flash model. gemini-3.7-flash, the first default, is
# deprecated and routed to this one (ai.google.dev model page, August 2026).
DEFAULT_MODEL = "gemini-3.8-flash"

GENERATE = "generateContent"


@dataclass(frozen=True)
class Traits:
    """What a model takes beyond the request every model takes: a request carries nothing a model refuses."""

    # sent as thinking_level, the model's documented default (pinned, so a turn asked again is asked
    # alike when the server's default moves); such a model refuses a thinking budget, never sent
    thinking_level: str | None = None
    explicit_cache: bool = True  # cachedContents can be made for it (else: implicit caching only)


TRAITS: dict[str, Traits] = {
    # ai.google.dev/gemini-api/docs/generate-content/latest-model: thinking levels low/medium/high,
    # default medium; no thinkingBudget (docs.apiyi.com/models/gemini-4-argon, LiteLLM discussion
    # 46238); implicit caching only (github.com/iyulab/TokenMeter v0.13.1, dev.to/aihubmix)
    "gemini-4-argon": Traits(thinking_level="medium", explicit_cache=False),
}


def traits(model: str) -> Traits:
    """The model's traits; a model not in the table gets none: only what every model takes."""
    return TRAITS.get(model.removeprefix("models/"), Traits())


@dataclass(frozen=True)
class ModelInfo:
    name: str  # without the "models/" prefix: what --model takes
    display_name: str
    contents: bool  # generate_content works: the contents state mode
    interactions: bool  # client.interactions.create works: the interactions state mode


def model_info(model: Any) -> ModelInfo:
    """One entry of ``client.models.list()`` (a google.genai ``types.Model``)."""
    name = (model.name or "").removeprefix("models/").removeprefix("publishers/google/models/")
    actions = model.supported_actions or []
    contents = GENERATE in actions
    # models.list does not say which models the Interactions API serves; its docs
    # list the Gemini generateContent models, so that is the rule used here.
    interactions = contents and name.startswith("gemini-")
    return ModelInfo(name=name, display_name=model.display_name or name, contents=contents, interactions=interactions)


def available_models(client: Any) -> list[ModelInfo]:
    """Every base model the client's key can see, in the API's order (all pages)."""
    return [model_info(m) for m in client.models.list()]


def models_table(models: list[ModelInfo], current: str) -> str:
    """What ``%gemini models`` prints: one line a model, the state modes it works in."""
    if not models:
        return "no models are available to this key"
    width = max(len(m.name) for m in models)
    lines = []
    for m in models:
        modes = ", ".join(mode for mode, ok in (("contents", m.contents), ("interactions", m.interactions)) if ok)
        mark = "*" if m.name == current else " "
        lines.append(f"{mark} {m.name:<{width}}  {modes or 'not for conversations'}  ({m.display_name})")
    return "\n".join(lines + ["* the default model (%gemini model NAME changes it)"])
