"""The installed `hello` bundle passes on a local sandbox and leaves nothing behind."""

from __future__ import annotations

import pytest

from agent_env.bundles import load_bundle, materialize
from agent_env.engine.instance import TaskInstance
from agent_env.engine.records import new_id
from agent_env.engine.services import EngineServices
from agent_env.sandboxes.manager import SandboxManager
from agent_env.stores import open_stores

pytestmark = pytest.mark.anyio


async def test_hello_is_installed_and_passes_twice(runner):
    plugins = runner.plugins()
    bundle = load_bundle("hello", plugins)
    assert bundle.description.startswith("hello")
    assert sorted(bundle.tasks) == ["hello"]
    stores = open_stores({}, plugins, home=runner.home)
    try:
        for attempt in range(2):
            materialized = await materialize(bundle, stores)
            services = EngineServices(
                plugins=plugins,
                config=None,
                stores=stores,
                sandboxes=SandboxManager(plugins, None, runner.home),
                artifacts=materialized.artifacts,
            )
            instance = await TaskInstance.create(
                services,
                task=bundle.tasks["hello"],
                instance_id=new_id("ti"),
                run_id=f"r{attempt}",
                bundle={"spec": "hello", "name": bundle.name},
            )
            record = await instance.run()
            assert record["outcome"] == "passed (hello: 1)", record["failure"]
            rows = instance.state["verifiers"]["hello"]["results"]
            assert [r["id"] for r in rows] == ["greeting-present", "greeting-says-hello"]
            assert runner.leftovers() == []
        assert any("unchanged" in line for line in materialized.lines), materialized.lines
    finally:
        await stores.close()
