// Unit tests of the pure saved-view module (node's test runner, no JupyterLab): dev/package.json's `test`.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { gaveUp, modelId, resaved, savedData, WIDGET_VIEW, WIDGETS_ERROR_CLASS } from '../src/saved';

const VIEW = { version_major: 2, version_minor: 0, model_id: 'abc' };

test('the saved text is the bundle without its widget view', () => {
  const data = { [WIDGET_VIEW]: VIEW, 'text/plain': '--- a\n+++ b', 'text/html': '<pre>diff</pre>' };
  assert.deepEqual(savedData(data), { 'text/plain': '--- a\n+++ b', 'text/html': '<pre>diff</pre>' });
});

test('a widget view with nothing else saved has no saved text', () => {
  assert.equal(savedData({ [WIDGET_VIEW]: VIEW }), null);
  assert.equal(savedData({ [WIDGET_VIEW]: VIEW, 'text/plain': undefined }), null);
});

const classes = (names: string[]) => ({ contains: (name: string) => names.includes(name) });

test('ipywidgets gave up: no view, its error class', () => {
  assert.equal(gaveUp({ childElementCount: 0, classList: classes([WIDGETS_ERROR_CLASS]) }), true);
});

test('a live view, or one still loading, is left alone', () => {
  assert.equal(gaveUp({ childElementCount: 1, classList: classes([]) }), false); // the view's element
  assert.equal(gaveUp({ childElementCount: 0, classList: classes([]) }), false); // "Loading widget..."
  assert.equal(gaveUp({ childElementCount: 1, classList: classes([WIDGETS_ERROR_CLASS]) }), false);
});

test('the saved text the kernel sends goes into the outputs of that widget only', () => {
  const output = { output_type: 'display_data', metadata: {}, data: { [WIDGET_VIEW]: VIEW, 'text/plain': 'old' } };
  const saved = { 'text/plain': 'Applied', 'text/html': '<div>Applied</div>' };
  assert.deepEqual(resaved(output, 'abc', saved), {
    output_type: 'display_data',
    metadata: {},
    data: { [WIDGET_VIEW]: VIEW, 'text/plain': 'Applied', 'text/html': '<div>Applied</div>' }
  });
  assert.equal(resaved(output, 'other', saved), null);
  assert.equal(resaved({ output_type: 'stream', text: 'x' }, 'abc', saved), null);
  // the widget view itself is never replaced, and only text is taken
  const odd = { [WIDGET_VIEW]: { model_id: 'x' }, 'text/plain': 3 };
  assert.deepEqual(resaved(output, 'abc', odd)?.data, output.data);
});

test('the model an output shows', () => {
  assert.equal(modelId({ [WIDGET_VIEW]: VIEW }), 'abc');
  assert.equal(modelId({ [WIDGET_VIEW]: { model_id: '' } }), null); // a closed view
  assert.equal(modelId({ 'text/plain': 'x' }), null);
});
