"""The docker provider passes the shared sandbox provider contract against the real daemon."""

from __future__ import annotations

from typing import Any

import pytest

from agent_env.sandbox import SandboxSpec
from agentenv_docker_sandbox.testing import BASE_IMAGE, ours
from agentenv_testing.contracts import SandboxProviderContract


class TestDockerProviderContract(SandboxProviderContract):
    @pytest.fixture
    def provider(self, docker_client, tmp_path):
        from agentenv_docker_sandbox.provider import DockerProvider

        return DockerProvider({"image": BASE_IMAGE}, home=tmp_path / "home")

    def sandbox_spec(self, **kw: Any) -> SandboxSpec:
        return SandboxSpec(image=BASE_IMAGE, **kw)

    def leftovers(self, provider, info: dict[str, Any]) -> list[str]:
        return ours(provider.client, info["id"])
