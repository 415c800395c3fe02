"""What a cell showed, as context pieces: its text in the JSON payload, its images as image parts.

Pure: a cell's captured outputs (stream text, ``execute_result`` and
``display_data`` bundles, in the order the kernel published them) become one
text piece (``outputs`` entry: label, sha256, text) and one piece per image
(``image/png``, ``image/jpeg``), each with its own sha256, so an unchanged plot is
never sent again and a re-run that changes only the plot sends only the plot.
The text names each image where it appeared (``[image 1]``) and the payload names
it by its sha256; widgets, JavaScript and HTML that is not a table are named, not sent.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
import math
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any, Literal

from .. import messages
from .context import ContextPiece, LabelledPiece
from .redaction import redact
from .text import clip, estimate_tokens
from .text import sendable as sendable_text

OUTPUTS_FIELD = "outputs"
IMAGE_TYPES = ("image/png", "image/jpeg")
WIDGET_TYPE = "application/vnd.jupyter.widget-view+json"
MAX_CELL_CHARS = 1_000_000  # stream text kept per cell (captured, or set on a cell the agent ran); far above any cap
MAX_CELL_OUTPUTS = 200  # outputs kept per cell
SHOWED_NOTHING = "(this cell showed nothing in this kernel)"  # the text of a cell that showed nothing
_NOT_SENT = ("application/javascript", "text/html", "image/svg+xml", "application/pdf")

OutputKind = Literal["stream", "execute_result", "display_data"]


@dataclass(frozen=True)
class Output:
    """One output of a cell as the kernel published it: a stream's text, or a mime bundle."""

    kind: OutputKind
    data: Mapping[str, Any]  # mime type -> value; a stream is {"text/plain": text}
    name: str | None = None  # a stream's name: stdout, stderr


@dataclass(frozen=True)
class OutputPiece(LabelledPiece):
    """The text a cell showed; ``label`` names the cell for the model (``In[4]``)."""


@dataclass(frozen=True)
class ImagePiece(OutputPiece):
    """One image a cell showed; its sha256 is that of the image bytes."""

    mime_type: str = "image/png"
    data: bytes | None = dataclasses.field(default=None, repr=False)  # None: restored from a record without bytes
    position: int = 0  # the k of "[image k]" in the cell's text
    width: int = 0
    height: int = 0
    nbytes: int = 0

    def __post_init__(self) -> None:
        if self.data is None:
            super().__post_init__()
            return
        object.__setattr__(self, "sha256", hashlib.sha256(self.data).hexdigest())
        object.__setattr__(self, "nbytes", len(self.data))


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR or a JPEG's frame header; (0, 0) when neither is found."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                i += 2
                continue
            (length,) = struct.unpack(">H", data[i + 2 : i + 4])
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[i + 5 : i + 9])
                return int(width), int(height)
            i += 2 + length
    return 0, 0


def image_tokens(width: int, height: int, model: str | None = None) -> int:
    """Gemini's documented rule for an image's input tokens, as an estimate (the API's usage is the truth).

    Gemini 3 and later: up to 1,120 tokens per image at the default media resolution
    for images; earlier models: 258 tokens for an image within 384x384 pixels, else
    258 per 768x768 tile.
    """
    match = re.match(r"gemini-(\d+)", (model or "").removeprefix("models/"))
    if match is None or int(match.group(1)) >= 3:
        return 1_120
    if width <= 384 and height <= 384:
        return 258
    return math.ceil(width / 768) * math.ceil(height / 768) * 258


def piece_tokens(piece: ContextPiece, model: str | None = None) -> int:
    """A piece's input tokens as the plan estimates them (text: four bytes a token; an image: Gemini's rule)."""
    if isinstance(piece, ImagePiece):
        return image_tokens(piece.width, piece.height, model)
    return estimate_tokens(piece.text)


def part_tokens(part: Mapping[str, Any], model: str | None = None) -> int:
    """A content part's input tokens as the plan estimates them: text, an inlineData image, or a function call
    or response (its JSON; a response's images as images)."""
    inline = part.get("inlineData")
    if isinstance(inline, Mapping):
        return image_tokens(*image_size(decoded_image(inline.get("data")) or b""), model)
    if "text" in part or not ({"functionCall", "functionResponse"} & set(part)):
        return estimate_tokens(str(part.get("text", "")))
    response = part.get("functionResponse")
    if not isinstance(response, Mapping) or not response.get("parts"):
        return estimate_tokens(json.dumps(part, ensure_ascii=False))
    images = response["parts"]
    shape = {**part, "functionResponse": {k: v for k, v in response.items() if k != "parts"}}
    return estimate_tokens(json.dumps(shape, ensure_ascii=False)) + sum(part_tokens(p, model) for p in images)


def decoded_image(value: Any) -> bytes | None:
    """The bytes of an image value of a mime bundle (base64 text, as Jupyter carries it, or raw bytes)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        try:  # strictly: a character outside base64 would be skipped, and the bytes would not be the cell's
            return base64.b64decode("".join(value.split()), validate=True)
        except (binascii.Error, ValueError):
            return None
    return None


_MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}


def is_image_of(data: bytes | None, mime_type: str) -> bool:
    """The bytes are the image their mime type says (its magic number, a header giving its size): the API
    refuses the whole request (a 400) for an image part that is not."""
    return data is not None and data.startswith(_MAGIC.get(mime_type, b"\0")) and image_size(data) != (0, 0)


class _Table(HTMLParser):
    """The rows of the first HTML tables, as text: cells apart by ' | ' (a DataFrame's HTML view)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None
        self.tables = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "table":
            self.tables += 1
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            if not self.rows:
                self.rows.append([])
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def html_table_text(html: str) -> str | None:
    """An HTML output holding a table, reduced to its rows as text; None for other HTML."""
    if "<table" not in html.lower():
        return None
    parser = _Table()
    parser.feed(html)
    rows = [" | ".join(r) for r in parser.rows if r]
    return "\n".join(rows) if parser.tables and rows else None


_LINE_END = re.compile(r"\r+\n")


def shown_text(text: str) -> str:
    """Text as the notebook shows it (JupyterLab's fixCarriageReturn): ``\\r\\n`` ends a line (Windows
    files, IPython's ``!`` output); a lone ``\\r`` goes back to the line's start and what follows writes
    over it, the rest of the line staying (a progress bar)."""
    text = text.replace("\r\n", "\n")
    if "\r" not in text:
        return text
    if "\r\n" in text:  # \r\r\n (text mode on Windows writing \r\n) is a line end too
        text = _LINE_END.sub("\n", text)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "\r" in line:
            parts = line.split("\r")
            shown = parts[-1]  # each character is that of the last write reaching it
            if len(shown) < max(map(len, parts)):
                for part in reversed(parts[:-1]):
                    if len(part) > len(shown):
                        shown += part[len(shown) :]
            lines[i] = shown
    return "\n".join(lines)


@dataclass(frozen=True)
class _Image:
    mime_type: str
    data: bytes
    position: int


def _render(outputs: Iterable[Output]) -> tuple[str, list[_Image]]:
    parts: list[str] = []
    images: list[_Image] = []
    for out in outputs:
        data = out.data
        if out.kind == "stream":
            text = shown_text(str(data.get("text/plain", "")))
            parts.append(f"[{out.name}] {text}" if out.name == "stderr" else text)
            continue
        mime = next((m for m in IMAGE_TYPES if m in data), None)
        if mime:  # bytes that are not base64 are an image too: one that is not what it says (left out, one line)
            images.append(_Image(mime, decoded_image(data[mime]) or b"", len(images) + 1))
            parts.append(f"[image {len(images)}]\n")
        elif WIDGET_TYPE in data:
            parts.append(messages.WIDGET_NOT_SENT.render(text=clip(str(data.get("text/plain", "")), 80)) + "\n")
        elif "text/html" in data and (table := html_table_text(str(data["text/html"]))) is not None:
            parts.append(table + "\n")
        elif "text/markdown" in data:
            parts.append(shown_text(str(data["text/markdown"])) + "\n")
        elif any(m in data for m in _NOT_SENT):
            kind = next(m for m in _NOT_SENT if m in data)
            parts.append(messages.OUTPUT_NOT_SENT.render(kind=kind) + "\n")
        elif "text/plain" in data:
            parts.append(shown_text(str(data["text/plain"])) + "\n")
    return "".join(parts), images


def cell_output_pieces(key: str, label: str, outputs: Sequence[Output], max_chars: int) -> list[OutputPiece]:
    """One cell's outputs as pieces: its text (capped at ``max_chars``) and each image, each keyed by the cell.

    The piece keys are stable across runs of the cell (its id, not its execution
    count), so a re-run that shows the same thing sends nothing new.
    """
    text, images = _render(outputs)
    # masked before the cut (a cut inside the key would leave its head unmasked), and each undecodable
    # character (a Latin-1 file name in a listing) as its escape \udcff, as --vars and --error send it
    text = sendable_text(redact(text))
    pieces: list[OutputPiece] = []
    if text.strip():
        if len(text) > max_chars:
            text = clip(text, max_chars) + "\n" + messages.OUTPUT_CUT.render(cap=max_chars)
        pieces.append(OutputPiece(OUTPUTS_FIELD, text, name=key, label=label))
    for image in images:
        width, height = image_size(image.data)
        pieces.append(
            ImagePiece(
                OUTPUTS_FIELD,
                f"{image.mime_type} {width}x{height}",
                name=f"{key}#image{image.position}",
                label=label,
                mime_type=image.mime_type,
                data=image.data,
                position=image.position,
                width=width,
                height=height,
            )
        )
    return pieces


def piece_name(piece: ContextPiece) -> str:
    """How the footer names a piece: ``In[4] output``, ``In[4] image 1``, else its key."""
    if isinstance(piece, ImagePiece):
        return f"{piece.label} image {piece.position}"
    return f"{piece.label} output" if isinstance(piece, OutputPiece) else piece.key


def images_estimate(pieces: Iterable[ContextPiece], model: str | None) -> str | None:
    """The dry run's line for the images a request sends, estimated by Gemini's rule (usage counts them)."""
    images = images_of(pieces)
    if not images:
        return None
    tokens = sum(piece_tokens(p, model) for p in images)
    return (
        f"{len(images)} image(s) sent: ~{tokens:,} input tokens by Gemini's rule for images "
        "(an estimate; the API's usage counts them)"
    )


def payload_entry(piece: OutputPiece) -> dict[str, Any]:
    """The piece's entry in the payload's ``outputs`` list; an image's bytes go as an image part."""
    if isinstance(piece, ImagePiece):
        return {
            "label": piece.label,
            "sha256": piece.sha256,
            "image": piece.position,
            "mimeType": piece.mime_type,
            "width": piece.width,
            "height": piece.height,
        }
    return {"label": piece.label, "sha256": piece.sha256, "text": piece.text}


def sendable(piece: ContextPiece) -> bool:
    """Whether the piece can go in full: an image restored from a record without its bytes cannot."""
    return not isinstance(piece, ImagePiece) or piece.data is not None


def images_of(pieces: Iterable[ContextPiece]) -> list[ImagePiece]:
    """The images among ``pieces`` that go as image parts, in order."""
    return [p for p in pieces if isinstance(p, ImagePiece) and p.data is not None]


def inline_parts(pieces: Iterable[ContextPiece]) -> list[dict[str, Any]]:
    """contents mode: one ``inlineData`` part (mimeType, base64 data) per image."""
    return [
        {"inlineData": {"mimeType": p.mime_type, "data": base64.b64encode(p.data or b"").decode("ascii")}}
        for p in images_of(pieces)
    ]


def interaction_inputs(pieces: Iterable[ContextPiece]) -> list[dict[str, Any]]:
    """interactions mode: one image input (type, base64 data, mime_type) per image."""
    return [
        {"type": "image", "data": base64.b64encode(p.data or b"").decode("ascii"), "mime_type": p.mime_type}
        for p in images_of(pieces)
    ]


# -- the notebook's record: hashes and sizes of images, not their bytes ------------
def recorded_output(piece: ContextPiece, images: bool = False) -> dict[str, Any]:
    """What the record keeps of an output piece beyond field, name, text and sha256 (an image's bytes
    only when ``images``)."""
    if isinstance(piece, ImagePiece):
        kept = {"data": base64.b64encode(piece.data).decode("ascii")} if images and piece.data is not None else {}
        return kept | {
            "label": piece.label,
            "mime_type": piece.mime_type,
            "position": piece.position,
            "width": piece.width,
            "height": piece.height,
            "nbytes": piece.nbytes,
        }
    return {"label": piece.label} if isinstance(piece, OutputPiece) else {}


def restored_output(d: Mapping[str, Any]) -> OutputPiece | None:
    """An output piece from the record (an image without its bytes); None for other pieces."""
    if "mime_type" in d:
        data = d.get("data")
        return ImagePiece(
            d["field"],
            d["text"],
            d.get("name"),
            data=base64.b64decode(data) if isinstance(data, str) else None,
            label=d["label"],
            mime_type=d["mime_type"],
            position=d["position"],
            width=d["width"],
            height=d["height"],
            nbytes=d["nbytes"],
        )
    return OutputPiece(d["field"], d["text"], d.get("name"), label=d["label"]) if "label" in d else None


def held_after_restore(
    context_hashes: Mapping[str, str], state_mode: str, pieces: Iterable[ContextPiece] = ()
) -> dict[str, str]:
    """The pieces the model holds after a restart: in contents mode the kernel's transcript has an image
    only when the record kept its bytes (``record_images``), else it goes again; a server chain holds them."""
    if state_mode == "interactions":
        return dict(context_hashes)
    with_bytes = {(p.key, p.sha256) for p in pieces if isinstance(p, ImagePiece) and p.data is not None}
    return {
        k: v
        for k, v in context_hashes.items()
        if not (k.startswith(OUTPUTS_FIELD + ":") and "#image" in k) or (k, v) in with_bytes
    }
