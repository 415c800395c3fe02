/**
 * A widget view whose model is gone shows the output's saved text (saved.ts
 * says why and what).
 *
 * ipywidgets' manager replaces the notebook's widget renderer factory once
 * the kernel is there, and binds the renderers created before that by
 * `instanceof`: a wrapping renderer would never be bound. So the notebook's
 * own `createRenderer` hands out ipywidgets' renderer itself, and only its
 * `renderModel` is followed: once it gave up, the saved text goes in its
 * place. A live widget is never touched (the renderer then holds its view),
 * nor made again when only the output's saved text changed (bridge.ts,
 * `saved_view`).
 *
 * The saved text is rendered as an untrusted output is (HTML sanitized, no
 * scripts), whatever the notebook's trust: it is shown in place of a widget,
 * never as the notebook's own HTML.
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { gaveUp, modelId, SAVED_CLASS, savedData, WIDGET_VIEW, WIDGETS_ERROR_CLASS } from './saved';

type Registry = NotebookPanel['content']['rendermime'];

/** Follow every widget renderer the notebook's registry makes (once per notebook). */
export function showSavedWhereGone(rendermime: Registry): void {
  const create = rendermime.createRenderer.bind(rendermime);
  rendermime.createRenderer = (mimeType: string) => {
    const renderer = create(mimeType);
    if (mimeType === WIDGET_VIEW) {
      const render = renderer.renderModel.bind(renderer);
      let shown: string | null = null; // the model of the live view it holds
      // ipywidgets calls it again itself when its widgets are restored late
      renderer.renderModel = async (model: IRenderMime.IMimeModel) => {
        const id = modelId(model.data);
        if (shown !== null && id === shown && renderer.node.childElementCount > 0) {
          return; // only the saved text changed (saved_view): the live view stays, ipywidgets would make another
        }
        await render(model);
        shown = gaveUp(renderer.node) || renderer.node.childElementCount === 0 ? null : id;
        if (gaveUp(renderer.node)) {
          await showSaved(rendermime, create, renderer, model);
        }
      };
    }
    return renderer;
  };
}

async function showSaved(
  rendermime: Registry,
  create: Registry['createRenderer'],
  renderer: IRenderMime.IRenderer,
  model: IRenderMime.IMimeModel
): Promise<void> {
  const data = savedData(model.data);
  const mimeType = data && rendermime.preferredMimeType(data, 'ensure');
  if (!data || !mimeType) {
    return; // nothing saved that is safe to show: ipywidgets' error stays
  }
  const saved = create(mimeType);
  await saved.renderModel({ data, metadata: model.metadata, trusted: false, setData: () => undefined });
  renderer.node.textContent = '';
  renderer.removeClass(WIDGETS_ERROR_CLASS);
  renderer.addClass(SAVED_CLASS);
  renderer.node.appendChild(saved.node);
}
