// The kernel <-> companion file channel (protocol version 1), as pure functions: no VS Code API here,
// so node's test runner covers it (test/channel.test.ts). The messages' types are generated from
// genai_magics/frontends/companion_protocol.schema.json (protocol.ts); docs/protocol.md describes them.
// Which cell an edit touches, and why one cannot be done, are the bridge's rules: labextension/src/cells.ts.
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import type { ICellType, INotebookOutput, IPresence, IRefusal, IRenamed, IRequest, IStoredCell } from './protocol';

export const PROTOCOL_VERSION = 1;

export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The key the kernel names a notebook by: a cell URI (``vscode-notebook-cell:...#W0s...``) without its fragment. */
export function notebookKey(cellUri: string): string {
  const hash = cellUri.indexOf('#');
  return hash < 0 ? cellUri : cellUri.slice(0, hash);
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}

/** A request file's JSON, checked field by field; a string is the reason it is refused. */
export function parseRequest(text: string): IRequest | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (typeof raw !== 'object' || raw === null) return 'not an object';
  const data = raw as Record<string, unknown>;
  if (data.version !== PROTOCOL_VERSION) return `protocol version ${String(data.version)}, not ${PROTOCOL_VERSION}`;
  const { request_id, notebook, reply_to, op } = data;
  if (typeof request_id !== 'number' || !isString(notebook) || !isString(reply_to)) {
    return 'request_id, notebook and reply_to are required';
  }
  const head = { version: PROTOCOL_VERSION, request_id, notebook, reply_to } as const;
  const cellType: ICellType = data.cell_type === 'markdown' ? 'markdown' : 'code';
  switch (op) {
    case 'snapshot':
      return { ...head, op };
    case 'set_source':
      if (!isString(data.cell_id) || !isString(data.source)) return 'set_source needs cell_id and source';
      return {
        ...head,
        op,
        cell_id: data.cell_id,
        source: data.source,
        expect_sha256: isString(data.expect_sha256) ? data.expect_sha256 : undefined
      };
    case 'insert_cell':
      if (!isString(data.source) || !(data.after_id === null || isString(data.after_id))) {
        return 'insert_cell needs source and after_id';
      }
      return {
        ...head,
        op,
        after_id: data.after_id,
        source: data.source,
        cell_type: cellType,
        cell: isStoredCell(data.cell) ? data.cell : undefined
      };
    case 'delete_cell':
      if (!isString(data.cell_id)) return 'delete_cell needs cell_id';
      return { ...head, op, cell_id: data.cell_id };
    case 'set_outputs': {
      const { cell_id, outputs, execution_count } = data;
      if (
        !isString(cell_id) ||
        !Array.isArray(outputs) ||
        !(execution_count === null || typeof execution_count === 'number')
      ) {
        return 'set_outputs needs cell_id, outputs and execution_count';
      }
      return { ...head, op, cell_id, outputs: outputs as INotebookOutput[], execution_count };
    }
    default:
      return `unknown op ${String(op)}`;
  }
}

function isStoredCell(value: unknown): value is IStoredCell {
  if (typeof value !== 'object' || value === null) return false;
  const cell = value as Record<string, unknown>;
  return isString(cell.source) && isString(cell.language) && Array.isArray(cell.outputs);
}

/** The reply to a request that was not done. */
export function refusal(requestId: number, error: string): IRefusal {
  return { request_id: requestId, ok: false, error };
}

/** A set_source never writes over a hand edit: refused when the cell holds other text than the kernel saw. */
export function checkUnchanged(current: string, expectSha256: string | undefined): void {
  if (expectSha256 !== undefined && sha256(current) !== expectSha256) {
    throw new Error('the cell changed in VS Code since the kernel last saw it');
  }
}

/** How many renames the presence file keeps (the newest): a kernel needs the few since its notebook's last. */
export const RENAMES_KEPT = 100;

/**
 * The presence file: which notebooks this VS Code window has open, where requests go, and the files and
 * folders renamed in it (oldest first), which the kernel of a renamed notebook reads to find its record.
 */
export function presence(
  pid: number,
  notebooks: readonly string[],
  inbox: string,
  version: string,
  renamed: readonly IRenamed[] = []
): IPresence {
  return {
    version: PROTOCOL_VERSION,
    companion: version,
    pid,
    inbox,
    notebooks: [...new Set(notebooks)].sort(),
    renamed: renamed.slice(-RENAMES_KEPT)
  };
}

export function presenceFile(dir: string, pid: number): string {
  return path.join(dir, `companion-${pid}.json`);
}

/** A reply file may only be written inside the channel's directory (a request cannot aim elsewhere). */
export function replyPathAllowed(dir: string, replyTo: string): boolean {
  const relative = path.relative(path.resolve(dir), path.resolve(replyTo));
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}

export function encodeBytes(data: Uint8Array): string {
  return Buffer.from(data).toString('base64');
}

export function decodeBytes(data: string): Uint8Array {
  return new Uint8Array(Buffer.from(data, 'base64'));
}

/** One item of a VS Code cell output: text under a MIME type, bytes (a decoded image), or an error. */
export type ItemSpec =
  | { mime: string; text: string }
  | { mime: string; bytes: Uint8Array }
  | { error: { name: string; message: string; stack: string } };

/** A VS Code cell output, to be made into a NotebookCellOutput: its items and metadata. */
export interface IOutputSpec {
  items: ItemSpec[];
  metadata: Record<string, unknown>;
}

const STDOUT = 'application/vnd.code.notebook.stdout';
const STDERR = 'application/vnd.code.notebook.stderr';
// the order of VS Code's .ipynb reader (extensions/ipynb, deserializers.ts): its items come richest first
const DISPLAY_ORDER = [
  'application/vnd.*',
  'application/vdom.*',
  'application/geo+json',
  'application/x-nteract-model-debug+json',
  'text/html',
  'application/javascript',
  'image/gif',
  'text/latex',
  'text/markdown',
  'image/png',
  'image/svg+xml',
  'image/jpeg',
  'application/json',
  'text/plain'
];

function joined(value: unknown, separator = ''): string {
  return Array.isArray(value) ? value.map(String).join(separator) : isString(value) ? value : '';
}

function displayRank(mime: string): number {
  return DISPLAY_ORDER.findIndex(m => (m.endsWith('*') ? mime.startsWith(m.slice(0, -1)) : m === mime));
}

function dataItem(mime: string, value: unknown): ItemSpec {
  if (mime.startsWith('image/') && mime !== 'image/svg+xml' && isString(value)) {
    return { mime, bytes: decodeBytes(value) }; // nbformat holds images as base64; VS Code renders bytes
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return { mime, text: JSON.stringify(value) };
  }
  return { mime, text: joined(value) };
}

/**
 * An nbformat v4 output as VS Code's own .ipynb reader makes it a cell output, so that saving the
 * notebook writes it back as it was: a stream as one stdout or stderr item, an error as one error
 * item (its traceback as the stack), rich data as one item per MIME type, richest first; the
 * metadata keeps its output_type, metadata and execution count.
 */
export function outputSpec(output: INotebookOutput): IOutputSpec {
  const metadata: Record<string, unknown> = { outputType: output.output_type };
  if (output.transient) metadata.transient = output.transient;
  switch (output.output_type) {
    case 'stream':
      return { items: [{ mime: output.name === 'stderr' ? STDERR : STDOUT, text: joined(output.text) }], metadata };
    case 'error': {
      const error = {
        name: joined(output.ename),
        message: joined(output.evalue),
        stack: joined(output.traceback, '\n')
      };
      return { items: [{ error }], metadata: { ...metadata, originalError: output } };
    }
    default: {
      const data = typeof output.data === 'object' && output.data !== null ? output.data : {};
      const items = Object.entries(data).map(([mime, value]) => dataItem(mime, value));
      const rank = (item: ItemSpec) => ('mime' in item ? displayRank(item.mime) : -1);
      return {
        items: items.sort((a, b) => rank(a) - rank(b)),
        metadata: { ...metadata, executionCount: output.execution_count, metadata: output.metadata ?? {} }
      };
    }
  }
}
