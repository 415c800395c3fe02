// Unit tests of the cell edits' rules that the bridge and the VS Code companion share (src/cells.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { CELL_GONE, NOT_CODE, cellIndex, cellType, insertIndex, insertedCell, runOutputs } from '../src/cells';

const ORDER = ['a', 'b', 'c'];

test('set_source and delete_cell find their cell, or say it is gone', () => {
  assert.equal(cellIndex(ORDER, 'c'), 2);
  assert.throws(() => cellIndex(ORDER, 'gone'), { message: CELL_GONE });
  assert.throws(() => cellIndex(ORDER, undefined), { message: CELL_GONE });
});

test('a new cell goes right below its anchor, or at the top', () => {
  assert.equal(insertIndex(ORDER, 'b'), 2);
  assert.equal(insertIndex(ORDER, 'c'), 3);
  assert.equal(insertIndex(ORDER, null), 0);
  assert.equal(insertIndex([], undefined), 0);
  assert.throws(() => insertIndex(ORDER, 'gone'), /to insert below is no longer in the notebook/);
});

test("the kernel's id for a new cell must be free", () => {
  assert.equal(insertIndex(ORDER, 'a', 'n'), 1);
  assert.throws(() => insertIndex(ORDER, 'a', 'b'), /a cell with id b exists already/);
});

test('a cell type the protocol does not know is raw', () => {
  assert.equal(cellType('markdown'), 'markdown');
  assert.equal(cellType('code'), 'code');
  assert.equal(cellType('heading'), 'raw');
});

test('a new cell is code unless the request says otherwise, with its id and source', () => {
  assert.deepEqual(insertedCell({ cell_id: 'n', source: 'x = 1' }), {
    cell_type: 'code',
    source: 'x = 1',
    metadata: {},
    id: 'n'
  });
  assert.deepEqual(insertedCell({ cell_id: 'm', cell_type: 'markdown' }), {
    cell_type: 'markdown',
    source: '',
    metadata: {},
    id: 'm'
  });
  // as a request from the comm may say it (JSON, not checked against the types)
  const odd = JSON.parse('{"cell_type": "heading"}');
  assert.throws(() => insertedCell(odd), /unknown cell type heading/);
});

test('a removed cell comes back whole, under the id the kernel gives it', () => {
  const removed = {
    cell_type: 'code' as const,
    id: 'old',
    source: 'y = 2',
    metadata: { tags: ['keep'] },
    outputs: [{ output_type: 'stream', name: 'stdout', text: '2\n' }],
    execution_count: 4
  };
  assert.deepEqual(insertedCell({ cell: removed, cell_id: 'new', cell_type: 'markdown' }), {
    ...removed,
    id: 'new'
  });
  assert.equal(insertedCell({ cell: removed, cell_id: 'new', source: 'z' }).source, 'z');
});

const RAN = [
  { output_type: 'stream' as const, name: 'stdout', text: '3\n' },
  { output_type: 'execute_result' as const, execution_count: 7, data: { 'text/plain': '9' }, metadata: {} },
  { output_type: 'error' as const, ename: 'ValueError', evalue: 'no', traceback: ['ValueError: no'] }
];

test('set_outputs leaves the outputs of a run and its count in a code cell', () => {
  assert.deepEqual(runOutputs('code', { outputs: RAN, execution_count: 7 }), { outputs: RAN, executionCount: 7 });
  assert.deepEqual(runOutputs('code', { outputs: [], execution_count: null }), { outputs: [], executionCount: null });
  // as a request from the comm may say it (JSON, not checked against the types)
  assert.equal(runOutputs('code', JSON.parse('{"outputs": [], "execution_count": 1.5}')).executionCount, null);
});

test('set_outputs refuses a cell that is not code, and an output a run does not leave', () => {
  assert.throws(() => runOutputs('markdown', { outputs: RAN, execution_count: 1 }), { message: NOT_CODE });
  const odd = JSON.parse('{"outputs": [{"output_type": "update_display_data"}], "execution_count": 1}');
  assert.throws(() => runOutputs('code', odd), /unknown output type update_display_data/);
});
