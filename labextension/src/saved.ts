/**
 * What a widget view whose model is gone shows: the output's saved text.
 *
 * Reopened after its kernel stopped (or reloaded after a restart), a
 * notebook's widget outputs name models the new kernel never had, and
 * ipywidgets' renderer shows only "Error displaying widget: model not
 * found". The output also holds what the kernel saved for where no widget
 * manager renders it (genai_magics: the diff or what was asked, what
 * happened, and one line saying the buttons come back when the cell runs:
 * genai_magics/ui/widgets.py's `widget_bundle`); that is shown instead, as
 * VS Code's widget renderer does (it falls back to the output's next mime
 * type). A proposal's saved text follows its status: the kernel sends it
 * anew after each click (`saved_view`), set in the output by bridge.ts, so
 * the file says what happened. Pure: gone.ts does the rendering.
 */
import type { ReadonlyPartialJSONObject, ReadonlyPartialJSONValue } from '@lumino/coreutils';

export const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';
/** The class on a widget renderer showing the saved text. */
export const SAVED_CLASS = 'genai-magics-saved-view';
/** The class ipywidgets' renderer takes when it gives up (its model not found, or its view failed). */
export const WIDGETS_ERROR_CLASS = 'jupyter-widgets';

/** The output's bundle without its widget view: what to show where the model is gone (null: nothing else saved). */
export function savedData(data: ReadonlyPartialJSONObject): ReadonlyPartialJSONObject | null {
  const rest: { [mime: string]: ReadonlyPartialJSONValue } = {};
  for (const [mime, value] of Object.entries(data)) {
    if (mime !== WIDGET_VIEW && value !== undefined) {
      rest[mime] = value;
    }
  }
  return Object.keys(rest).length ? rest : null;
}

/** A widget renderer's node, as far as telling whether it gave up goes. */
export interface IRenderedNode {
  readonly childElementCount: number;
  readonly classList: { contains(name: string): boolean };
}

/**
 * ipywidgets' renderer gave up on this output for good: it holds no view,
 * only its error text, and took its error class. While it still waits for
 * the kernel's widgets ("Loading widget...") it has neither; a view has an
 * element; a closed view hides the renderer (not asked here).
 */
export function gaveUp(node: IRenderedNode): boolean {
  return node.childElementCount === 0 && node.classList.contains(WIDGETS_ERROR_CLASS);
}

/** The widget model an output shows, if it is a widget view. */
export function modelId(data: ReadonlyPartialJSONObject): string | null {
  const view = data[WIDGET_VIEW];
  const id =
    view && typeof view === 'object' && !Array.isArray(view) ? (view as ReadonlyPartialJSONObject).model_id : undefined;
  return typeof id === 'string' && id ? id : null;
}

/**
 * An output with the saved text the kernel sent for its widget (saved_view:
 * what happened to a proposal since it was shown); null when the output
 * shows another widget, or no widget. The widget view stays as it is.
 */
export function resaved<T extends { readonly [key: string]: unknown }>(
  output: T,
  id: string,
  saved: { readonly [mime: string]: unknown }
): T | null {
  const data = output.data as ReadonlyPartialJSONObject | undefined;
  if (!data || modelId(data) !== id) {
    return null;
  }
  const text: { [mime: string]: string } = {};
  for (const [mime, value] of Object.entries(saved)) {
    if (mime !== WIDGET_VIEW && typeof value === 'string') {
      text[mime] = value;
    }
  }
  return { ...output, data: { ...data, ...text } };
}
