"""Which Gemini models there are: the default, and what a key can use.

The default is named here and nowhere else in the package. Nothing here imports
google.genai: ``available_models`` works on the client it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import messages

# A generally available Flash model. gemini-3.7-flash, the first default, is
# deprecated and routed to this one (ai.google.dev model page, August 2026).
DEFAULT_MODEL = "gemini-3.8-flash"

GENERATE = "generateContent"
# Every Gemini model's input limit since 1.5 Pro (the models endpoint's ``input_token_limit``, and
# ai.google.dev/gemini-api/docs/models): what a model not listed yet is taken to read at most.
INPUT_LIMIT = 1_048_576


@dataclass(frozen=True)
class Traits:
    """What a model takes beyond the request every model takes: a request carries nothing a model refuses."""

    # sent as thinking_level, the model's documented default (pinned, so a turn asked again is asked
    # alike when the server's default moves); such a model refuses a thinking budget, never sent
    thinking_level: str | None = None
    explicit_cache: bool = True  # cachedContents can be made for it (else: implicit caching only)
    input_limit: int = INPUT_LIMIT  # tokens a request may read, until the models endpoint says otherwise


TRAITS: dict[str, Traits] = {
    # ai.google.dev/gemini-api/docs/generate-content/latest-model: thinking levels low/medium/high,
    # default medium; no thinkingBudget (docs.apiyi.com/models/gemini-4-argon, LiteLLM discussion
    # 46238); implicit caching only (github.com/iyulab/TokenMeter v0.13.1, dev.to/aihubmix)
    "gemini-4-argon": Traits(thinking_level="medium", explicit_cache=False),
    # Google's developer guides (docs.cloud.google.com/gemini-enterprise-agent-platform/models/guides/
    # gemini-4-carbon and gemini-4-hydrogen; Neon's as served at documentation.s3ns.fr, read 2026-12-06):
    # Carbon takes low/medium/high, default medium; Hydrogen and Neon low/medium/high/xhigh, default high;
    # "Explicit context caching isn't supported" (Carbon, Hydrogen; Neon: TokenMeter v0.17.0, "implicit
    # caching only"). One 1,048,576-token limit for input and output together: the input limit above.
    "gemini-4-carbon": Traits(thinking_level="medium", explicit_cache=False),
    "gemini-4-hydrogen": Traits(thinking_level="high", explicit_cache=False),
    "gemini-4-neon": Traits(thinking_level="high", explicit_cache=False),
}


def searches_beside_functions(model: str) -> bool:
    """Whether the model takes Google Search and function declarations in one request ("tool combination":
    in preview, for the Gemini 3 models only, ai.google.dev/gemini-api/docs/tool-combination, as read
    2026-12-06); another model searching gets no function that turn."""
    return model.removeprefix("models/").startswith("gemini-3")


def traits(model: str) -> Traits:
    """The model's traits; a model not in the table gets none: only what every model takes."""
    return TRAITS.get(model.removeprefix("models/"), Traits())


@dataclass
class InputLimits:
    """The tokens a request to each model may read, as the API gave them (the models endpoint's
    ``input_token_limit``, or the number in a limit's 400), kept for the session; the table's otherwise."""

    learned: dict[str, int] = field(default_factory=dict)

    def of(self, model: str) -> int:
        name = model.removeprefix("models/")
        return self.learned.get(name) or traits(name).input_limit

    def learn(self, model: str, tokens: int | None) -> None:
        """The API said ``model`` reads at most ``tokens`` (None or 0: it did not say)."""
        if tokens:
            self.learned[model.removeprefix("models/")] = int(tokens)


@dataclass(frozen=True)
class ModelInfo:
    name: str  # without the "models/" prefix: what --model takes
    display_name: str
    contents: bool  # generate_content works: the contents state mode
    interactions: bool  # client.interactions.create works: the interactions state mode
    input_limit: int | None = None  # the endpoint's input_token_limit


def model_info(model: Any) -> ModelInfo:
    """One entry of ``client.models.list()`` (a google.genai ``types.Model``)."""
    name = (model.name or "").removeprefix("models/").removeprefix("publishers/google/models/")
    actions = model.supported_actions or []
    contents = GENERATE in actions
    # models.list does not say which models the Interactions API serves; its docs
    # list the Gemini generateContent models, so that is the rule used here.
    interactions = contents and name.startswith("gemini-")
    limit = getattr(model, "input_token_limit", None)
    return ModelInfo(
        name=name,
        display_name=model.display_name or name,
        contents=contents,
        interactions=interactions,
        input_limit=limit if isinstance(limit, int) else None,
    )


def available_models(client: Any, limits: InputLimits | None = None) -> list[ModelInfo]:
    """Every base model the client's key can see, in the API's order (all pages); their input limits kept
    in ``limits``."""
    found = [model_info(m) for m in client.models.list()]
    for info in found:
        if limits is not None:
            limits.learn(info.name, info.input_limit)
    return found


def models_table(models: list[ModelInfo], current: str, priced: Callable[[str], bool]) -> str:
    """What ``%gemini models`` prints: one line a model, ``$`` where a price is known (``priced``: the
    price table's and ``GeminiMagics.prices``), the state modes it works in, whether it takes explicit caches,
    and the input limit the endpoint gives."""
    if not models:
        return "no models are available to this key"
    width = max(len(m.name) for m in models)
    lines = []
    for m in models:
        modes = ", ".join(mode for mode, ok in (("contents", m.contents), ("interactions", m.interactions)) if ok)
        mark = "*" if m.name == current else " "
        cost = "$" if priced(m.name) else " "
        # the table's word: a model without explicit caches earns the discount only on a stable prefix
        if m.contents and not traits(m.name).explicit_cache:
            modes += messages.MODELS_IMPLICIT_ONLY.render()
        if m.contents and m.input_limit:
            modes += messages.MODELS_INPUT_LIMIT.render(tokens=m.input_limit)
        lines.append(f"{mark}{cost} {m.name:<{width}}  {modes or 'not for conversations'}  ({m.display_name})")
    return "\n".join(lines + [messages.MODELS_LEGEND.render()])
