"""A 10-turn session about a plot: the image sent with every turn vs once, in bytes and tokens.

Everything runs the real google-genai SDK over real HTTP against the bundled
stand-in; every number is read from the stand-in's request records
(``body_bytes``: the request body received; ``input_tokens``: what the model reads,
text at ceil(utf-8 bytes / 4) and each image by the stand-in's image rule, 258
tokens per 768x768 tile, including an interactions chain's stored turns;
``images``: the image parts the request carried).

The cell: a real matplotlib figure (a histogram, 640x480 at 100 dpi, Agg) and a
printed summary line. Ten questions about it, the cell unchanged throughout.

Strategies
  (a) stateless resend: each turn one ``generate_content_stream`` request with the
      cell, its printed text, the prompt and the PNG, no memory;
  (b) naive chat: ``client.chats.create(model).send_message([text, PNG])`` each turn, the
      image attached to every message (the history keeps every copy);
  (c) genai_magics contents mode (``cache = "off"``), through ``pipeline.run``: the image
      goes once, as a part of the turn that first sent it; the transcript repeats it;
  (f) genai_magics contents mode with ``cache = "auto"`` (the default): the same, with the
      explicit cache when the head is over the model's minimum (it is not here: the head
      is ~1.6k tokens, under 4,096);
  (g) an interactions chain (``previous_interaction_id``) with the image attached to every turn;
  (d) genai_magics interactions mode: the image is uploaded once, the server chain holds it.

(b) against (c) and (g) against (d) are the same conversation machinery with the
image every turn vs once; (a) has no memory at all (no earlier answers, no system
instruction), so it reads the fewest tokens of all and is shown as the baseline.

    python benchmarks/outputs_economy.py [--smoke] [--report]

Goals, one ``target`` line each (``goals.py``: a FAIL exits 1 unless ``--report``): the image is new context
once: (c) no request carries it twice, (d) uploads it once.

``--smoke``: 2 questions instead of 10. A failed request, or a turn that sent no request, stops the
run with an error (no table).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from goals import Goals  # noqa: E402
from helpers.display import RecordingDisplay  # noqa: E402
from smoke import add_flag  # noqa: E402

from genai_magics.engine.payloads import to_text  # noqa: E402
from genai_magics.gemini.models import DEFAULT_MODEL  # noqa: E402
from genai_magics.stub import StubServer  # noqa: E402
from genai_magics.turn import pipeline
from genai_magics.turn.requests import Settings, TurnRequest  # noqa: E402
from genai_magics.turn.session import Session

MODEL = DEFAULT_MODEL
CELL = "plot-cell"
SOURCE = (
    "import numpy as np\nimport matplotlib.pyplot as plt\n\n"
    "rng = np.random.default_rng(7)\nvalues = rng.lognormal(mean=1.0, sigma=0.6, size=500)\n"
    "fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)\nax.hist(values, bins=40)\n"
    'ax.set_title("order value")\nprint(f"n={values.size} mean={values.mean():.2f} median={np.median(values):.2f}")\n'
    "plt.show()\n"
)
PROMPTS = [
    "Why is this histogram skewed?",
    "Is a log scale on the x axis better here?",
    "What does the long right tail say about the data?",
    "How many bins would you use instead?",
    "Is the mean or the median the better summary?",
    "Which transformation would make it look normal?",
    "Are there outliers I should look at?",
    "How would I label the axes properly?",
    "What would a box plot add?",
    "Summarize what this plot shows in two sentences.",
]


def figure() -> tuple[bytes, str]:
    """The PNG matplotlib's inline backend would show for SOURCE, and the line it prints."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rng = np.random.default_rng(7)
    values = rng.lognormal(mean=1.0, sigma=0.6, size=500)
    fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
    ax.hist(values, bins=40)
    ax.set_title("order value")
    out = io.BytesIO()
    fig.savefig(out, format="png")
    plt.close(fig)
    return out.getvalue(), f"n={values.size} mean={values.mean():.2f} median={np.median(values):.2f}\n"


def _image_part(png: bytes) -> dict:
    return {"inline_data": {"mime_type": "image/png", "data": png}}


def _message(prompt: str, text: str) -> str:
    return to_text({"mode": "ask", "prompt": prompt, "currentSource": SOURCE, "outputs": [{"text": text}]})


def run_stateless(png: bytes, text: str, prompts: list[str]) -> None:
    from google import genai

    client = genai.Client()
    for prompt in prompts:
        contents = [{"role": "user", "parts": [{"text": _message(prompt, text)}, _image_part(png)]}]
        for _ in client.models.generate_content_stream(model=MODEL, contents=contents):
            pass


def run_chat(png: bytes, text: str, prompts: list[str]) -> None:
    from google import genai
    from google.genai import types

    client = genai.Client()
    chat = client.chats.create(model=MODEL)
    for prompt in prompts:
        chat.send_message(
            [types.Part(text=_message(prompt, text)), types.Part.from_bytes(data=png, mime_type="image/png")]
        )


def run_chain(png: bytes, text: str, prompts: list[str]) -> None:
    from google import genai

    client = genai.Client()
    previous = None
    for prompt in prompts:
        image = {"type": "image", "data": base64.b64encode(png).decode(), "mime_type": "image/png"}
        given = [{"type": "text", "text": _message(prompt, text)}, image]
        extra = {"previous_interaction_id": previous} if previous else {}
        for event in client.interactions.create(model=MODEL, input=given, store=True, stream=True, **extra):
            interaction = getattr(event, "interaction", None)
            previous = getattr(interaction, "id", None) or previous


def run_ours(png: bytes, text: str, prompts: list[str], state: str, cache: str) -> None:
    session = Session()
    session.executed.add(CELL, SOURCE, 1)
    session.outputs.start(CELL)  # what the kernel's taps note while the cell runs
    session.outputs.stream("stdout", text)
    session.outputs.display("display_data", {"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"})
    settings = Settings(model=MODEL, state=state, cache=cache)  # type: ignore[arg-type]
    display = RecordingDisplay()
    for prompt in prompts:
        pipeline.run(session, TurnRequest(mode="ask", prompt=prompt, cell=CELL, state=state), settings, display)  # type: ignore[arg-type]
    session.reset()


def measure(stub: StubServer, run, questions: int) -> dict[str, int]:
    stub.reset()
    run()
    reads = [r for r in stub.requests if r["kind"] in ("stream", "generate", "interaction.create", "cache.create")]
    bad = [r for r in reads if r["status"] != 200]
    if bad:
        raise RuntimeError(f"failed requests: {[(r['kind'], r['status']) for r in bad]}")
    answered = [r for r in reads if r["kind"] != "cache.create"]
    if len(answered) != questions:
        raise RuntimeError(f"{questions} questions asked, {len(answered)} requests answered")
    return {
        "requests": len(answered),
        "bytes": sum(r["body_bytes"] for r in reads),
        "input_tokens": sum(r["input_tokens"] for r in answered),
        "image_parts": sum(len(r["images"]) for r in reads),
        "image_bytes": sum(i["bytes"] for r in reads for i in r["images"]),
    }


def main(argv: list[str] | None = None) -> int:
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_flag(parser)
    args = parser.parse_args(argv)
    prompts = PROMPTS[:2] if args.smoke else PROMPTS
    png, text = figure()
    rows: dict[str, dict[str, int]] = {}
    with StubServer() as stub:
        os.environ["GOOGLE_GEMINI_BASE_URL"] = stub.url
        os.environ.setdefault("GEMINI_API_KEY", "benchmark-key-not-secret")
        n = len(prompts)
        rows["(a) stateless resend, image every turn"] = measure(stub, lambda: run_stateless(png, text, prompts), n)
        rows["(b) naive chat, image every turn"] = measure(stub, lambda: run_chat(png, text, prompts), n)
        rows["(c) genai_magics contents, cache off"] = measure(
            stub, lambda: run_ours(png, text, prompts, "contents", "off"), n
        )
        rows["(f) genai_magics contents, cache auto"] = measure(
            stub, lambda: run_ours(png, text, prompts, "contents", "auto"), n
        )
        rows["(g) interactions chain, image every turn"] = measure(stub, lambda: run_chain(png, text, prompts), n)
        rows["(d) genai_magics interactions"] = measure(
            stub, lambda: run_ours(png, text, prompts, "interactions", "off"), n
        )
    base = rows["(a) stateless resend, image every turn"]
    print(f"{n} asks about one matplotlib figure ({len(png):,} B PNG, 640x480), {MODEL}, on the stand-in\n")
    print("| strategy | request bytes | vs (a) | input tokens | vs (a) | image parts uploaded | image bytes uploaded |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, r in rows.items():
        print(
            f"| {name} | {r['bytes']:,} | {r['bytes'] / base['bytes']:.2f}x | {r['input_tokens']:,} | "
            f"{r['input_tokens'] / base['input_tokens']:.2f}x | {r['image_parts']} | {r['image_bytes']:,} |"
        )
    goals = Goals(judged=not args.smoke)
    contents, chain = rows["(c) genai_magics contents, cache off"], rows["(d) genai_magics interactions"]
    print(
        goals.line(
            "(c) contents: no request carries the image twice (the turn that sent it, in the transcript)",
            contents["image_parts"] <= n,
            f"{contents['image_parts']} image parts in {n} requests",
        )
    )
    print(goals.line("(d) interactions uploads the image once", chain["image_parts"] == 1, str(chain["image_parts"])))
    print("\n" + json.dumps({k: v for k, v in rows.items()}, indent=1))
    return goals.exit_code(args.report)


if __name__ == "__main__":
    raise SystemExit(main())
