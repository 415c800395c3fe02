// Unit tests of the pure snapshot module (node's test runner, no JupyterLab): dev/package.json's `test`.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ICell } from '../src/protocol';
import { sentState, snapshotBody } from '../src/snapshot';

const cell = (id: string, source: string, cell_type: ICell['cell_type'] = 'code') => ({
  id,
  cell_type,
  source
});
const A = cell('a', 'x = 1');
const B = cell('b', '# title', 'markdown');
const C = cell('c', 'y = 2');

test('the first snapshot is full: every cell, the order, nothing removed', () => {
  assert.deepEqual(snapshotBody([A, B], null, false, false), {
    full: true,
    order: ['a', 'b'],
    cells: [A, B],
    removed: []
  });
});

test('asked for in full, it is full even after others', () => {
  const body = snapshotBody([A, B], sentState([A, B]), true, false);
  assert.equal(body?.full, true);
  assert.deepEqual(body?.cells, [A, B]);
});

test('after the first only the changed cells go, without the order when it is the same', () => {
  const edited = cell('b', '# a new title', 'markdown');
  assert.deepEqual(snapshotBody([A, edited], sentState([A, B]), false, false), {
    full: false,
    cells: [edited],
    removed: []
  });
});

test('a changed cell type is a change', () => {
  const raw = cell('b', '# title', 'raw');
  assert.deepEqual(snapshotBody([A, raw], sentState([A, B]), false, false)?.cells, [raw]);
});

test('removed ids, new cells and the new order', () => {
  assert.deepEqual(snapshotBody([C, A], sentState([A, B]), false, false), {
    full: false,
    order: ['c', 'a'],
    cells: [C],
    removed: ['b']
  });
});

test('a move alone sends the order and no cell', () => {
  assert.deepEqual(snapshotBody([B, A], sentState([A, B]), false, false), {
    full: false,
    order: ['b', 'a'],
    cells: [],
    removed: []
  });
});

test('nothing changed: nothing to send when asked to skip, an empty delta otherwise', () => {
  assert.equal(snapshotBody([A, B], sentState([A, B]), false, true), null);
  assert.deepEqual(snapshotBody([A, B], sentState([A, B]), false, false), {
    full: false,
    cells: [],
    removed: []
  });
});

test('an empty notebook after cells: all removed', () => {
  assert.deepEqual(snapshotBody([], sentState([A, B]), false, true), {
    full: false,
    order: [],
    cells: [],
    removed: ['a', 'b']
  });
});
