"""Fixtures for the docker-sandbox tests: every Docker test goes through `require_docker`
(skip locally, fail on CI when the daemon or base image is missing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentenv_docker_sandbox.testing import BASE_IMAGE, REGISTRY, require_docker, require_registry


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def docker_client():
    require_docker()
    import docker

    client = docker.from_env(timeout=60)
    yield client
    client.close()


@pytest.fixture(scope="session")
def base_image(docker_client) -> str:
    return BASE_IMAGE


@pytest.fixture(scope="session")
def registry(docker_client) -> str:
    require_registry()
    return REGISTRY


@pytest.fixture
def provider(docker_client, tmp_path: Path):
    from agentenv_docker_sandbox.provider import DockerProvider

    return DockerProvider({"image": BASE_IMAGE}, home=tmp_path / "home")
