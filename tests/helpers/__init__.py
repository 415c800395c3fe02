"""Shared test helpers, used by tests/ and benchmarks/ alike (import as ``helpers.<module>``;
benchmarks put tests/ on sys.path).

kernel: a real ipykernel driven as a notebook frontend drives it; fake_frontend: the
labextension's side of the live bridge; bridge: driving the bridge through it; vscode:
the shapes VS Code gives cells; wire: reading the stand-in's records; display: a turn
display that keeps what it was shown; properties: how hard property tests search.
"""
