/**
 * Stale buttons: the comms of the widgets on screen die with the kernel
 * process, and a click then goes nowhere. When the notebook's kernel
 * restarts, stops or is changed, every genai_magics widget with buttons
 * still on screen (a proposal, an agent's approval, an agent turn's Undo)
 * gets one line saying which, and its buttons are disabled. Keyed on classes
 * genai_magics gives its own widgets (genai_magics/ui/widgets.py), never on
 * ipywidgets' internal ones.
 */

/** The boxes marked: ui/widgets.py's proposal, ui/approval.py's approval, ui/turn_undo_widget.py's Undo. */
export const BUTTON_BOXES = ['genai-magics-proposal', 'genai-magics-approval', 'genai-magics-turn-undo'];
export const STALE_CLASS = 'genai-magics-stale';
export const STALE_LINE_CLASS = 'genai-magics-stale-line';
export const STALE_ADVICE =
  "these buttons no longer work. Run the magic cell again (with the notebook's record, " +
  'its recorded turn comes back without a new request).';

/** Mark every such box under `roots` not marked yet (a box marked stays as it is). */
export function markStale(roots: Iterable<Element>, what: string): void {
  const unmarked = BUTTON_BOXES.map(name => `.${name}:not(.${STALE_CLASS})`).join(', ');
  for (const root of roots) {
    root.querySelectorAll(unmarked).forEach(box => {
      box.classList.add(STALE_CLASS);
      const buttons = box.querySelectorAll(':scope > button');
      buttons.forEach(button => {
        (button as HTMLButtonElement).disabled = true;
      });
      const line = document.createElement('div');
      line.className = STALE_LINE_CLASS;
      line.textContent = `${what}: ${STALE_ADVICE}`;
      // a row of its own in the box (it wraps), before the buttons
      line.style.cssText = 'width:100%;font-size:12px;margin:4px 0;color:var(--jp-warn-color0,#b45309);font-weight:600';
      box.insertBefore(line, buttons.length ? buttons[0] : null);
    });
  }
}
