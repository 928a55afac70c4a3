"""One moto server per test session; on CI a missing moto is a failure, never a skip."""

from __future__ import annotations

import pytest

from agentenv_aws_stores.testing import moto_endpoint_fixture

moto_endpoint = moto_endpoint_fixture()


@pytest.fixture
def anyio_backend():
    return "asyncio"
