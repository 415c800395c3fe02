import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checkUnchanged,
  decodeBytes,
  encodeBytes,
  notebookKey,
  outputSpec,
  parseRequest,
  presence,
  RENAMES_KEPT,
  refusal,
  replyPathAllowed,
  sha256
} from '../src/channel';

const CELL = 'vscode-notebook-cell://127.0.0.1:8080/ws/nb.ipynb#W2sZmlsZQ%3D%3D';
const base = {
  version: 1,
  request_id: 3,
  notebook: 'vscode-notebook-cell://127.0.0.1:8080/ws/nb.ipynb',
  reply_to: '/d/r'
};

test("a notebook's key is its cells' URI without the fragment", () => {
  assert.equal(notebookKey(CELL), 'vscode-notebook-cell://127.0.0.1:8080/ws/nb.ipynb');
  assert.equal(notebookKey('no-fragment'), 'no-fragment');
});

test('requests are checked field by field', () => {
  const ok = parseRequest(JSON.stringify({ ...base, op: 'set_source', cell_id: CELL, source: 'x = 1' }));
  assert.deepEqual(ok, {
    version: 1,
    request_id: 3,
    notebook: base.notebook,
    reply_to: '/d/r',
    op: 'set_source',
    cell_id: CELL,
    source: 'x = 1',
    expect_sha256: undefined
  });
  assert.equal(parseRequest('{'), 'not JSON');
  assert.match(String(parseRequest(JSON.stringify({ ...base, version: 2, op: 'snapshot' }))), /protocol version 2/);
  assert.match(String(parseRequest(JSON.stringify({ ...base, op: 'set_source', cell_id: CELL }))), /needs/);
  assert.match(String(parseRequest(JSON.stringify({ ...base, op: 'rm -rf' }))), /unknown op/);
  const insert = parseRequest(
    JSON.stringify({ ...base, op: 'insert_cell', after_id: null, source: '', cell_type: 'raw' })
  );
  assert.equal(typeof insert === 'object' && insert.op === 'insert_cell' && insert.cell_type, 'code');
});

test('a refusal names the request and says why', () => {
  assert.deepEqual(refusal(3, 'the notebook is not open in VS Code'), {
    request_id: 3,
    ok: false,
    error: 'the notebook is not open in VS Code'
  });
});

test('a write is refused when the cell holds other text than the kernel saw', () => {
  assert.throws(() => checkUnchanged('x = 2', sha256('x = 1')), /changed in VS Code/);
  assert.doesNotThrow(() => checkUnchanged('x = 1', sha256('x = 1')));
  assert.doesNotThrow(() => checkUnchanged('anything', undefined));
});

test("replies stay inside the channel's directory", () => {
  assert.equal(replyPathAllowed('/tmp/ch', '/tmp/ch/out-1/rep-1.json'), true);
  assert.equal(replyPathAllowed('/tmp/ch', '/tmp/ch/../etc/passwd'), false);
  assert.equal(replyPathAllowed('/tmp/ch', '/etc/passwd'), false);
  assert.equal(replyPathAllowed('/tmp/ch', '/tmp/ch'), false);
});

test('the presence file lists each open notebook once, in order', () => {
  assert.deepEqual(presence(7, ['b', 'a', 'b'], '/tmp/ch/in-7', '0.1.0'), {
    version: 1,
    companion: '0.1.0',
    pid: 7,
    inbox: '/tmp/ch/in-7',
    notebooks: ['a', 'b'],
    renamed: []
  });
});

test('the presence file keeps the newest renames, oldest first', () => {
  const renamed = Array.from({ length: RENAMES_KEPT + 2 }, (_, i) => ({
    from: `/w/${i}.ipynb`,
    to: `/w/${i + 1}.ipynb`
  }));
  const kept = presence(7, [], '/tmp/ch/in-7', '0.1.0', renamed).renamed ?? [];
  assert.equal(kept.length, RENAMES_KEPT);
  assert.deepEqual(kept[0], { from: '/w/2.ipynb', to: '/w/3.ipynb' });
  assert.deepEqual(kept.at(-1), renamed.at(-1));
});

test('output bytes survive the round trip', () => {
  const bytes = new Uint8Array([0, 255, 10, 13, 200]);
  assert.deepEqual(decodeBytes(encodeBytes(bytes)), bytes);
});

test('a stream is one stdout or stderr item, its lines joined', () => {
  const out = outputSpec({ output_type: 'stream', name: 'stdout', text: ['1\n', '2\n'] });
  assert.deepEqual(out, {
    items: [{ mime: 'application/vnd.code.notebook.stdout', text: '1\n2\n' }],
    metadata: { outputType: 'stream' }
  });
  const err = outputSpec({ output_type: 'stream', name: 'stderr', text: 'careful\n' });
  assert.deepEqual(err.items, [{ mime: 'application/vnd.code.notebook.stderr', text: 'careful\n' }]);
});

test('an error is one error item, its traceback the stack, the output kept for saving', () => {
  const output = {
    output_type: 'error' as const,
    ename: 'ValueError',
    evalue: 'bad input',
    traceback: ['Traceback', 'ValueError: bad input']
  };
  assert.deepEqual(outputSpec(output), {
    items: [{ error: { name: 'ValueError', message: 'bad input', stack: 'Traceback\nValueError: bad input' } }],
    metadata: { outputType: 'error', originalError: output }
  });
});

test('rich data is one item per MIME type, richest first, images as bytes', () => {
  const png = encodeBytes(new Uint8Array([137, 80, 78, 71]));
  const out = outputSpec({
    output_type: 'execute_result',
    execution_count: 4,
    data: { 'text/plain': ['<Figure>', ' 1'], 'image/png': png, 'application/json': { a: 1 }, 'text/html': '<b>x</b>' },
    metadata: { 'image/png': { width: 10 } }
  });
  assert.deepEqual(out, {
    items: [
      { mime: 'text/html', text: '<b>x</b>' },
      { mime: 'image/png', bytes: new Uint8Array([137, 80, 78, 71]) },
      { mime: 'application/json', text: '{"a":1}' },
      { mime: 'text/plain', text: '<Figure> 1' }
    ],
    metadata: { outputType: 'execute_result', executionCount: 4, metadata: { 'image/png': { width: 10 } } }
  });
});

test('set_outputs is read with its outputs and execution count, or refused', () => {
  const outputs = [{ output_type: 'stream', name: 'stdout', text: '3\n' }];
  const ok = parseRequest(JSON.stringify({ ...base, op: 'set_outputs', cell_id: CELL, outputs, execution_count: 3 }));
  assert.deepEqual(ok, { ...base, op: 'set_outputs', cell_id: CELL, outputs, execution_count: 3 });
  const none = parseRequest(JSON.stringify({ ...base, op: 'set_outputs', cell_id: CELL, outputs }));
  assert.match(String(none), /set_outputs needs/);
});
