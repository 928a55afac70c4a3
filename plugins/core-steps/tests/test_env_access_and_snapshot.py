"""modify_env_tool_access changes what a role sees and may call through the run's gateway;
snapshot_env saves an env's data-plane state as versioned entities in the stores."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent_env.errors import BundleError

sys.path.insert(0, str(Path(__file__).parent))
from compat_envs import FILES, deploy  # noqa: E402

pytestmark = pytest.mark.anyio

#: Lists the tools the verifier's role sees and tries to call add_item, through the gateway.
SEES = """
import asyncio
from agentenv_protocol.client import EnvClient

def verify(mcp_url):
    async def go():
        async with EnvClient(mcp_url.rsplit("/mcp", 1)[0], mcp_path="/mcp") as gw:
            names = sorted(t.name for t in await gw.list_tools())
            result = await gw.call_tool("add_item", {"text": "x"})
            called = result.text if result.is_error else "ok"
            return names, called
    names, called = asyncio.run(go())
    return [{"id": "tools", "result": True, "description": ",".join(names)},
            {"id": "call", "result": True, "description": called}]
"""


def access(step_id: str, action: str, tools: list[str], role: str = "verifier") -> dict:
    return {
        "id": step_id,
        "type": "modify_env_tool_access",
        "env_id": "tidy",
        "action": action,
        "role": role,
        "tools": tools,
    }


def look(step_id: str) -> dict:
    return {
        "id": step_id,
        "type": "env_outcome_verifier",
        "env_id": "tidy",
        "file_artifact_id": "sees",
        "verifier_id": step_id,
    }


def seen(state: dict, verifier: str) -> tuple[str, str]:
    rows = {r["id"]: r["description"] for r in state["verifiers"][verifier]["results"]}
    return rows["tools"], rows["call"]


async def test_disabling_a_tool_hides_it_from_that_role_until_enabled(runner):
    steps = [
        deploy("tidy"),
        look("before"),
        access("hide", "disable", ["add_item"]),
        look("hidden"),
        access("hide-other-role", "disable", ["list_items"], role="agent"),
        access("show", "enable", ["add_item"]),
        look("shown"),
    ]
    record = await runner.run(steps, {**FILES, "artifacts/sees/sees.py": SEES})
    assert record["outcome"].startswith("passed"), (record["failure"], runner.logs.lines)
    state = runner.state
    assert seen(state, "before") == ("add_item,list_items", "ok")
    tools, called = seen(state, "hidden")
    assert tools == "list_items"
    assert "disabled for role 'verifier'" in called
    # a rule for another role leaves the verifier's view alone
    assert seen(state, "shown") == ("add_item,list_items", "ok")
    change = state["tool_access_changes"]["hide"]
    assert change["role_state_after"]["disabled"] == ["add_item"]
    assert state["tool_access_changes"]["show"]["role_state_after"]["enabled"] == ["add_item"]


async def test_an_unknown_tool_fails_the_step_with_a_did_you_mean(runner):
    record = await runner.run(
        [deploy("tidy"), access("hide", "disable", ["add_iten"])],
        FILES,
    )
    assert "failed at step 'hide'" in record["outcome"], record
    message = record["failure"]["message"]
    assert "serves no tool 'add_iten' (did you mean 'add_item'?)" in message


def test_bad_tool_access_fields_are_bundle_problems(runner):
    runner.write(
        {
            **FILES,
            "tasks/t.json": [
                deploy("tidy"),
                {**access("a", "disabel", ["add_item"])},
                {**access("b", "enable", []), "role": " "},
                {"id": "c", "type": "modify_env_tool_access", "env_id": "tidy", "action": "enable"},
                {**access("d", "enable", ["add_item"]), "tool": ["x"]},
            ],
        }
    )
    with pytest.raises(BundleError) as caught:
        runner.load()
    found = "\n".join(caught.value.problems)
    assert (
        "step 'a': action: 'disabel' is not one of 'disable', 'enable' (did you mean 'disable'?)"
        in found
    )
    assert "step 'b': role: a non-empty role name is required" in found
    assert "step 'b': tools: name at least one tool" in found
    assert "step 'c': role: required" in found and "step 'c': tools: required" in found
    assert "step 'd'" in found and "did you mean 'tools'" in found


async def test_snapshot_env_stores_each_state_as_a_version(runner):
    from agent_env.plugins import PluginManager  # noqa: F401 - the runner's plugins
    from agent_env.stores import open_stores

    snap = {"id": "snap", "type": "snapshot_env", "env_id": "tidy", "snapshot_id": "tidy-state"}
    steps = [
        deploy("tidy"),
        snap,
        {**snap, "id": "same"},
        {"id": "reset", "type": "reset_env", "env_id": "tidy", "fail_task_on_error": True},
        {**snap, "id": "after-reset", "include_env_trajectory": True},
        {"id": "default-id", "type": "snapshot_env"},
    ]
    record = await runner.run(steps, FILES)
    assert record["outcome"] == "unscored", (record["failure"], runner.logs.lines)
    taken = runner.state["env_snapshotted_universes"]
    assert (taken["snap"]["id"], taken["snap"]["version"]) == ("tidy-state", 1)
    assert taken["same"]["version"] == 1  # unchanged state: no new version
    assert taken["after-reset"]["version"] == 2
    assert taken["default-id"]["id"].endswith("/tidy-snapshot-default-id")
    stores = open_stores({}, runner.plugins(), home=runner.home)
    try:
        first = json.loads(await stores.objects.get(taken["snap"]["object_key"]))
        later = json.loads(await stores.objects.get(taken["after-reset"]["object_key"]))
        entity = await stores.entities.get("env_snapshot", "tidy-state", 2)
    finally:
        await stores.close()
    assert first["parts"][0]["data"] == {"items": ["seed"]}
    assert later["parts"][0]["data"] == {"items": []}
    assert later["trajectory"] == []  # no tool calls reached the env
    assert entity is not None and entity.content["env"] == "tidy"


async def test_snapshot_env_of_an_env_without_data_get_says_so(runner):
    record = await runner.run(
        [deploy("broken"), {"id": "snap", "type": "snapshot_env", "env_id": "broken"}], FILES
    )
    assert "failed at step 'snap'" in record["outcome"], record
    assert "serves no data/get" in record["failure"]["message"]


def test_bad_snapshot_fields_are_bundle_problems(runner):
    runner.write(
        {
            **FILES,
            "tasks/t.json": [
                deploy("tidy"),
                {"id": "a", "type": "snapshot_env", "export_timeout_seconds": 0},
                {"id": "b", "type": "snapshot_env", "snapshot_idd": "x"},
            ],
        }
    )
    with pytest.raises(BundleError) as caught:
        runner.load()
    found = "\n".join(caught.value.problems)
    assert "step 'a': export_timeout_seconds: must be positive" in found
    assert "step 'b'" in found and "did you mean 'snapshot_id'" in found


async def test_tool_access_survives_a_restarted_gateway(runner):
    """A resumed run starts a new gateway; the task's tool-access changes are applied to it."""
    import attrs

    from agent_env import hookimpl
    from agent_env.models import Step
    from agentenv_core_steps.gateway import live_gateway, stop_gateway

    @attrs.frozen(kw_only=True)
    class DropGateway(Step):
        type = "drop_gateway"

        async def execute(self, ctx):
            old = live_gateway(ctx.task_instance_id)
            assert old is not None and stop_gateway(ctx.task_instance_id)
            ctx.set("outputs", self.id, value={"old_url": old.url})

    class Plugin:
        @hookimpl
        def agentenv_register_step_types(self, registry):
            registry.add(DropGateway)

    plain = runner.plugins

    def plugins():
        manager = plain()
        manager.register(Plugin(), "drop-gateway")
        return manager

    runner.plugins = plugins
    steps = [
        deploy("tidy"),
        access("hide", "disable", ["add_item"]),
        {"id": "drop", "type": "drop_gateway"},
        look("hidden"),
    ]
    record = await runner.run(steps, {**FILES, "artifacts/sees/sees.py": SEES})
    assert record["outcome"].startswith("passed"), (record["failure"], runner.logs.lines)
    assert runner.state["gateway"]["url"] != runner.state["outputs"]["drop"]["old_url"]
    tools, called = seen(runner.state, "hidden")
    assert tools == "list_items" and "disabled for role 'verifier'" in called
