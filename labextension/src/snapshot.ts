/**
 * Snapshots of a notebook for the kernel: pure data in, the message's fields out.
 *
 * After the first (full) snapshot only what changed goes: the cells whose
 * source or type changed, the ids removed, and the order when it changed.
 * No JupyterLab here, so it is unit-tested on its own (test/snapshot.test.ts).
 */

import { ICell, ISnapshot } from './protocol';

export const VERSION = 1;

/** What the kernel was last sent: the order and each cell as it was. */
export interface ISent {
  order: string[];
  cells: Map<string, ICell>;
}

/** A snapshot's cell fields: `order` only when full or when it changed. */
export interface ISnapshotBody {
  full: boolean;
  order?: string[];
  cells: ICell[];
  removed: string[];
}

/**
 * The snapshot to send for `cells`: everything when `full` or nothing was
 * sent yet, else only the changes since `sent`; null when `skipIfEmpty` and
 * nothing changed.
 */
export function snapshotBody(
  cells: ICell[],
  sent: ISent | null,
  full: boolean,
  skipIfEmpty: boolean
): ISnapshotBody | null {
  const order = cells.map(c => c.id);
  if (full || sent === null) {
    return { full: true, order, cells, removed: [] };
  }
  const changed = cells.filter(c => {
    const old = sent.cells.get(c.id);
    return !old || old.source !== c.source || old.cell_type !== c.cell_type;
  });
  const present = new Set(order);
  const removed = [...sent.cells.keys()].filter(id => !present.has(id));
  const orderChanged = order.length !== sent.order.length || order.some((id, i) => id !== sent.order[i]);
  if (skipIfEmpty && !changed.length && !removed.length && !orderChanged) {
    return null;
  }
  const body: ISnapshotBody = { full: false, cells: changed, removed };
  if (orderChanged) {
    body.order = order;
  }
  return body;
}

/** What the kernel holds once `cells` went out. */
export function sentState(cells: ICell[]): ISent {
  return { order: cells.map(c => c.id), cells: new Map(cells.map(c => [c.id, c])) };
}

/** The whole message: a snapshot of the notebook at `path`, numbered `seq`. */
export function snapshotMessage(seq: number, path: string, body: ISnapshotBody): ISnapshot {
  return { type: 'snapshot', version: VERSION, seq, path, ...body };
}
