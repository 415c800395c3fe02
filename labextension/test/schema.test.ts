// The extension's messages, as its pure builders make them, validated against the one schema file.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';

import Ajv2020 from 'ajv/dist/2020';

import { replyTo } from '../src/reply';
import { sentState, snapshotBody, snapshotMessage } from '../src/snapshot';

// npm runs the tests in labextension/dev
const schema = JSON.parse(readFileSync(resolve('../../genai_magics/frontends/bridge_protocol.schema.json'), 'utf8'));
const ajv = new Ajv2020({ allErrors: true });
ajv.addSchema(schema, 'bridge');
const toKernel = ajv.getSchema('bridge#/$defs/ToKernel')!;

function valid(message: unknown): boolean {
  const ok = toKernel(message) as boolean;
  if (!ok) {
    console.warn(JSON.stringify(toKernel.errors));
  }
  return ok;
}

const A = { id: 'a', cell_type: 'code' as const, source: 'x = 1' };
const B = { id: 'b', cell_type: 'markdown' as const, source: '# t' };

test('a full snapshot and a delta are valid snapshots', () => {
  assert.ok(valid(snapshotMessage(1, 'n.ipynb', snapshotBody([A, B], null, false, false)!)));
  const delta = snapshotBody([B], sentState([A, B]), false, false)!;
  assert.ok(valid(snapshotMessage(2, 'n.ipynb', delta)));
});

test('replies: done, done with the removed cell, failed', () => {
  assert.ok(valid(replyTo(3, () => ({ cell_id: 'a' }))));
  const removed = { cell_type: 'code' as const, id: 'a', metadata: {}, outputs: [], source: 'x' };
  assert.ok(valid(replyTo(4, () => ({ cell_id: 'a', cell: removed }))));
  const failed = replyTo(5, () => {
    throw new Error('unknown cell id z in n.ipynb');
  });
  assert.deepEqual(failed, {
    type: 'reply',
    request_id: 5,
    ok: false,
    error: 'unknown cell id z in n.ipynb'
  });
  assert.ok(valid(failed));
});

test('the schema refuses what no side may send', () => {
  const snapshot = snapshotMessage(1, 'n.ipynb', snapshotBody([A], null, false, false)!);
  assert.equal(valid({ ...snapshot, executing: 'a' }), false); // a field outside the schema
  assert.equal(valid({ ...snapshot, seq: 0 }), false);
  assert.equal(valid({ type: 'reply', request_id: 1 }), false); // no ok
});
