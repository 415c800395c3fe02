from pathlib import Path

import pytest
from helpers.kernel import FAKE_KEY, Kernel, point_sdk_at

from genai_magics.stub import StubServer

# Fixtures that start a real kernel (or a terminal IPython): a test that uses one is
# marked `kernel`; tests under tests/browser/ are marked `browser`, under tests/vscode/
# `browser` and `vscode`. Tests that start kernels themselves carry @pytest.mark.kernel.
# `pytest -m "not kernel and not browser"` is the fast layer.
KERNEL_FIXTURES = {"kernel", "ff", "term", "bad_input_kernel", "failures_kernel"}
BROWSER = Path(__file__).resolve().parent / "browser"
VSCODE = Path(__file__).resolve().parent / "vscode"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if BROWSER in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)
        elif VSCODE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)  # a browser page too: out of the fast layer
            item.add_marker(pytest.mark.vscode)
        elif KERNEL_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.kernel)


@pytest.fixture(autouse=True)
def _kernel_tests_are_marked(request, monkeypatch):
    """A test that starts a kernel without the `kernel` marker fails at once, so the fast
    layer stays fast as tests are added."""
    if request.node.get_closest_marker("kernel") is not None:
        return

    def refuse(*args, **kwargs):
        raise AssertionError(
            f"{request.node.nodeid} starts a kernel: mark it @pytest.mark.kernel (or use the kernel fixture)"
        )

    import helpers.fake_frontend
    import helpers.kernel

    monkeypatch.setattr(helpers.kernel, "start_kernel", refuse)
    monkeypatch.setattr(helpers.fake_frontend, "start_kernel", refuse)


@pytest.fixture(scope="session", autouse=True)
def private_jupyter_data_dir(tmp_path_factory):
    """Conversation records of test kernels land in a temporary data dir, never the user's."""
    import os

    os.environ["JUPYTER_DATA_DIR"] = str(tmp_path_factory.mktemp("jupyter-data"))


@pytest.fixture(scope="session")
def playwright_driver():
    """One Playwright for the whole run: while it is open its sync API keeps an event loop running
    in this thread, so a second one (tests/browser and tests/vscode each starting their own)
    refuses to start ("Sync API inside the asyncio loop"). Each folder launches its browser from it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def stub():
    with StubServer() as server:
        yield server


@pytest.fixture
def kernel(stub, tmp_path):
    stub.reset()
    # Its own data folder: a kernel that learns its notebook (VS Code's cell URIs name the file) keeps a
    # record there, which another test's kernel on the same path must not replay.
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY, "JUPYTER_DATA_DIR": str(tmp_path / "data")}
    k = Kernel(env=env, cwd=str(tmp_path))
    k.run("%load_ext genai_magics", cell_id="setup")
    yield k
    k.close()


@pytest.fixture
def magic_shell(stub, monkeypatch):
    """The extension in an in-process IPython shell, talking to the stand-in (the fast layer)."""
    from helpers.shell import Shell

    stub.reset()
    point_sdk_at(monkeypatch, stub.url)
    s = Shell()
    # the shell's state outlives the extension's unload (``%reload_ext`` continues it): each test starts with no
    # conversation, or an earlier test's held document became this one's (an agent turn's: Apply went elsewhere)
    s.run("%gemini reset --all", cell_id="reset")
    stub.reset()
    yield s
    s.close()
