/**
 * genai-magics-bridge: the live bridge between a notebook and its kernel.
 *
 * For every notebook it registers the kernel comm target `genai_magics.bridge`
 * (again after a kernel restart or change). The kernel opens the comm when
 * genai_magics is loaded; from then on this extension
 *
 * - pushes a snapshot of the notebook (cell ids, types, sources, order) from
 *   the live model right before each execute request goes out, and a few
 *   hundred milliseconds after an edit; after the first snapshot only the
 *   cells that changed;
 * - answers the kernel's requests `set_source`, `insert_cell`, `delete_cell`
 *   by editing the live model (`cell.sharedModel`), with a reply `ok` or a
 *   clear error. `delete_cell` replies with the removed cell's nbformat JSON
 *   (id, metadata, outputs, execution count); `insert_cell` with a `cell`
 *   puts such JSON back as it was, right below the cell `after_id`.
 *
 * Stale buttons: the comms of the widgets on screen die with the kernel
 * process, and a click then goes nowhere (the browser logs `Cannot send`).
 * ipywidgets only marks the views `jupyter-widgets-disconnected`, and only
 * on a restart (the proposal's own CSS shows a line on that, see
 * genai_magics/ui/widgets.py). When the notebook's kernel restarts, stops or
 * is changed, this extension writes one line into every genai_magics
 * widget with buttons still on screen (classes `genai-magics-proposal`,
 * `genai-magics-approval`, `genai-magics-turn-undo`), saying which, and
 * disables its buttons.
 *
 * Saved text: a widget view whose model is gone (the notebook reopened
 * after its kernel stopped, the page reloaded after a restart) shows the
 * output's saved text instead of ipywidgets' "Error displaying widget:
 * model not found" (saved.ts, gone.ts); the kernel's `saved_view` sets a
 * proposal's saved text anew after each click (what happened to it).
 *
 * Every execute request of the notebook carries the notebook's path in its
 * metadata (`genai_magics: {path}`), read by the kernel before the cell runs;
 * a rename or move pushes a snapshot with the new path at once.
 *
 * Ordering: every message of this comm goes on the main shell, in order
 * with execute requests (send.ts says why).
 *
 * Modules: bridge.ts (one notebook's bridge), cells.ts (the cell edits'
 * rules, shared with the VS Code companion: pure, unit-tested), snapshot.ts
 * (what a snapshot holds: pure, unit-tested), send.ts (the one private
 * send), undo.ts (an agent turn's edits as one step of the notebook's undo:
 * unit-tested on a real YNotebook), stale.ts (the stale-button line, keyed on genai_magics' own
 * classes), saved.ts (what a widget whose model is gone shows: pure, unit-tested), gone.ts (showing it).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { NotebookBridge } from './bridge';
import { showSavedWhereGone } from './gone';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'genai-magics-bridge:plugin',
  description: 'Live bridge between notebooks and genai_magics in the kernel.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    const attach = (panel: NotebookPanel) => {
      new NotebookBridge(panel);
      showSavedWhereGone(panel.content.rendermime);
    };
    tracker.forEach(attach);
    tracker.widgetAdded.connect((_, panel) => attach(panel));
    console.debug('genai-magics-bridge: active');
  }
};

export default plugin;
