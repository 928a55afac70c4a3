"""One moto server per test session; on CI a missing moto is a failure, never a skip."""

from __future__ import annotations

import pytest

from agent_env.testing.require import require
from agentenv_aws_stores.testing import moto_server


@pytest.fixture(scope="session")
def moto_endpoint():
    try:
        import moto.server  # noqa: F401
    except ImportError as exc:
        require(f"moto[server] is not installed (uv sync --all-groups): {exc}")
    with moto_server() as url:
        yield url


@pytest.fixture
def anyio_backend():
    return "asyncio"
