/**
 * The bridge for one notebook panel: the comm's lifecycle, snapshots pushed
 * before each execute request and after edits, and the kernel's requests to
 * edit cells (see index.ts for the whole protocol).
 */
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

import { keepOffSubshells, sendOnMainShell } from './send';
import { NOT_CODE, cellIndex, cellType, insertIndex, insertedCell, runOutputs } from './cells';
import { ICell, INotebookOutput, IRequest, IToFrontend } from './protocol';
import { Done, replyTo } from './reply';
import { ISent, VERSION, sentState, snapshotBody, snapshotMessage } from './snapshot';
import { resaved } from './saved';
import { markStale } from './stale';
import { IUndoStack, UndoGroups } from './undo';

const TARGET = 'genai_magics.bridge';
/** The key this extension adds to every execute request's metadata: `{path}`, the notebook's file now. */
const METADATA_KEY = 'genai_magics';
const TAGGED = Symbol('genai-magics-bridge tagged');
const EDIT_PUSH_DELAY_MS = 400;

/** A kernel message this bridge acts on (the kernel sends nothing else on this comm). */
function isToFrontend(data: object): data is IToFrontend {
  return 'type' in data && (data.type === 'request' || data.type === 'resync' || data.type === 'saved_view');
}

/** A shared cell's Yjs undo manager: YBaseCell has one, the ISharedCell interface does not say so. */
function hasUndoManager(cell: object): cell is { undoManager: { stopCapturing(): void } | null } {
  return 'undoManager' in cell;
}

/** The notebook's Yjs undo manager: YNotebook has one, the ISharedNotebook interface does not say so. */
function hasUndoStack(model: object): model is { undoManager: IUndoStack } {
  return 'undoManager' in model;
}

/** What set_outputs and saved_view write in a code cell's model (CodeCellModel; the ICellModel interface does not have it). */
interface IRunModel {
  outputs: {
    clear(): void;
    add(output: INotebookOutput): number;
    readonly length: number;
    get(index: number): { toJSON(): INotebookOutput };
    set(index: number, output: INotebookOutput): void;
  };
  executionCount: number | null;
  trusted: boolean;
}

function hasOutputs(cell: object): cell is IRunModel {
  return 'outputs' in cell && 'executionCount' in cell;
}

/**
 * The bridge for one notebook panel.
 */
export class NotebookBridge {
  constructor(panel: NotebookPanel) {
    this._panel = panel;
    const ctx = panel.sessionContext;
    ctx.kernelChanged.connect(this._onKernelChanged, this);
    ctx.statusChanged.connect(this._onStatusChanged, this);
    ctx.connectionStatusChanged.connect(this._onConnectionStatus, this);
    NotebookActions.executionScheduled.connect(this._onExecutionScheduled, this);
    // A rename or move: the kernel learns the new path at once (its record follows the notebook).
    panel.context.pathChanged.connect(() => this._push(false), this);
    panel.disposed.connect(this._dispose, this);
    void ctx.ready.then(() => {
      this._watchModel();
      this._setKernel(ctx.session?.kernel ?? null);
    });
  }

  // ---- kernel and comm lifecycle ----

  private _onKernelChanged(_: unknown, args: { newValue: Kernel.IKernelConnection | null }): void {
    this._setKernel(args.newValue);
  }

  private _setKernel(kernel: Kernel.IKernelConnection | null): void {
    if (kernel === this._kernel) {
      return;
    }
    this._dropComm();
    if (this._kernel && this._kernel.id !== kernel?.id) {
      // A new connection to the same kernel keeps its widgets alive: only another kernel ends them.
      this._markStale(kernel ? 'The kernel changed' : 'The kernel stopped');
    }
    if (this._kernel && !this._kernel.isDisposed) {
      try {
        this._kernel.removeCommTarget(TARGET, this._onCommOpen);
      } catch (e) {
        // the old connection may already be gone
      }
    }
    this._kernel = kernel;
    if (!kernel) {
      return;
    }
    kernel.registerCommTarget(TARGET, this._onCommOpen);
    this._tagExecutes(kernel);
    void this._adoptExistingComm(kernel);
  }

  /**
   * Every execute request of this notebook's kernel connection names the
   * notebook's file in its metadata. The kernel reads it before the cell
   * runs, also when no comm is open yet: after Restart & Run All the cells
   * are queued before the comm the first of them opens, and a restarted
   * kernel's environment still names the file the kernel started with
   * (Untitled.ipynb before the first save's rename). It also tells the
   * kernel that this extension is there, so that the proposals of those
   * cells write through the comm once it is open.
   */
  private _tagExecutes(kernel: Kernel.IKernelConnection): void {
    const tagged = kernel as Kernel.IKernelConnection & { [TAGGED]?: boolean };
    if (tagged[TAGGED]) {
      return;
    }
    tagged[TAGGED] = true;
    const panel = this._panel;
    const requestExecute = kernel.requestExecute.bind(kernel);
    kernel.requestExecute = (content, disposeOnDone, metadata) =>
      requestExecute(content, disposeOnDone, {
        ...metadata,
        [METADATA_KEY]: { path: panel.context.path }
      });
  }

  private _onStatusChanged(): void {
    const status = this._panel.sessionContext.session?.kernel?.status;
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      // The kernel side of the comm is gone with the old process, and so are
      // the kernel sides of the widgets on screen.
      this._dropComm();
      this._markStale(status === 'dead' ? 'The kernel stopped' : 'The kernel restarted');
    }
  }

  /** Say in every genai_magics widget with buttons on screen that its buttons are dead, and disable them. */
  private _markStale(what: string): void {
    if (this._panel.isDisposed) {
      return;
    }
    // Each cell's own node: a cell scrolled out of a windowed notebook is detached, not gone.
    markStale(
      this._panel.content.widgets.map(cell => cell.node),
      what
    );
  }

  private _onConnectionStatus(): void {
    const kernel = this._kernel;
    if (kernel && kernel.connectionStatus === 'connected' && !this._comm) {
      void this._adoptExistingComm(kernel);
    }
  }

  /**
   * The kernel may have opened its comm before this page was loaded (a page
   * reload, a second tab): take that comm over and send a full snapshot.
   */
  private async _adoptExistingComm(kernel: Kernel.IKernelConnection): Promise<void> {
    try {
      await kernel.info;
      if (kernel !== this._kernel || this._comm) {
        return;
      }
      const reply = await kernel.requestCommInfo({ target_name: TARGET });
      if (kernel !== this._kernel || this._comm) {
        return;
      }
      if (reply.content.status !== 'ok') {
        console.debug('genai-magics-bridge: comm_info failed', reply.content);
        return;
      }
      const comms = reply.content.comms as { [id: string]: { target_name: string } };
      const ids = Object.keys(comms).filter(id => comms[id].target_name === TARGET);
      if (!ids.length) {
        console.debug('genai-magics-bridge: no comm open in the kernel yet');
        return;
      }
      const commId = ids[ids.length - 1];
      if (kernel.hasComm(commId)) {
        console.debug("genai-magics-bridge: the comm is this connection's already");
        return;
      }
      this._attachComm(kernel.createComm(TARGET, commId));
      console.debug('genai-magics-bridge: took over the kernel comm');
    } catch (e) {
      console.debug('genai-magics-bridge: no comm to adopt', e);
    }
  }

  private _onCommOpen = (comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void => {
    const kernel = this._kernel;
    if (!kernel || kernel.isDisposed) {
      return;
    }
    // iopub is broadcast: a comm opened by another client's execution (the
    // same kernel shown in another tab) belongs to that client. Ignore it
    // quietly; closing it would close it for the kernel too.
    const parentSession = (msg.parent_header as { session?: string }).session;
    if (parentSession && parentSession !== kernel.clientId) {
      return;
    }
    const data = (msg.content.data || {}) as { version?: number };
    if (data.version !== undefined && data.version !== VERSION) {
      console.warn(`genai-magics-bridge: kernel speaks protocol ${data.version}, this extension ${VERSION}`);
    }
    this._attachComm(comm);
  };

  private _attachComm(comm: Kernel.IComm): void {
    keepOffSubshells(comm); // this comm never uses the subshell JupyterLab would start for it
    this._dropComm();
    this._comm = comm;
    this._sent = null;
    comm.onMsg = msg => this._onMsg(comm, msg);
    comm.onClose = () => {
      if (this._comm === comm) {
        this._comm = null;
        this._sent = null;
      }
    };
    this._push(true);
  }

  private _dropComm(): void {
    this._comm = null;
    this._sent = null;
  }

  private _dispose(): void {
    NotebookActions.executionScheduled.disconnect(this._onExecutionScheduled, this);
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    const comm = this._comm;
    this._comm = null;
    if (comm && !comm.isDisposed) {
      try {
        // tell the kernel the notebook is gone
        comm.close();
      } catch (e) {
        // the kernel is gone already
      }
    }
    if (this._kernel && !this._kernel.isDisposed) {
      try {
        this._kernel.removeCommTarget(TARGET, this._onCommOpen);
      } catch (e) {
        // ignore
      }
    }
    this._kernel = null;
  }

  private _send(data: object): boolean {
    return sendOnMainShell(this._kernel, this._comm, data);
  }

  // ---- snapshots ----

  private _watchModel(): void {
    const model = this._panel.content.model;
    if (!model) {
      return;
    }
    model.sharedModel.changed.connect(() => this._schedulePush(), this);
  }

  private _currentCells(): ICell[] {
    const model = this._panel.content.model;
    if (!model) {
      return [];
    }
    const out: ICell[] = [];
    for (const cell of model.sharedModel.cells) {
      out.push({
        id: cell.getId(),
        cell_type: cellType(cell.cell_type),
        source: cell.getSource()
      });
    }
    return out;
  }

  private _schedulePush(): void {
    if (!this._comm) {
      return;
    }
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    this._timer = setTimeout(() => {
      this._timer = null;
      this._push(false, true);
    }, EDIT_PUSH_DELAY_MS);
  }

  private _onExecutionScheduled(_: unknown, args: { notebook: unknown }): void {
    if (args.notebook !== this._panel.content || !this._comm) {
      return;
    }
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    // Synchronous: this comm_msg is queued before CodeCell.execute sends the
    // execute request, on the same (main) shell channel.
    this._push(false);
  }

  /**
   * Send a snapshot: everything when `full` or nothing was sent yet, else
   * only what changed (snapshot.ts).
   */
  private _push(full: boolean, skipIfEmpty = false): void {
    if (!this._comm) {
      return;
    }
    const cells = this._currentCells();
    const body = snapshotBody(cells, this._sent, full, skipIfEmpty);
    if (body === null) {
      return;
    }
    const data = snapshotMessage(this._seq + 1, this._panel.context.path, body);
    if (this._send(data)) {
      this._seq = data.seq;
      this._sent = sentState(cells);
    }
  }

  // ---- requests from the kernel ----

  private _onMsg(comm: Kernel.IComm, msg: KernelMessage.ICommMsgMsg): void {
    if (comm !== this._comm) {
      return;
    }
    const data = msg.content.data;
    if (!isToFrontend(data)) {
      return;
    }
    if (data.type === 'resync') {
      this._push(true);
      return;
    }
    if (data.type === 'saved_view') {
      this._saveView(data.model_id, data.data);
      return;
    }
    if (data.type !== 'request') {
      return;
    }
    this._send(replyTo(data.request_id, () => this._perform(data)));
  }

  /** A widget's saved text set anew in every output showing it (saved.ts): the file then holds what happened. */
  private _saveView(id: string, saved: Record<string, unknown>): void {
    const model = this._panel.isDisposed ? null : this._panel.content.model;
    for (const cell of model ? Array.from(model.cells) : []) {
      if (!hasOutputs(cell)) {
        continue;
      }
      for (let i = 0; i < cell.outputs.length; i++) {
        const output = resaved(cell.outputs.get(i).toJSON(), id, saved);
        if (output) {
          cell.outputs.set(i, output); // gone.ts keeps the live view as it is
        }
      }
    }
  }

  /** One cell edit, by the rules of cells.ts; thrown errors are the reply's one line. */
  private _perform(req: IRequest): Done {
    const model = this._panel.isDisposed ? null : this._panel.content.model;
    if (!model) {
      throw new Error('notebook closed');
    }
    const shared = model.sharedModel;
    const order = shared.cells.map(cell => cell.getId());
    const notebookUndo = hasUndoStack(shared) ? shared.undoManager : null;
    // An edit of a group is made as the notebook's (its undo tracks it), the group one step of it (undo.ts).
    const asStep = <T>(edit: () => T): T => this._undoGroups.edit(notebookUndo, req.undo_group, edit);
    switch (req.op) {
      case 'set_source': {
        if (typeof req.source !== 'string') {
          throw new Error('set_source needs a source string');
        }
        const source = req.source;
        const cell = shared.cells[cellIndex(order, req.cell_id)];
        if (cell.getSource() === source) {
          // nothing to write
        } else if (req.undo_group !== undefined) {
          asStep(() => shared.transact(() => cell.setSource(source)));
        } else {
          // One undo step of its own in the cell, never merged with typing just before or after.
          const undo = hasUndoManager(cell) ? cell.undoManager : null;
          undo?.stopCapturing();
          cell.setSource(source);
          undo?.stopCapturing();
        }
        return { cell_id: req.cell_id };
      }
      case 'insert_cell': {
        const index = insertIndex(order, req.after_id, req.cell_id);
        // The cell's JSON came over the comm; the generated protocol types its fields `unknown`.
        const cell = insertedCell(req) as Parameters<typeof shared.insertCell>[1];
        return { cell_id: asStep(() => shared.insertCell(index, cell)).getId() };
      }
      case 'delete_cell': {
        const i = cellIndex(order, req.cell_id);
        const removed = shared.cells[i].toJSON();
        asStep(() => shared.deleteCell(i));
        return {
          cell_id: req.cell_id,
          cell: { ...removed, cell_type: cellType(removed.cell_type) }
        };
      }
      case 'set_outputs': {
        const cell = model.cells.get(cellIndex(order, req.cell_id));
        const { outputs, executionCount } = runOutputs(cell.type, req);
        if (!hasOutputs(cell)) {
          throw new Error(NOT_CODE);
        }
        // as a run by the frontend leaves the cell: trusted (it ran), its outputs anew, its count
        cell.trusted = true;
        cell.outputs.clear();
        for (const output of outputs) {
          cell.outputs.add(output);
        }
        cell.executionCount = executionCount;
        return { cell_id: req.cell_id };
      }
      default:
        throw new Error(`unknown request ${(req as IRequest).op}`);
    }
  }

  private _panel: NotebookPanel;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _comm: Kernel.IComm | null = null;
  private _sent: ISent | null = null;
  private _seq = 0;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _undoGroups = new UndoGroups();
}
