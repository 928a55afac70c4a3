"""Run bundle tasks through the real engine: real plugins, SQLite stores, local sandboxes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_env.bundles import load_bundle, materialize
from agent_env.engine.instance import TaskInstance
from agent_env.engine.records import new_id
from agent_env.engine.services import EngineServices, Reporter
from agent_env.plugins import PluginManager
from agent_env.sandboxes.manager import SandboxManager
from agent_env.stores import open_stores


class Logs(Reporter):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, instance, step_id, message) -> None:
        self.lines.append(f"{step_id}: {message}")


class Runner:
    """Writes a bundle folder and runs one of its tasks to the end."""

    def __init__(self, root: Path, home: Path):
        self.root = root
        self.home = home
        self.logs = Logs()
        self.instance: TaskInstance | None = None

    def plugins(self) -> PluginManager:
        import agentenv_core_steps.hooks

        plugins = PluginManager(autoload=False)
        plugins.register(agentenv_core_steps.hooks, "core-steps")
        return plugins

    def write(self, files: dict[str, Any]) -> Path:
        for rel, content in files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if not isinstance(content, str):
                content = json.dumps(content)
            path.write_text(content)
        return self.root

    def load(self):
        return load_bundle(str(self.root), self.plugins())

    async def run(
        self, steps: list[dict[str, Any]], files: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        self.write({**(files or {}), "tasks/t.json": steps})
        plugins = self.plugins()
        bundle = load_bundle(str(self.root), plugins)
        stores = open_stores({}, plugins, home=self.home)
        try:
            materialized = await materialize(bundle, stores)
            services = EngineServices(
                plugins=plugins,
                config=None,
                stores=stores,
                sandboxes=SandboxManager(plugins, None, self.home),
                artifacts=materialized.artifacts,
                reporter=self.logs,
            )
            self.instance = await TaskInstance.create(
                services,
                task=bundle.tasks["t"],
                instance_id=new_id("ti"),
                run_id="run-test",
                bundle={"spec": str(self.root), "name": bundle.name},
            )
            return await self.instance.run()
        finally:
            await stores.close()

    @property
    def state(self) -> dict[str, Any]:
        assert self.instance is not None
        return self.instance.state

    def leftovers(self) -> list[str]:
        left = []
        for sub in ("sandboxes", "leases"):
            folder = self.home / sub
            if folder.exists():
                left += [f"{sub}/{p.name}" for p in folder.iterdir()]
        return left


@pytest.fixture
def runner(tmp_path, monkeypatch) -> Runner:
    monkeypatch.setenv("AGENT_ENV_HOME", str(tmp_path / "home"))
    return Runner(tmp_path / "bundle", tmp_path / "home")


@pytest.fixture
def anyio_backend():
    return "asyncio"
