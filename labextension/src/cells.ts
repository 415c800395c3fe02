/**
 * The cell edits the kernel asks a frontend for (set_source, insert_cell, delete_cell, set_outputs),
 * as pure rules over the notebook's cell ids in order: which cell an edit touches, or the one line
 * that says why it cannot be done (thrown: the kernel shows the error's message as it is). Both
 * frontends follow them, then edit with their own API: the JupyterLab bridge (bridge.ts) and the
 * VS Code companion (vscode-extension/src/extension.ts, whose bundle takes this file in). No
 * JupyterLab, VS Code or Node.js API here, so node's test runner covers it (test/cells.test.ts).
 */
import type { ICellType, INotebookCell, INotebookOutput, IRequest } from './protocol';

export const CELL_GONE = 'the cell is no longer in the notebook';
const ANCHOR_GONE = 'the cell to insert below is no longer in the notebook';
export const NOT_CODE = 'only a code cell has outputs';
const CELL_TYPES: readonly string[] = ['code', 'markdown', 'raw'] satisfies ICellType[];
const OUTPUT_TYPES: readonly unknown[] = [
  'stream',
  'display_data',
  'execute_result',
  'error'
] satisfies INotebookOutput['output_type'][];

/** Where set_source writes and which cell delete_cell removes: the index of the cell `id`. */
export function cellIndex(order: readonly string[], id: string | undefined): number {
  const at = id === undefined ? -1 : order.indexOf(id);
  if (at < 0) {
    throw new Error(CELL_GONE);
  }
  return at;
}

/**
 * Where insert_cell puts its cell: right below `afterId` (null: at the top). Refused when that
 * cell is gone, or when `newId`, the id the kernel chose for the new cell, is taken already.
 */
export function insertIndex(order: readonly string[], afterId: string | null | undefined, newId?: string): number {
  if (newId && order.includes(newId)) {
    throw new Error(`a cell with id ${newId} exists already`);
  }
  if (afterId === null || afterId === undefined) {
    return 0;
  }
  const at = order.indexOf(afterId);
  if (at < 0) {
    throw new Error(ANCHOR_GONE);
  }
  return at + 1;
}

function isCellType(name: string): name is ICellType {
  return CELL_TYPES.includes(name);
}

/**
 * A cell's type as the protocol knows it: one it does not know is raw, as nbformat reads a cell
 * of a later minor version.
 */
export function cellType(name: string): ICellType {
  return isCellType(name) ? name : 'raw';
}

/**
 * The nbformat JSON of the cell insert_cell puts in (the bridge's; VS Code builds its own cell):
 * the removed cell the request carries, as delete_cell returned it, or a new code cell, with the
 * request's id, type and source over it. Refused when the type is not one of nbformat's.
 */
export function insertedCell(request: Pick<IRequest, 'cell' | 'cell_id' | 'cell_type' | 'source'>): INotebookCell {
  const restore: Partial<INotebookCell> = request.cell ?? {};
  const type = restore.cell_type || request.cell_type || 'code';
  if (!isCellType(type)) {
    throw new Error(`unknown cell type ${type}`);
  }
  const cell: INotebookCell = {
    ...restore,
    cell_type: type,
    source: request.source ?? restore.source ?? '',
    metadata: restore.metadata ?? {}
  };
  if (request.cell_id) {
    cell.id = request.cell_id;
  }
  return cell;
}

/**
 * What set_outputs leaves in a cell, as if the frontend had run it (the kernel ran its code for the
 * agent): its outputs, nbformat v4 as the request carries them, and its execution count (null when
 * the request has none). Refused for a cell that is not code, and for an output of a kind a run does
 * not leave in a cell (update_display_data, clear_output: the kernel applied those already).
 */
export function runOutputs(
  type: string,
  request: Pick<IRequest, 'outputs' | 'execution_count'>
): { outputs: INotebookOutput[]; executionCount: number | null } {
  if (type !== 'code') {
    throw new Error(NOT_CODE);
  }
  const outputs = request.outputs ?? [];
  for (const output of outputs) {
    if (!OUTPUT_TYPES.includes(output.output_type)) {
      throw new Error(`unknown output type ${String(output.output_type)}`);
    }
  }
  const count = request.execution_count;
  return { outputs, executionCount: typeof count === 'number' && Number.isInteger(count) ? count : null };
}
