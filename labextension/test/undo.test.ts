// Unit tests of one undo step for a group of edits (src/undo.ts), on a real YNotebook (@jupyter/ydoc) as
// JupyterLab 4 makes it: one undo manager per cell for typing, the notebook's for its cells.
import assert from 'node:assert/strict';
import { TestContext, test } from 'node:test';

import { YNotebook } from '@jupyter/ydoc';

import { UndoGroups } from '../src/undo';

/** A notebook of three cells, its undo history empty; disposed after the test (its awareness has a timer). */
function notebook(t: TestContext): YNotebook {
  const nb = YNotebook.create({ disableDocumentWideUndoRedo: true });
  nb.insertCells(0, [
    { cell_type: 'code', source: 'a = 1' },
    { cell_type: 'code', source: 'b = 2' },
    { cell_type: 'code', source: 'c = 3' }
  ]);
  nb.undoManager.clear();
  t.after(() => nb.dispose());
  return nb;
}

const sources = (nb: YNotebook) => nb.cells.map(cell => cell.getSource());

/** An agent turn's writes, as bridge.ts makes them: insert, edit (as the notebook's), delete. */
function turn(nb: YNotebook, groups: UndoGroups, group: string | undefined, between?: () => void): void {
  // Each write seconds after the one before (the model's next request), as after captureTimeout.
  const later = () => nb.undoManager.stopCapturing();
  groups.edit(nb.undoManager, group, () => nb.insertCell(1, { cell_type: 'code', source: 'new' }));
  between?.();
  later();
  groups.edit(nb.undoManager, group, () => nb.transact(() => nb.cells[0].setSource('a = 10')));
  later();
  groups.edit(nb.undoManager, group, () => nb.deleteCell(3));
}

test("a group's inserts, edits and deletes are one undo step", t => {
  const nb = notebook(t);
  turn(nb, new UndoGroups(), 'turn-1');
  assert.deepEqual(sources(nb), ['a = 10', 'new', 'b = 2']);
  assert.equal(nb.undoManager.undoStack.length, 1);
  nb.undo();
  assert.deepEqual(sources(nb), ['a = 1', 'b = 2', 'c = 3']);
});

test('edits without a group are a step each, never merged however close', t => {
  const nb = notebook(t);
  turn(nb, new UndoGroups(), undefined);
  assert.equal(nb.undoManager.undoStack.length, 3);
  nb.undo();
  assert.deepEqual(sources(nb), ['a = 10', 'new', 'b = 2', 'c = 3']);
});

test("a step of the user's between two edits ends the group's step: the rest is the next one", t => {
  const nb = notebook(t);
  turn(nb, new UndoGroups(), 'turn-1', () => nb.insertCell(0, { cell_type: 'markdown', source: '# mine' }));
  assert.equal(nb.undoManager.undoStack.length, 3);
  nb.undo();
  assert.deepEqual(sources(nb), ['# mine', 'a = 1', 'new', 'b = 2', 'c = 3']);
});

test("the user's change after the group is a step of its own", t => {
  const nb = notebook(t);
  const groups = new UndoGroups();
  turn(nb, groups, 'turn-1');
  nb.insertCell(0, { cell_type: 'markdown', source: '# mine' }); // at once: within captureTimeout
  nb.undo();
  assert.deepEqual(sources(nb), ['a = 10', 'new', 'b = 2']);
  nb.undo();
  assert.deepEqual(sources(nb), ['a = 1', 'b = 2', 'c = 3']);
});

test('another group starts a step of its own', t => {
  const nb = notebook(t);
  const groups = new UndoGroups();
  groups.edit(nb.undoManager, 'turn-1', () => nb.deleteCell(0));
  groups.edit(nb.undoManager, 'turn-2', () => nb.deleteCell(0));
  assert.equal(nb.undoManager.undoStack.length, 2);
});
