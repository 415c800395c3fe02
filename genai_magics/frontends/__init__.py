"""Where the notebook lives: the live notebook through the JupyterLab bridge or the VS Code companion,
the notebook file, the terminal, the cell writer and runner, and the waits for a frontend's reply.

May import: `engine`, `messages`.
"""
