import pytest

from genai_magics.stub import StubServer

from kernel_harness import FAKE_KEY, Kernel


@pytest.fixture(scope="session", autouse=True)
def private_jupyter_data_dir(tmp_path_factory):
    """Conversation records of test kernels land in a temporary data dir, never the user's."""
    import os

    os.environ["JUPYTER_DATA_DIR"] = str(tmp_path_factory.mktemp("jupyter-data"))


@pytest.fixture(scope="session")
def stub():
    with StubServer() as server:
        yield server


@pytest.fixture
def kernel(stub, tmp_path):
    stub.reset()
    k = Kernel(env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}, cwd=str(tmp_path))
    k.run("%load_ext genai_magics", cell_id="setup")
    yield k
    k.close()
