"""A live notebook's cell edits over an in-memory list of cell dicts (tests/unit: --notebook Apply and Undo, the
agent turn's Undo)."""

from __future__ import annotations

from genai_magics.engine.cells import Cell


class ListBridge:
    """The bridge's cell-edit requests over an in-memory notebook, answered later, as the extension's
    replies arrive after the request (``answer`` delivers them)."""

    connected = True

    def __init__(self, cells: list[dict]):
        self.nb = [dict(c) for c in cells]
        self.replies: list = []
        self.count = 0

    def cells(self) -> list[Cell]:
        return [Cell(c["id"], c["source"], c["cell_type"]) for c in self.nb]

    def _at(self, cell_id) -> int:
        return next(i for i, c in enumerate(self.nb) if c["id"] == cell_id)

    def set_source(self, cell_id, source, done):
        self.nb[self._at(cell_id)]["source"] = source
        self.replies.append(lambda: done(None))

    def insert_cell(self, after_id, source, cell_type, done, cell=None):
        self.count += 1
        new = (
            dict(cell)
            if cell
            else {"id": f"new-{self.count}", "cell_type": cell_type, "source": source, "metadata": {}}
        )
        self.nb.insert(0 if after_id is None else self._at(after_id) + 1, new)
        self.replies.append(lambda: done(None))
        return new["id"]

    def delete_cell(self, cell_id, done, on_removed=None):
        gone = self.nb.pop(self._at(cell_id))
        self.replies.append(lambda: (on_removed(dict(gone)) if on_removed else None, done(None)))

    def answer(self) -> None:
        while self.replies:
            self.replies.pop(0)()
