"""The pure core: a conversation's protocol logic (history, contents, edits, diffs, cells, the agent's
changes, replay) as typed dataclasses and pure functions, with no I/O and no UI.

May import: `messages` (and the standard library; no IPython, ipywidgets, ipykernel, traitlets, google
or httpx).
"""
