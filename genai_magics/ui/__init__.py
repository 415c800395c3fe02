"""What the user sees: proposals and their diff, the Apply/Discard/Undo and Run/Stop widgets, the
display of answers and reports.

May import: `frontends`, `engine`, `messages`.
"""
