"""One moto server per test session; on CI a missing moto is a failure, never a skip."""

from __future__ import annotations

import pytest

from agentenv_aws_stores.testing import moto_server, require_emulators


@pytest.fixture(scope="session")
def moto_endpoint():
    try:
        import moto.server  # noqa: F401
    except ImportError as exc:
        if require_emulators():
            pytest.fail(f"moto[server] is not installed (uv sync --all-groups): {exc}")
        pytest.skip("moto[server] is not installed")
    with moto_server() as url:
        yield url


@pytest.fixture
def anyio_backend():
    return "asyncio"
