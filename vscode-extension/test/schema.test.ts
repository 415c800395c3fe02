// The companion's messages, as its pure builders make them, validated against the one schema file.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import Ajv2020 from 'ajv/dist/2020';
import { parseRequest, presence, refusal } from '../src/channel';

// npm runs the tests in vscode-extension/
const schema = JSON.parse(readFileSync(resolve('../genai_magics/frontends/companion_protocol.schema.json'), 'utf8'));
const ajv = new Ajv2020({ allErrors: true });
ajv.addSchema(schema, 'companion');

/** Why ``message`` is not a ``definition`` of the schema (null: it is one). */
function wrong(definition: string, message: unknown): string | null {
  const validate = ajv.getSchema(`companion#/$defs/${definition}`)!;
  return validate(message) ? null : ajv.errorsText(validate.errors);
}

const NB = 'vscode-notebook-cell:/ws/nb.ipynb';
const head = { version: 1, request_id: 4, notebook: NB, reply_to: '/c/out-9/rep-4.json' };
const stored = {
  id: `${NB}#a`,
  cell_type: 'code',
  source: 'x = 1',
  language: 'python',
  metadata: {},
  outputs: []
};

test('the presence file and a refusal are what the schema says', () => {
  assert.equal(wrong('Presence', presence(7, ['b', 'a'], '/c/in-7', '0.1.0')), null);
  const renamed = [{ from: '/ws/draft.ipynb', to: '/ws/final.ipynb' }];
  assert.equal(wrong('Presence', presence(7, ['b'], '/c/in-7', '0.1.0', renamed)), null);
  assert.equal(wrong('Reply', refusal(4, 'the notebook is not open in VS Code')), null);
});

test('every request the kernel may write is read as a request the schema holds', () => {
  for (const request of [
    { ...head, op: 'snapshot' },
    { ...head, op: 'set_source', cell_id: `${NB}#a`, source: 'y', expect_sha256: 'ab' },
    { ...head, op: 'insert_cell', after_id: null, source: '', cell_type: 'markdown' },
    {
      ...head,
      op: 'insert_cell',
      after_id: `${NB}#a`,
      source: 'x = 1',
      cell_type: 'code',
      cell: stored
    },
    { ...head, op: 'delete_cell', cell_id: `${NB}#a` },
    {
      ...head,
      op: 'set_outputs',
      cell_id: `${NB}#a`,
      outputs: [{ output_type: 'stream', name: 'stdout', text: '1\n' }],
      execution_count: 2
    }
  ]) {
    assert.equal(wrong('Request', request), null, request.op);
    const parsed = parseRequest(JSON.stringify(request));
    assert.equal(typeof parsed, 'object', String(parsed));
    assert.equal(wrong('Request', JSON.parse(JSON.stringify(parsed))), null, request.op);
  }
});

test('what the companion refuses to read, the schema refuses too', () => {
  for (const request of [
    { ...head, op: 'rename', cell_id: 'a' },
    { ...head, op: 'set_source', cell_id: 'a' },
    { ...head, version: 2, op: 'snapshot' },
    { ...head, op: 'insert_cell', source: '' },
    { ...head, op: 'set_outputs', cell_id: 'a', outputs: [] }
  ]) {
    assert.equal(typeof parseRequest(JSON.stringify(request)), 'string', request.op);
    assert.notEqual(wrong('Request', request), null, request.op);
  }
});
