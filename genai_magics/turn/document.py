"""Which cell a turn is about: a --cell REF found, a follow-up's kept document, the default,
the whole notebook for --notebook; and the context and outputs that go along with it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn

from .. import messages
from ..engine.applied import strip_applied_marker
from ..engine.cells import WHOLE_NOTEBOOK, Cell, Document, WholeNotebook, defined_names, is_genai_magic, undecodable_at
from ..engine.context import ContextPiece, secondary_context
from ..engine.conversation import Conversation
from ..engine.errors import UserError
from ..engine.hashing import sha256_text
from ..engine.notebook_text import notebook_text
from ..frontends.notebook_view import ExecutedCells, NotebookFileError, NotebookView
from ..frontends.turn_view import TurnView
from ..sources.outputs import OutputCapture, OutputPieces, cell_pieces
from .requests import Settings, TurnFrontend, TurnRequest

_FALLBACK_ID = re.compile(r"^(In\[\d+\]|run-\d+)$")  # no frontend cell id: named by execution count
_COUNT_REF = re.compile(r"^(?:In\s*\[\s*)?(\d+)\s*\]?$")


def _as_in(cells: Iterable[Cell], cell: Cell) -> Cell:
    """The cell as a view's ``cells`` (just read: a file's view read again is one more stat and merge check)
    hold it, with the execution count the kernel knows when they know none."""
    for c in cells:
        if c.id == cell.id:
            return Cell(c.id, c.source, c.cell_type, c.execution_count or cell.execution_count)
    return cell


@dataclass
class DocumentChooser:
    """This kernel's cells (what it ran, what each showed) asked which one a turn is about."""

    executed: ExecutedCells
    outputs: OutputCapture

    def find_cell(self, view: NotebookView, ref: str, flag: str = "--cell") -> Cell:
        """The cell ``ref`` names; never one the running agent turn deleted (the kernel still knows its run)."""
        cell = self._found(view, ref.strip(), flag)
        if isinstance(view, TurnView) and view.deleted(cell.id):
            raise UserError(messages.AGENT_CELL_DELETED, name=flag, label=ref.strip())
        return cell

    def _found(self, view: NotebookView, ref: str, flag: str) -> Cell:
        running = self.executed.running_id
        if ref == "-1":
            cell = self.executed.latest_document(exclude=running)
            if cell is None:
                raise UserError(messages.NO_CODE_CELL_RUN, flag=flag)
            return self._freshest(view, cell)
        cells = list(view.cells())  # read once: the cell found is taken as these hold it (_as_in)
        m = _COUNT_REF.match(ref)
        by_count = None
        if m:  # only this session's runs have an In[n]: a saved file's counts are another session's
            count = int(m.group(1))
            by_count = self.executed.by_execution_count(count) or next(
                (c for c in cells if c.execution_count == count), None
            )
            if not ref.isdigit():  # written In[n]: nothing else is meant
                if by_count is None:
                    raise UserError(messages.NO_CELL_WITH_COUNT, flag=flag, ref=ref, count=count)
                return _as_in(cells, by_count)
        exact = [c for c in cells if c.id == ref] or ([self.executed.by_id[ref]] if ref in self.executed.by_id else [])
        by_id = exact or [c for c in cells if c.id.startswith(ref)]
        if by_count is not None and by_id:
            raise UserError(messages.AMBIGUOUS_COUNT_OR_ID, flag=flag, ref=ref, cell=by_id[0].id[:12])
        if by_count is not None:
            return _as_in(cells, by_count)
        if len(by_id) == 1:  # the view's only cell of that id, as these cells hold it (or the kernel's: not in them)
            return by_id[0]
        if len(by_id) > 1:
            raise UserError(messages.AMBIGUOUS_ID, flag=flag, ref=ref, count=len(by_id))
        if m:
            raise UserError(messages.NO_CELL_WITH_COUNT_OR_ID, flag=flag, ref=ref)
        raise UserError(messages.NO_SUCH_CELL, flag=flag, ref=ref)

    def _freshest(self, view: NotebookView, cell: Cell) -> Cell:
        """The same cell as the live view sees it now (unsaved edits included)."""
        return _as_in(view.cells(), cell)

    def label(self, view: NotebookView, cell: Cell) -> str:
        """How people find the cell: In[n] once it ran, else its position in the notebook."""
        ran = cell.execution_count or getattr(self.executed.by_id.get(cell.id), "execution_count", None)
        if ran is not None:
            return f"In[{ran}]"
        ids = [c.id for c in view.cells()]
        return f"cell #{ids.index(cell.id) + 1}" if cell.id in ids else cell.label

    def default_target(self, frontend: TurnFrontend) -> Cell | None:
        cell = frontend.default_target()
        return self._freshest(frontend.view, cell) if cell else None

    def follow_up_target(self, frontend: TurnFrontend, conv: Conversation | None) -> Cell | None:
        """A follow-up keeps its conversation's document (a `clear` run in between does not take
        its place), unless the newest run cell holds exactly the code the model has (the proposal
        run at the terminal's pre-filled prompt, or pasted into a new cell): the code lives there
        now. A new conversation takes the default. A document cell that now holds a genai magic
        (VS Code: a magic typed back into the cell Apply wrote) or is no code cell any more is no
        document: the code moves to a cell holding exactly what the model has, or the turn says
        why not."""
        view = frontend.view
        default = self.default_target(frontend)
        kept = self.kept_target(view, conv)
        if kept is not None and (kept.cell_type != "code" or is_genai_magic(kept.source)):
            kept = self._holding_model_code(view, conv) or self._no_document_left(view, kept)
        if kept is None or (
            default is not None
            and conv is not None
            and conv.sync.active_document_sha256 == sha256_text(strip_applied_marker(default.source))
        ):
            return default
        return kept

    def _holding_model_code(self, view: NotebookView, conv: Conversation | None) -> Cell | None:
        """The newest code cell that holds exactly the code the model has."""
        held = conv.sync.active_document_sha256 if conv else None
        cells = [c for c in view.cells() if c.cell_type == "code" and not is_genai_magic(c.source)]
        holding = [c for c in cells if held and sha256_text(strip_applied_marker(c.source)) == held]
        return holding[-1] if holding else None

    def _no_document_left(self, view: NotebookView, kept: Cell) -> NoReturn:
        where = "this cell" if kept.id == self.executed.running_id else self.label(view, kept)
        now = "holds a genai magic" if kept.cell_type == "code" else f"is a {kept.cell_type} cell"
        raise UserError(messages.MAGIC_IN_DOCUMENT, where=where, now=now)

    def kept_target(self, view: NotebookView, conv: Conversation | None) -> Cell | None:
        """The document a conversation already works on, while that cell still exists."""
        key = conv.document_key if conv else None
        if key is None or isinstance(key, WholeNotebook):
            return None
        # the view holds every cell the kernel knows (a live notebook: only those still there)
        kept = next((c for c in view.cells() if c.id == key), None)
        return self._edited_rerun(view, kept) if kept is not None and _FALLBACK_ID.match(key) else kept

    def _edited_rerun(self, view: NotebookView, cell: Cell) -> Cell:
        """Without cell ids every run is its own In[n]: the newest later run that defines every
        top-level name the document defines is the document edited and run again."""
        names = defined_names(cell.source)
        order = self.executed.order
        later = order[order.index(cell.id) + 1 :] if cell.id in order else []
        for key in reversed(later):
            run = self.executed.by_id[key]
            if names and key != self.executed.running_id and not is_genai_magic(run.source):
                if names <= defined_names(run.source):
                    return self._freshest(view, run)
        return cell

    def resolve_document(
        self, frontend: TurnFrontend, req: TurnRequest, settings: Settings, conv: Conversation | None = None
    ) -> tuple[Document | None, Cell | None]:
        view = frontend.view
        if req.notebook:
            try:  # the live view has every cell; otherwise the notebook file must be readable
                known = getattr(view, "notebook_cells", view.cells)()
            except NotebookFileError as exc:
                raise UserError(messages.NOTEBOOK_FLAG, why=exc) from None
            cells = [c for c in known if not is_genai_magic(c.source) and c.id != self.executed.running_id]
            if not cells:
                raise UserError(messages.NOTEBOOK_FLAG, why=messages.NOTEBOOK_EMPTY.render())
            doc = Document(key=WHOLE_NOTEBOOK, label="the notebook", source=notebook_text(cells))
            target = None
        else:
            if req.cell:
                target = self.find_cell(view, req.cell)
            elif req.preferred_target and req.preferred_target in self.executed.by_id:
                target = self._freshest(view, self.executed.by_id[req.preferred_target])
            else:
                target = self.follow_up_target(frontend, conv)
            if target is None:
                if req.mode == "edit":
                    raise UserError(messages.NOTHING_TO_EDIT)
                return None, None
            named = f"--cell {req.cell}" if req.cell else self.label(view, target)
            if target.cell_type != "code":
                raise UserError(messages.NOT_A_CODE_CELL, named=named, cell_type=target.cell_type)
            if is_genai_magic(target.source):
                raise UserError(messages.MAGIC_AS_DOCUMENT, named=named)
            # A cell Apply wrote in a running-cell frontend starts with the instruction line.
            doc = Document(key=target.id, label=self.label(view, target), source=strip_applied_marker(target.source))
        bad = undecodable_at(doc.source)
        if bad is not None:
            raise UserError(messages.DOCUMENT_NOT_TEXT, label=doc.label, at=bad)
        size = len(doc.source.encode("utf-8", "surrogatepass"))
        if size > settings.max_document_bytes:
            raise UserError(messages.DOCUMENT_OVER_CAP, size=size, cap=settings.max_document_bytes)
        if req.no_context and req.mode == "ask":
            return None, target
        return doc, target

    def context_pieces(
        self, view: NotebookView, req: TurnRequest, doc: Document | None, settings: Settings
    ) -> list[ContextPiece]:
        explicit = list(req.extra_pieces)
        if req.no_context or req.notebook:
            return explicit
        key = str(doc.key) if doc else None  # a cell's id: --notebook has no other context (above)
        exclude = {self.executed.running_id or "", key or ""}
        anchor = key if doc else self.executed.running_id  # the context is what is nearest to it
        piece = secondary_context(list(view.cells()), exclude, settings.secondary_context_chars, anchor)
        return ([piece] if piece else []) + explicit

    def output_pieces(
        self, view: NotebookView, req: TurnRequest, doc: Document | None, settings: Settings
    ) -> OutputPieces:
        """What the document cell showed (unless --no-outputs, --no-context or --notebook) and the --outputs cells."""
        cells = [self.find_cell(view, ref, "--outputs") for ref in req.output_cells]
        if doc is not None and not isinstance(doc.key, WholeNotebook) and req.outputs and not req.no_context:
            cells.insert(0, Cell(doc.key, doc.source, execution_count=None))
        pieces: list[ContextPiece] = []
        notes: dict[str, str] = {}
        for cell in {c.id: c for c in cells}.values():
            label = doc.label if doc is not None and cell.id == doc.key else self.label(view, cell)
            found = cell_pieces(self.outputs, cell.id, label, settings.max_output_chars, settings.max_image_bytes)
            pieces += found.pieces
            notes |= found.notes
        return OutputPieces(pieces, notes)

    def magic_cell(self) -> str | None:
        """The frontend's id of the running magic cell; None where it sends none (nbclient)."""
        running = self.executed.running_id
        return running if running and not _FALLBACK_ID.match(running) else None
