"""The `local` provider against the shared sandbox provider contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_env.sandboxes import procs
from agent_env.sandboxes.local import LocalProvider
from agentenv_testing.contracts import SandboxProviderContract


class TestLocalProvider(SandboxProviderContract):
    @pytest.fixture
    def provider(self, tmp_path: Path) -> LocalProvider:
        return LocalProvider({}, home=tmp_path / "home")

    def url_port(self) -> int:
        from agent_env.net import free_port

        return free_port()

    def leftovers(self, provider, info):
        left = []
        if Path(info["folder"]).exists():
            left.append(f"folder {info['folder']}")
        if (provider.root / f"{info['id']}.meta").exists():
            left.append("meta folder")
        left += [f"pid {pid}" for pid in info["pids"] if procs.alive(pid)]
        left += [f"marked pid {pid}" for pid in procs.pids_with_env("AGENTENV_SANDBOX", info["id"])]
        return left
