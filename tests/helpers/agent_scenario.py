"""What the tests in the real frontends (tests/browser, tests/vscode) play, once: the outputs the kernel
sets under a cell (``set_outputs``), and the agent turn the stand-in plays (``script_tools``)."""

from __future__ import annotations

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
# what a run showed, each kind once: set under a cell, shown, and saved as they are
RAN = [
    {"output_type": "stream", "name": "stdout", "text": "ran 3\n"},
    {"output_type": "stream", "name": "stderr", "text": "careful\n"},
    {"output_type": "display_data", "data": {"image/png": PNG, "text/plain": "<Figure>"}, "metadata": {}},
    {"output_type": "execute_result", "execution_count": 42, "data": {"text/plain": "9"}, "metadata": {}},
    {"output_type": "error", "ename": "ValueError", "evalue": "bad input", "traceback": ["ValueError: bad input"]},
]
SHOWN = ("ran 3", "careful", "9", "ValueError", "bad input")  # on screen
RAN_NEW = [{"output_type": "stream", "name": "stdout", "text": "2\n"}]  # under the cell inserted just before


def set_outputs_code(live: str) -> str:
    """A cell's code: ``live`` (the bridge or the companion, a name in the kernel) sets RAN under ``target``
    (count 42), inserts a cell below it, edits it and sets RAN_NEW under it (count 43), inserts another and
    deletes it at once: a new cell is named by its id right away. ``res`` collects the replies."""
    return (
        f"res = []\n{live}.set_outputs(target, {RAN!r}, 42, res.append)\n"
        f"new = {live}.insert_cell(target, 'print(1)', 'code', res.append)\n"
        f"{live}.set_source(new, 'print(2)', res.append)\n"
        f"{live}.set_outputs(new, {RAN_NEW!r}, 43, res.append)\n"
        f"gone = {live}.insert_cell(new, 'x = 0', 'code', res.append)\n"
        f"{live}.delete_cell(gone, res.append)\n"
    )


# The agent's turn: the notebook runs SETUP, PARSE, SCRATCH (In[1..3]), then AGENT, with END below it.
SETUP = "%load_ext genai_magics"
PARSE = "def parse(s):\n    return int(s)"
PARSE_EDITED = "def parse(s):\n    return int(s.strip())"
SCRATCH = "scratch = 1\nscratch"
AGENT = "%%gemini_agent\nShow parse('5') plus one, strip the input, drop the scratch cell."
END = "x = 0"
NEW = "print(parse('5') + 1)\n"
NEW_RAN = [{"output_type": "stream", "name": "stdout", "text": "6\n"}]
ROUNDS = [  # a round a request; {{id}}: the cell insert_cell made
    [{"name": "insert_cell", "args": {"after": "In[2]", "source": NEW}}],
    [{"name": "edit_cell", "args": {"ref": "In[2]", "edits": [{"find": "int(s)", "replace": "int(s.strip())"}]}}],
    [{"name": "delete_cell", "args": {"ref": "In[3]"}}],
    [{"name": "run_cell", "args": {"ref": "{{id}}"}}],
]
AFTER = [SETUP, PARSE_EDITED, NEW, AGENT, END]  # the sources once the turn ran


def printed_by(cell: dict, text: str) -> bool:
    """Whether a saved cell's outputs hold a stream with ``text``."""
    return any(o.get("output_type") == "stream" and text in o.get("text", "") for o in cell["outputs"])
