// Generated from genai_magics/frontends/companion_protocol.schema.json by labextension/dev/gen_protocol.py:
// do not edit; change the schema and run the script.

/** Companion: companion-<VS Code pid>.json, the notebooks this window has open and where requests go. */
export interface IPresence {
  version: 1;
  companion: string;
  pid: number;
  inbox: string;
  notebooks: string[];
  renamed?: IRenamed[];
}

/** A file or folder renamed or moved in this window, oldest first: VS Code ends a renamed notebook's kernel, and the kernel of the new name takes the notebook's record over from the old one. */
export interface IRenamed {
  from: string;
  to: string;
}

export type ICellType = 'code' | 'markdown' | 'raw';

/** One cell of a snapshot; its id is the cell's vscode-notebook-cell: URI. */
export interface ICell {
  id: string;
  cell_type: ICellType;
  source: string;
}

/** One representation of an output: its MIME type and its bytes as base64. */
export interface IOutputItem {
  mime: string;
  data: string;
}

export interface IOutput {
  items: IOutputItem[];
  metadata?: Record<string, unknown>;
}

/** One nbformat v4 output (stream, display_data, execute_result or error), as a .ipynb file holds it. */
export interface INotebookOutput {
  output_type: 'stream' | 'display_data' | 'execute_result' | 'error';
  [key: string]: unknown;
}

/** What a removed cell was, so Undo puts it back exactly; id: the kernel's name for it, added by the kernel when it sends the cell back. */
export interface IStoredCell {
  id?: string;
  cell_type: ICellType;
  source: string;
  language: string;
  metadata: Record<string, unknown>;
  outputs: IOutput[];
  execution_order?: number;
  success?: boolean;
}

/** Kernel: the notebook's cells, as VS Code holds them now. */
export interface ISnapshotRequest {
  version: 1;
  request_id: number;
  notebook: string;
  reply_to: string;
  op: 'snapshot';
}

/** Kernel: replace a cell's text; expect_sha256, the text the kernel last saw: any other is never overwritten. */
export interface ISetSourceRequest {
  version: 1;
  request_id: number;
  notebook: string;
  reply_to: string;
  op: 'set_source';
  cell_id: string;
  source: string;
  expect_sha256?: string;
}

/** Kernel: a new cell right below after_id (null: at the top); cell: a removed one put back as it was. */
export interface IInsertCellRequest {
  version: 1;
  request_id: number;
  notebook: string;
  reply_to: string;
  op: 'insert_cell';
  after_id: string | null;
  source: string;
  cell_type: ICellType;
  cell?: IStoredCell;
}

/** Kernel: delete a cell; the reply holds what it was. */
export interface IDeleteCellRequest {
  version: 1;
  request_id: number;
  notebook: string;
  reply_to: string;
  op: 'delete_cell';
  cell_id: string;
}

/** Kernel: replace a code cell's outputs and execution count (a cell the kernel ran for the agent). */
export interface ISetOutputsRequest {
  version: 1;
  request_id: number;
  notebook: string;
  reply_to: string;
  op: 'set_outputs';
  cell_id: string;
  outputs: INotebookOutput[];
  execution_count: number | null;
}

/** Kernel: a request file in the companion's inbox. */
export type IRequest =
  ISnapshotRequest | ISetSourceRequest | IInsertCellRequest | IDeleteCellRequest | ISetOutputsRequest;

/** Companion: the notebook's file and its cells in order. */
export interface ISnapshotReply {
  request_id: number;
  ok: true;
  path: string;
  cells: ICell[];
}

/** Companion: a cell's text or outputs set, or a cell inserted (cell_id: its URI). */
export interface IEditReply {
  request_id: number;
  ok: true;
  cell_id: string;
}

/** Companion: a cell deleted, and what it was. */
export interface IDeleteReply {
  request_id: number;
  ok: true;
  cell_id: string;
  cell: IStoredCell;
}

/** Companion: the request was not done, and why (one line for the user). */
export interface IRefusal {
  request_id: number;
  ok: false;
  error: string;
}

/** Companion: the file named by the request's reply_to. */
export type IReply = ISnapshotReply | IEditReply | IDeleteReply | IRefusal;
