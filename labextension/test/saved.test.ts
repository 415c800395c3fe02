// Unit tests of the pure saved-view module (node's test runner, no JupyterLab): dev/package.json's `test`.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { gaveUp, savedData, WIDGET_VIEW, WIDGETS_ERROR_CLASS } from '../src/saved';

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
