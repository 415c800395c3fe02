/**
 * One undo step for a group of the kernel's edits (an agent turn's inserts,
 * edits and deletes, named by the request's `undo_group`). JupyterLab's
 * notebook undo (command mode `z`) is the notebook's Y.UndoManager: it keeps
 * a change in its last stack item when the change comes within
 * `captureTimeout` (500 ms) of `lastChange`, else starts a new item, and
 * `stopCapturing()` ends an item. A group's first edit starts an item; each
 * later edit of the group is merged into that item while it is still the top
 * of the stack (no step of the user's, no undo came between), else it starts
 * the group's next item. Every other edit is a step of its own, never merged
 * with the user's changes before or after it.
 */

/** What this needs of a Y.UndoManager (the notebook's `sharedModel.undoManager`). */
export interface IUndoStack {
  readonly undoStack: readonly object[];
  lastChange: number;
  stopCapturing(): void;
}

export class UndoGroups {
  /**
   * Make `edit` (which changes the notebook in transactions the undo stack
   * tracks) part of `group`'s step, or a step of its own (`undo` null: a
   * notebook model without one, the edit as it comes).
   */
  edit<T>(undo: IUndoStack | null, group: string | undefined, edit: () => T): T {
    if (undo === null) {
      return edit();
    }
    const joins = group !== undefined && group === this._group && this._item !== null && top(undo) === this._item;
    if (joins) {
      undo.lastChange = Date.now(); // within captureTimeout: the change goes into the top item
    } else {
      undo.stopCapturing();
    }
    try {
      return edit();
    } finally {
      undo.stopCapturing(); // the user's next change is a step of its own
      const item = top(undo);
      this._group = group !== undefined && item !== null ? group : undefined;
      this._item = this._group !== undefined ? item : null;
    }
  }

  private _group: string | undefined = undefined;
  private _item: object | null = null;
}

function top(undo: IUndoStack): object | null {
  return undo.undoStack.length ? undo.undoStack[undo.undoStack.length - 1] : null;
}
