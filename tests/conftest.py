import pytest

from genai_magics.stub import StubServer

from kernel_harness import FAKE_KEY, Kernel


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
