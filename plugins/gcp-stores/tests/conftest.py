"""Emulators, one of each per test session (the Firestore one takes seconds to start). On CI
a missing emulator fails the tests that need it; locally they skip with the reason."""

from __future__ import annotations

import pytest

from agent_env.testing.require import require as _unavailable
from agentenv_gcp_stores import testing


@pytest.fixture(scope="session")
def gcs_endpoint():
    try:
        import gcp_storage_emulator  # noqa: F401
    except ImportError as exc:
        _unavailable(f"gcp-storage-emulator is not installed (uv sync --all-groups): {exc}")
    with testing.gcs_emulator() as url:
        yield url


@pytest.fixture(scope="session")
def firestore_endpoint(tmp_path_factory):
    if testing.firestore_emulator_path() is None:
        _unavailable(f"the Firestore emulator is missing ({testing.FIRESTORE_EMULATOR})")
    log = tmp_path_factory.mktemp("firestore") / "emulator.log"
    try:
        with testing.firestore_emulator(log) as url:
            yield url
    except RuntimeError as exc:
        pytest.fail(f"{exc}; log: {log.read_text(errors='replace')[-2000:]}")


@pytest.fixture(scope="session")
def secretmanager_server():
    server = testing.SecretManagerServer()
    with server.serve() as url:
        server.url = url
        yield server


@pytest.fixture
def anyio_backend():
    return "asyncio"
