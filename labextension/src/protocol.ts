// Generated from genai_magics/frontends/bridge_protocol.schema.json by labextension/dev/gen_protocol.py:
// do not edit; change the schema and run the script.

/** The kernel's comm_open data. */
export interface ICommOpen {
  version: 1;
}

/** One cell of a snapshot. */
export interface ICell {
  id: string;
  cell_type: ICellType;
  source: string;
}

export type ICellType = 'code' | 'markdown' | 'raw';

/** A cell's whole nbformat JSON (id, metadata, outputs, execution count), as the frontend's cell.toJSON() gives it. */
export interface INotebookCell {
  cell_type: ICellType;
  [key: string]: unknown;
}

/** One nbformat v4 output (stream, display_data, execute_result or error), as a cell's outputs hold it. */
export interface INotebookOutput {
  output_type: 'stream' | 'display_data' | 'execute_result' | 'error';
  [key: string]: unknown;
}

/** Frontend to kernel: the notebook's cells, in full or what changed since the last one. */
export interface ISnapshot {
  type: 'snapshot';
  version: 1;
  full: boolean;
  seq: number;
  path: string;
  order?: string[];
  cells: ICell[];
  removed: string[];
}

/** Frontend to kernel: the answer to a request. */
export interface IReply {
  type: 'reply';
  request_id: number;
  ok: boolean;
  cell_id?: string;
  cell?: INotebookCell;
  error?: string;
}

/** Kernel to frontend: edit the live notebook. */
export interface IRequest {
  type: 'request';
  request_id: number;
  op: 'set_source' | 'insert_cell' | 'delete_cell' | 'set_outputs';
  cell_id: string;
  after_id?: string | null;
  source?: string;
  cell_type?: ICellType;
  cell?: INotebookCell;
  outputs?: INotebookOutput[];
  execution_count?: number | null;
  undo_group?: string;
}

/** Kernel to frontend: send a full snapshot. */
export interface IResync {
  type: 'resync';
}

/** Kernel to frontend: a widget's saved text changed (what happened to a proposal): set it in the outputs showing that widget, for a reopened notebook to show. No reply. */
export interface ISavedView {
  type: 'saved_view';
  model_id: string;
  data: Record<string, unknown>;
}

export type IToKernel = ISnapshot | IReply;

export type IToFrontend = IRequest | IResync | ISavedView;
