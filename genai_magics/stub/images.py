"""Image parts on the stand-in: accepted, checked, counted and recorded.

contents mode sends ``{"inlineData": {"mimeType", "data"}}`` parts (the SDK writes
base64, URL-safe); interactions mode ``{"type": "image", "data", "mime_type"}``
inputs. Each image is decoded (a part that is not base64 of a PNG or JPEG is a
400, as the API refuses it), recorded by the sha256 of its bytes, and read as
input tokens by the documented Gemini 2 rule: 258 tokens within 384x384 pixels,
else 258 per 768x768 tile. In the (role, text) sequences the stand-in compares
for caching, an image is an ``("image", marker)`` entry whose marker is as many
4-byte tokens long as the image counts, and equal only for equal bytes.
Standard library only (and the package's pure header reader).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
from collections.abc import Callable
from typing import Any

from ..engine.outputs import image_size  # the PNG/JPEG header reading; the rest here is the stand-in's own
from .tools import is_function_content

IMAGE_ROLE = "image"
ACCEPTED = ("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif")


class BadImage(ValueError):
    """An image part the API would refuse; the message is the 400's."""


def _size(data: bytes) -> tuple[int, int]:
    width, height = image_size(data)
    if not width or not height:
        raise BadImage("Unable to process input image: the data is not a PNG or JPEG image. (stub)")
    return width, height


def image_tokens(width: int, height: int) -> int:
    if width <= 384 and height <= 384:
        return 258
    return math.ceil(width / 768) * math.ceil(height / 768) * 258


def _decode(mime_type: Any, data: Any) -> dict[str, Any]:
    if mime_type not in ACCEPTED:
        raise BadImage(f"Unsupported MIME type: {mime_type}. (stub)")
    if not isinstance(data, str):
        raise BadImage("Invalid value at 'data' (TYPE_BYTES): an image's data must be base64 text. (stub)")
    try:
        raw = base64.b64decode(data.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise BadImage("Invalid value at 'data' (TYPE_BYTES): not valid base64. (stub)") from None
    width, height = _size(raw)
    return {
        "mime_type": mime_type,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "bytes": len(raw),
        "width": width,
        "height": height,
        "tokens": image_tokens(width, height),
    }


def content_images(content: Any) -> list[dict[str, Any]]:
    """The images of one contents-mode content (its inlineData parts)."""
    found = []
    for part in content.get("parts") or [] if isinstance(content, dict) else []:
        inline = part.get("inlineData") or part.get("inline_data") if isinstance(part, dict) else None
        if isinstance(inline, dict):
            found.append(_decode(inline.get("mimeType") or inline.get("mime_type"), inline.get("data")))
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(response, dict):  # a function result's images: its own inline-data parts
            found += content_images(response)
    return found


def input_images(value: Any) -> list[dict[str, Any]]:
    """The images of an interaction's input: ``{"type": "image", ...}`` items, also inside a step's
    ``content`` (the SDK sends a list of content items as one ``user_input`` step)."""
    found: list[dict[str, Any]] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict) and item.get("type") == "image":
            found.append(_decode(item.get("mime_type"), item.get("data")))
        elif isinstance(item, dict) and isinstance(item.get("content"), list):
            found += input_images(item["content"])
        elif isinstance(item, dict) and item.get("type") == "function_result":
            found += input_images(item.get("result"))
    return found


def entries(images: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each image as an entry of a (role, text) sequence: ``tokens`` 4-byte tokens, equal only for equal bytes."""
    return [(IMAGE_ROLE, (img["sha256"] * math.ceil(img["tokens"] * 4 / 64))[: img["tokens"] * 4]) for img in images]


def contents_with_images(
    contents: Any, texts: Callable[[Any], list[str]]
) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """(role, text) per content with its images after it, and every image with the index of its content."""
    turns: list[tuple[str, str]] = []
    images: list[dict[str, Any]] = []
    for n, content in enumerate(c for c in contents or [] if isinstance(c, dict)):
        role = "tool" if is_function_content(content) else content.get("role") or "user"
        turns.append((role, "".join(texts(content))))
        found = content_images(content)
        turns += entries(found)
        images += [img | {"content": n} for img in found]
    return turns, images


def current_images(contents: Any, images: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The images of the current turn: the user contents after the last model content."""
    roles = [(c.get("role") or "user") for c in contents or [] if isinstance(c, dict)]
    last_model = max((i for i, r in enumerate(roles) if r == "model"), default=-1)
    return [img for img in images if img["content"] > last_model]
