"""Real image bytes for the tests that show, send and record images."""

from __future__ import annotations

import os
import struct
import zlib


def png(width: int, height: int, seed: int = 0, noise: bool = False) -> bytes:
    """A real PNG (RGB, 8 bit): one colour from ``seed``, or random noise that does not compress."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = bytes([seed % 256, (seed * 7) % 256, (seed * 13) % 256]) * width
    raw = b"".join(b"\x00" + (os.urandom(3 * width) if noise else row) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")
