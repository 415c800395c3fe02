"""What each cell showed, captured at the kernel, so it works in every frontend.

ipykernel (and terminal IPython) send everything a cell shows through three
doors: ``shell.display_pub.publish`` (``display_data``, matplotlib's inline
figures included, which it publishes from a ``post_execute`` hook, before
``post_run_cell``), ``shell.displayhook.write_format_data`` (``execute_result``)
and ``sys.stdout`` / ``sys.stderr`` (ipykernel's ``OutStream``: ``stream``).
Each door is wrapped on its instance: the wrapper notes the output for the cell
that runs (set from ``pre_run_cell``) and then calls the original, so what the
user sees does not change. A write counts for the running cell only when it goes
out with that cell's request as its parent (ipykernel's streams and publisher tell
the parent of each write), which is what a frontend shows under the cell: the line
ipykernel 7's shell channel thread logs for a message to an unknown comm, while a
cell runs, goes out with none. Nor is what the package's own threads print (a
library's log line from the SDK's warm-up) the cell's (engine/background.py).
Counted as output, either would reach the model and make a restarted kernel's
replay miss, at the whim of a thread's timing. ``clear_output`` and display
updates are followed too. The streams are wrapped again at each cell's start when the wrapper is gone:
IPython 9 tees ``write`` itself around every cell and puts back the ``write`` it
found when the cell ends, which drops a wrapper installed during the cell.

No IPython import: the shell is only reached through its attributes.
"""

from __future__ import annotations

import io
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .. import messages
from ..engine.background import in_background
from ..engine.context import ContextPiece
from ..engine.outputs import (
    MAX_CELL_CHARS,
    MAX_CELL_OUTPUTS,
    OUTPUTS_FIELD,
    SHOWED_NOTHING,
    ImagePiece,
    Output,
    OutputKind,
    OutputPiece,
    cell_output_pieces,
    image_size,
    is_image_of,
)
from ..engine.text import cut

MAX_CELLS = 500  # cells whose outputs are kept (the oldest go first)


def _parent(door: Any) -> str | None:
    """The msg_id of the request a write through ``door`` goes out with ("" for none); None where the door tells
    no parent (terminal IPython): there every write is the running cell's."""
    header = getattr(door, "parent_header", None)
    if not isinstance(header, dict):
        return None
    msg_id = header.get("msg_id")
    return msg_id if isinstance(msg_id, str) else ""


@dataclass
class _Entry:
    kind: OutputKind
    data: dict[str, Any]
    name: str | None = None
    display_id: str | None = None


@dataclass
class OutputCapture:
    """Per cell id, the outputs this kernel produced for its latest run."""

    cells: OrderedDict[str, list[_Entry]] = field(default_factory=OrderedDict)
    current: str | None = None
    request: str | None = None  # the msg_id of the request that runs it (None: not told, terminal IPython)
    _restore: list[Callable[[], None]] = field(default_factory=list)
    _streams: dict[str, Callable[[], None]] = field(default_factory=dict)  # the taps on stdout/stderr now
    _writing: threading.local = field(default_factory=threading.local)  # in a stream tap's write (this thread)
    _publishing: int = 0  # inside a display door: what it prints (terminal IPython) is that output, not a stream
    # display id -> the cells that showed it: an update finds its outputs without a walk over every cell
    _displays: dict[str, set[str]] = field(default_factory=dict)

    # -- the cell that runs ---------------------------------------------------
    def start(self, cell_id: str | None) -> None:
        """A new run of ``cell_id`` (None: a frontend's helper code, whose outputs are nobody's); called as it
        starts, where its request is the parent of what it prints."""
        if self._restore:  # installed: the streams may have lost their tap since the last cell
            self._tap_streams()
        self.current, self.request = cell_id, _parent(sys.stdout)
        if cell_id is not None:
            self._forget(cell_id, self.cells.pop(cell_id, []))
            self.cells[cell_id] = []
            while len(self.cells) > MAX_CELLS:
                self._forget(*self.cells.popitem(last=False))

    def _forget(self, cell_id: str, entries: list[_Entry]) -> None:
        for e in entries:
            cells = self._displays.get(e.display_id) if e.display_id is not None else None
            if cells is not None:
                cells.discard(cell_id)
                if not cells:
                    del self._displays[e.display_id]  # type: ignore[arg-type]  # not None: found above

    def outputs(self, cell_id: str) -> list[Output]:
        return [Output(e.kind, dict(e.data), e.name) for e in self.cells.get(cell_id, [])]

    # -- what the doors see ---------------------------------------------------
    def _entries(self, parent: str | None = None) -> list[_Entry] | None:
        """The running cell's outputs, if a write that goes out with ``parent`` is one of them."""
        if self.current is None or in_background():
            return None
        if parent is not None and self.request is not None and parent != self.request:
            return None  # the frontend shows it elsewhere, or nowhere
        return self.cells.get(self.current)

    def stream(self, name: str, text: str, parent: str | None = None) -> None:
        entries = self._entries(parent)
        if entries is None or not text or self._publishing:
            return
        if entries and entries[-1].kind == "stream" and entries[-1].name == name:
            kept = entries[-1].data["text/plain"]
            if len(kept) < MAX_CELL_CHARS:
                whole = kept + text
                entries[-1].data["text/plain"] = whole if len(whole) <= MAX_CELL_CHARS else cut(whole, MAX_CELL_CHARS)
        elif len(entries) < MAX_CELL_OUTPUTS:
            entries.append(_Entry("stream", {"text/plain": cut(text, MAX_CELL_CHARS)}, name))

    def display(
        self, kind: OutputKind, data: Any, transient: Any = None, update: bool = False, parent: str | None = None
    ) -> None:
        if not isinstance(data, dict):
            return
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        if update and display_id is not None:  # update_display: the output changes where it was shown
            for cell_id in self._displays.get(display_id, ()):
                for e in self.cells.get(cell_id, ()):
                    if e.display_id == display_id:
                        e.data = dict(data)
            return
        entries = self._entries(parent)
        if entries is not None and len(entries) < MAX_CELL_OUTPUTS:
            entries.append(_Entry(kind, dict(data), display_id=display_id))
            if display_id is not None and self.current is not None:
                self._displays.setdefault(display_id, set()).add(self.current)

    def clear(self, parent: str | None = None) -> None:
        entries = self._entries(parent)
        if entries is not None and self.current is not None:
            self._forget(self.current, entries)
            entries.clear()

    # -- installing the taps --------------------------------------------------
    def install(self, shell: Any) -> None:
        """Wrap the shell's display publisher and display hook, and the process's stdout/stderr."""
        self.uninstall()
        pub = getattr(shell, "display_pub", None)
        if pub is not None:
            publish, clear = pub.publish, getattr(pub, "clear_output", None)

            def publish_tap(data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> Any:
                self.display("display_data", data, kwargs.get("transient"), bool(kwargs.get("update")), _parent(pub))
                return self._quietly(publish, data, metadata, *args, **kwargs)

            self._wrap(pub, "publish", publish_tap)
            if clear is not None:

                def clear_tap(*args: Any, **kwargs: Any) -> Any:
                    self.clear(_parent(pub))
                    return clear(*args, **kwargs)

                self._wrap(pub, "clear_output", clear_tap)
        hook = getattr(shell, "displayhook", None)
        write_format_data = getattr(hook, "write_format_data", None)
        if write_format_data is not None:

            def result_tap(format_dict: Any, md_dict: Any = None) -> Any:
                self.display("execute_result", format_dict)
                return self._quietly(write_format_data, format_dict, md_dict)

            self._wrap(hook, "write_format_data", result_tap)
        self._tap_streams()

    def _quietly(self, door: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._publishing += 1
        try:
            return door(*args, **kwargs)
        finally:
            self._publishing -= 1

    def _tap_streams(self) -> None:
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            write = getattr(stream, "write", None)
            if write is None or getattr(write, "_genai_magics_tap", False):
                continue

            def write_tap(
                text: Any, *args: Any, _write: Any = write, _name: str = name, _stream: Any = stream, **kwargs: Any
            ) -> Any:
                # a cell run inside a running cell (the agent's run_cell) taps the stream again around the
                # tee IPython put over the first tap: one write passes both, and is noted once
                outer = not getattr(self._writing, "active", False)
                if isinstance(text, str) and outer:
                    self.stream(_name, text, _parent(_stream))
                self._writing.active = True
                try:
                    return _write(text, *args, **kwargs)
                finally:
                    self._writing.active = not outer

            write_tap._genai_magics_tap = True  # type: ignore[attr-defined]
            restore = self._wrap(stream, "write", write_tap)
            if restore is not None:
                self._streams[name] = restore

    def _wrap(self, obj: Any, attr: str, tap: Callable[..., Any]) -> Callable[[], None] | None:
        had_own = attr in getattr(obj, "__dict__", {})
        previous = obj.__dict__.get(attr) if had_own else None
        try:
            setattr(obj, attr, tap)
        except (AttributeError, TypeError):  # a C-level stream cannot take an instance attribute
            return None

        def restore() -> None:
            if obj.__dict__.get(attr) is not tap:  # replaced since (IPython's tee): not ours to undo
                return
            if had_own:
                setattr(obj, attr, previous)
            else:
                obj.__dict__.pop(attr, None)

        if attr != "write":
            self._restore.append(restore)
        return restore

    def uninstall(self) -> None:
        for restore in [*self._streams.values(), *reversed(self._restore)]:
            restore()
        self._streams.clear()
        self._restore.clear()


# -- from captured outputs to pieces ------------------------------------------------
@dataclass(frozen=True)
class OutputPieces:
    pieces: list[ContextPiece]
    notes: dict[str, str]  # piece key -> the one line to show when it goes (or why it does not)


_fitted: OrderedDict[tuple[str, int], tuple[bytes, str] | None] = OrderedDict()


def _downscale(piece: ImagePiece, max_bytes: int) -> tuple[bytes, str] | None:
    """The image re-encoded smaller until it fits ``max_bytes`` (Pillow), and a line saying so; None without Pillow."""
    key = (piece.sha256, max_bytes)
    if key in _fitted:
        return _fitted[key]
    try:
        from PIL import Image
    except ImportError:
        return None
    image: Any = Image.open(io.BytesIO(piece.data or b""))
    fmt = "JPEG" if piece.mime_type == "image/jpeg" else "PNG"
    if fmt == "JPEG" and image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    scale = (max_bytes / max(1, piece.nbytes)) ** 0.5
    data = b""
    for _ in range(8):
        size = (max(1, int(image.width * scale)), max(1, int(image.height * scale)))
        out = io.BytesIO()
        image.resize(size, Image.Resampling.LANCZOS).save(out, fmt, **({"quality": 85} if fmt == "JPEG" else {}))
        data = out.getvalue()
        if len(data) <= max_bytes:
            break
        scale *= 0.7
    width, height = image_size(data)
    fitted = (
        data,
        messages.IMAGE_DOWNSCALED.render(
            label=piece.label,
            position=piece.position,
            size=piece.nbytes,
            cap=max_bytes,
            width=width,
            height=height,
            new_size=len(data),
        ),
    )
    _fitted[key] = fitted
    while len(_fitted) > 64:
        _fitted.popitem(last=False)
    return fitted


def fit_images(pieces: Sequence[OutputPiece], max_bytes: int) -> OutputPieces:
    """Images over ``max_bytes`` downscaled (with Pillow) or left out with one line, and so are images whose
    bytes are not what their mime type says (an HTML page labelled image/png): never silently dropped."""
    out: list[ContextPiece] = []
    notes: dict[str, str] = {}
    for piece in pieces:
        if isinstance(piece, ImagePiece) and piece.data is not None and not is_image_of(piece.data, piece.mime_type):
            notes[piece.key] = messages.IMAGE_NOT_WHAT_IT_SAYS.render(
                label=piece.label, position=piece.position, mime_type=piece.mime_type
            )
            continue
        if not isinstance(piece, ImagePiece) or piece.nbytes <= max_bytes:
            out.append(piece)
            continue
        fitted = _downscale(piece, max_bytes)
        if fitted is None:
            notes[piece.key] = messages.IMAGE_NEEDS_PILLOW.render(
                label=piece.label, position=piece.position, size=piece.nbytes, cap=max_bytes
            )
            continue
        data, note = fitted
        width, height = image_size(data)
        small = replace(piece, data=data, width=width, height=height, text=f"{piece.mime_type} {width}x{height}")
        out.append(small)
        notes[small.key] = note
    return OutputPieces(out, notes)


def cell_pieces(capture: OutputCapture, key: str, label: str, max_chars: int, max_image_bytes: int) -> OutputPieces:
    """What the cell ``key`` showed in this kernel, as pieces with the image caps applied."""
    return fit_images(cell_output_pieces(key, label, capture.outputs(key), max_chars), max_image_bytes)


def shown_pieces(
    capture: OutputCapture, key: str, label: str, max_chars: int, max_images: int, max_image_bytes: int
) -> list[ContextPiece]:
    """What ``cell_outputs`` (and a ``run_cell`` result) gives the model of a cell: its text, and its images under
    ``max_images`` / ``max_image_bytes``; one line saying it showed nothing when it did not."""
    found = cell_pieces(capture, key, label, max_chars, max_image_bytes).pieces
    images = [p for p in found if isinstance(p, ImagePiece)]
    kept = [p for p in found if not isinstance(p, ImagePiece)] + images[: max(0, max_images)]
    if not kept:
        return [OutputPiece(OUTPUTS_FIELD, SHOWED_NOTHING, key, label=label)]
    return kept


def over_image_cap(sent: Sequence[ContextPiece], max_images: int) -> list[ContextPiece]:
    """The images a turn would send beyond ``max_images`` (the later ones): they wait for a later turn."""
    images: list[ContextPiece] = [p for p in sent if isinstance(p, ImagePiece)]
    return images[max_images:] if max_images >= 0 else []


__all__ = [
    "OutputCapture",
    "OutputPieces",
    "cell_pieces",
    "fit_images",
    "over_image_cap",
    "OutputPiece",
    "shown_pieces",
]
