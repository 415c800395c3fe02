// The companion: genai_magics' kernel asks it (through a private directory, see docs/protocol.md) for
// the notebook's cells and for cell edits, which it makes with VS Code's own edit API, so each is a
// step of VS Code's undo. Kernel output after a cell finished never reaches VS Code's notebook, so the
// kernel cannot use outputs for this; a file channel works at any time, as long as the kernel runs on
// the machine of the extension host (local kernels, Remote-SSH/WSL/containers; not remote Jupyter servers).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { cellIndex, insertIndex, runOutputs } from '../../labextension/src/cells';
import {
  checkUnchanged,
  decodeBytes,
  encodeBytes,
  IOutputSpec,
  notebookKey,
  outputSpec,
  parseRequest,
  presence,
  presenceFile,
  refusal,
  replyPathAllowed
} from './channel';
import type { ICellType, IRenamed, IReply, IRequest, IStoredCell } from './protocol';

export function channelDir(): string {
  return process.env.GENAI_MAGICS_COMPANION_DIR || path.join(os.homedir(), '.cache', 'genai-magics', 'companion');
}

function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

function keyOf(notebook: vscode.NotebookDocument): string | undefined {
  return notebook.cellCount ? notebookKey(notebook.cellAt(0).document.uri.toString()) : undefined;
}

function cellType(cell: vscode.NotebookCell): ICellType {
  return cell.kind === vscode.NotebookCellKind.Markup ? 'markdown' : 'code';
}

function stored(cell: vscode.NotebookCell): IStoredCell {
  return {
    cell_type: cellType(cell),
    source: cell.document.getText(),
    language: cell.document.languageId,
    metadata: { ...cell.metadata },
    outputs: cell.outputs.map(output => ({
      items: output.items.map(item => ({ mime: item.mime, data: encodeBytes(item.data) })),
      metadata: output.metadata
    })),
    execution_order: cell.executionSummary?.executionOrder,
    success: cell.executionSummary?.success
  };
}

function cellData(notebook: vscode.NotebookDocument, source: string, type: string, cell?: IStoredCell) {
  const kind = type === 'markdown' ? vscode.NotebookCellKind.Markup : vscode.NotebookCellKind.Code;
  const codeLanguage = notebook.getCells().find(c => c.kind === vscode.NotebookCellKind.Code)?.document.languageId;
  const language = cell?.language ?? (type === 'markdown' ? 'markdown' : (codeLanguage ?? 'python'));
  const data = new vscode.NotebookCellData(kind, source, language);
  if (cell) {
    data.metadata = cell.metadata;
    data.outputs = cell.outputs.map(
      output =>
        new vscode.NotebookCellOutput(
          output.items.map(item => new vscode.NotebookCellOutputItem(decodeBytes(item.data), item.mime)),
          output.metadata
        )
    );
    if (cell.execution_order !== undefined) {
      data.executionSummary = { executionOrder: cell.execution_order, success: cell.success };
    }
  }
  return data;
}

function cellOutput(spec: IOutputSpec): vscode.NotebookCellOutput {
  const items = spec.items.map(item =>
    'error' in item
      ? vscode.NotebookCellOutputItem.error(item.error)
      : 'bytes' in item
        ? new vscode.NotebookCellOutputItem(item.bytes, item.mime)
        : vscode.NotebookCellOutputItem.text(item.text, item.mime)
  );
  return new vscode.NotebookCellOutput(items, spec.metadata);
}

async function apply(edit: vscode.WorkspaceEdit): Promise<void> {
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error('VS Code refused the edit');
}

async function answer(notebook: vscode.NotebookDocument, request: IRequest): Promise<IReply> {
  const done = { request_id: request.request_id, ok: true } as const;
  const order = () => notebook.getCells().map(c => c.document.uri.toString());
  switch (request.op) {
    case 'snapshot':
      return {
        ...done,
        path: notebook.uri.fsPath,
        cells: notebook.getCells().map(cell => ({
          id: cell.document.uri.toString(),
          cell_type: cellType(cell),
          source: cell.document.getText()
        }))
      };
    case 'set_source': {
      const cell = notebook.cellAt(cellIndex(order(), request.cell_id));
      const text = cell.document.getText();
      checkUnchanged(text, request.expect_sha256);
      const edit = new vscode.WorkspaceEdit();
      const whole = new vscode.Range(cell.document.positionAt(0), cell.document.positionAt(text.length));
      edit.replace(cell.document.uri, whole, request.source);
      await apply(edit);
      return { ...done, cell_id: request.cell_id };
    }
    case 'insert_cell': {
      const index = insertIndex(order(), request.after_id);
      const edit = new vscode.WorkspaceEdit();
      const data = cellData(notebook, request.source, request.cell_type, request.cell);
      edit.set(notebook.uri, [vscode.NotebookEdit.insertCells(index, [data])]);
      await apply(edit);
      return { ...done, cell_id: notebook.cellAt(index).document.uri.toString() };
    }
    case 'set_outputs': {
      // An extension sets outputs only by replacing the cell: a copy with the same text, language and
      // metadata, and the outputs of the run the kernel made (a new cell, so a new URI, which the reply names).
      const index = cellIndex(order(), request.cell_id);
      const cell = notebook.cellAt(index);
      const { outputs, executionCount } = runOutputs(cellType(cell), request);
      const data = new vscode.NotebookCellData(cell.kind, cell.document.getText(), cell.document.languageId);
      // the .ipynb writer takes a cell's execution count from its metadata, which VS Code keeps in step only
      // for a cell it ran
      data.metadata = { ...cell.metadata, execution_count: executionCount };
      data.outputs = outputs.map(output => cellOutput(outputSpec(output)));
      if (executionCount !== null) {
        const success = !outputs.some(output => output.output_type === 'error');
        data.executionSummary = { executionOrder: executionCount, success };
      }
      const edit = new vscode.WorkspaceEdit();
      edit.set(notebook.uri, [vscode.NotebookEdit.replaceCells(new vscode.NotebookRange(index, index + 1), [data])]);
      await apply(edit);
      return { ...done, cell_id: notebook.cellAt(index).document.uri.toString() };
    }
    case 'delete_cell': {
      const cell = notebook.cellAt(cellIndex(order(), request.cell_id));
      const kept = stored(cell);
      const edit = new vscode.WorkspaceEdit();
      edit.set(notebook.uri, [vscode.NotebookEdit.deleteCells(new vscode.NotebookRange(cell.index, cell.index + 1))]);
      await apply(edit);
      return { ...done, cell_id: request.cell_id, cell: kept };
    }
  }
}

class Companion implements vscode.Disposable {
  private readonly inbox: string;
  private readonly file: string;
  private watcher: fs.FSWatcher | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private busy = false;
  private again = false;
  handled = 0;
  // VS Code ends the kernel of a notebook renamed or moved (its document is replaced): the kernel of the new
  // name reads here which file it was, and takes its record over (genai_magics/frontends/companion.py)
  readonly renamed: IRenamed[] = [];

  constructor(
    readonly dir: string,
    private readonly version: string
  ) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.inbox = path.join(dir, `in-${process.pid}`);
    fs.mkdirSync(this.inbox, { recursive: true, mode: 0o700 });
    this.file = presenceFile(dir, process.pid);
    this.announce();
    this.watcher = fs.watch(this.inbox, () => void this.drain());
    this.timer = setInterval(() => void this.drain(), 500); // in case a watch event is missed
  }

  openNotebooks(): string[] {
    return vscode.workspace.notebookDocuments.flatMap(nb => {
      const key = keyOf(nb);
      return key ? [key] : [];
    });
  }

  announce(): void {
    const data = presence(process.pid, this.openNotebooks(), this.inbox, this.version, this.renamed);
    writeAtomic(this.file, JSON.stringify(data));
  }

  private async drain(): Promise<void> {
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    try {
      do {
        this.again = false;
        const names = fs
          .readdirSync(this.inbox)
          .filter(n => n.endsWith('.json'))
          .sort();
        for (const name of names) {
          const file = path.join(this.inbox, name);
          let text: string;
          try {
            text = fs.readFileSync(file, 'utf8');
            fs.unlinkSync(file);
          } catch {
            continue; // taken already
          }
          await this.handle(text);
        }
      } while (this.again);
    } finally {
      this.busy = false;
    }
  }

  private async handle(text: string): Promise<void> {
    const request = parseRequest(text);
    if (typeof request === 'string') {
      this.replyRefused(text, request);
      return;
    }
    let reply: IReply;
    const notebook = vscode.workspace.notebookDocuments.find(nb => keyOf(nb) === request.notebook);
    if (!notebook) {
      reply = refusal(request.request_id, 'the notebook is not open in VS Code');
    } else {
      try {
        reply = await answer(notebook, request);
      } catch (error) {
        reply = refusal(request.request_id, error instanceof Error ? error.message : String(error));
      }
    }
    this.handled += 1;
    this.reply(request.reply_to, reply);
  }

  private replyRefused(text: string, error: string): void {
    try {
      const raw = JSON.parse(text) as Record<string, unknown>;
      if (typeof raw.reply_to === 'string') {
        // a request that could not be read: its request_id goes back as it came, whatever it is
        this.reply(raw.reply_to, {
          request_id: raw.request_id,
          ok: false,
          error: `companion: ${error}`
        });
      }
    } catch {
      // not JSON: nobody to answer
    }
  }

  private reply(replyTo: string, data: IReply | Record<string, unknown>): void {
    if (!replyPathAllowed(this.dir, replyTo)) return;
    try {
      writeAtomic(replyTo, JSON.stringify(data));
    } catch {
      // the kernel is gone (its directory with it)
    }
  }

  dispose(): void {
    this.watcher?.close();
    if (this.timer) clearInterval(this.timer);
    fs.rmSync(this.file, { force: true });
    fs.rmSync(this.inbox, { recursive: true, force: true });
  }
}

export function activate(context: vscode.ExtensionContext): void {
  const version = String((context.extension.packageJSON as { version?: string }).version ?? '');
  const companion = new Companion(channelDir(), version);
  const announce = () => companion.announce();
  context.subscriptions.push(
    companion,
    vscode.workspace.onDidOpenNotebookDocument(announce),
    vscode.workspace.onDidCloseNotebookDocument(announce),
    vscode.workspace.onDidRenameFiles(e => {
      for (const { oldUri, newUri } of e.files) {
        if (oldUri.scheme === 'file' && newUri.scheme === 'file') {
          companion.renamed.push({ from: oldUri.fsPath, to: newUri.fsPath });
        }
      }
      announce();
    }),
    // an empty notebook gets its key with its first cell
    vscode.workspace.onDidChangeNotebookDocument(e => {
      if (e.contentChanges.length) announce();
    }),
    vscode.commands.registerCommand('genaiMagics.companionStatus', () => {
      const open = companion.openNotebooks().length;
      void vscode.window.showInformationMessage(
        `genai-magics companion ${version}: ${open} notebook(s) open, ${companion.handled} request(s) handled (${companion.dir})`
      );
    })
  );
}

export function deactivate(): void {
  // the subscriptions dispose the companion (presence file and inbox removed)
}
