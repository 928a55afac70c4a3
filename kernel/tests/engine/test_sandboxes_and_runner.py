"""The engine with real local sandboxes (retry rollback, teardown) and `LocalRunner` bounds."""

from __future__ import annotations

import time
from typing import ClassVar

import anyio
import attrs
import pytest

from agent_env.engine.runner import LocalRunner
from agent_env.errors import StepFailed
from agent_env.models import RetryConfig, Step
from agent_env.sandbox import SandboxSpec
from agent_env.sandboxes.manager import SandboxManager

pytestmark = pytest.mark.anyio
CALLS: dict[str, int] = {}
RUNNING = {"now": 0, "max": 0}


@attrs.frozen(kw_only=True)
class MakeBox(Step):
    type: ClassVar[str] = "make_box"

    async def execute(self, ctx) -> None:
        CALLS[self.id] = CALLS.get(self.id, 0) + 1
        box = await ctx.create_sandbox("box", SandboxSpec())
        await box.write_file("/app/attempt.txt", str(CALLS[self.id]).encode())


@attrs.frozen(kw_only=True)
class FailOnce(Step):
    type: ClassVar[str] = "fail_once"

    async def execute(self, ctx) -> None:
        CALLS[self.id] = CALLS.get(self.id, 0) + 1
        box = await ctx.sandbox("box")
        attempt = (await box.read_file("/app/attempt.txt")).decode()
        ctx.set("outputs", self.id, value=attempt)
        if CALLS[self.id] == 1:
            raise StepFailed(self.id, "first attempt fails")


@attrs.frozen(kw_only=True)
class Busy(Step):
    type: ClassVar[str] = "busy"

    async def execute(self, ctx) -> None:
        RUNNING["now"] += 1
        RUNNING["max"] = max(RUNNING["max"], RUNNING["now"])
        try:
            await anyio.sleep(0.05)
        finally:
            RUNNING["now"] -= 1


@pytest.fixture
def boxes(harness, tmp_path):
    CALLS.clear()
    harness.services.sandboxes = SandboxManager(harness.services.plugins, None, tmp_path)
    return tmp_path


def work_folders(home):
    root = home / "sandboxes"
    return (
        [p for p in root.iterdir() if not p.name.startswith(".") and not p.name.endswith(".meta")]
        if root.exists()
        else []
    )


async def test_retry_rolls_back_the_sandbox_made_in_the_span(harness, boxes):
    inst = await harness.run(
        [
            MakeBox(id="box"),
            FailOnce(id="use", retry_config=RetryConfig(retry_from_step_id="box", max_retries=1)),
        ]
    )
    assert inst.record["status"] == "unscored", inst.record["outcome"]
    assert CALLS == {"box": 2, "use": 2}
    # the second attempt saw a fresh sandbox, made by the second run of `box`
    assert inst.state["outputs"]["use"] == "2"
    assert work_folders(boxes) == []
    assert not list((boxes / "leases").iterdir())


async def test_sandboxes_are_torn_down_when_the_task_fails(harness, boxes):
    inst = await harness.run([MakeBox(id="box"), harness.Mark(id="bad", fail="no")])
    assert inst.record["outcome"] == "failed at step 'bad': no"
    assert work_folders(boxes) == []


async def test_sandboxes_are_torn_down_when_the_task_is_cancelled(harness, boxes):
    inst = await harness.new([MakeBox(id="box"), harness.Mark(id="slow", sleep=30)])
    with anyio.move_on_after(2):
        await inst.run()
    assert inst.record["status"] == "cancelled"
    assert work_folders(boxes) == []


async def test_local_runner_bounds_concurrency(harness):
    RUNNING.update(now=0, max=0)
    insts = [await harness.new([Busy(id="b")], name=f"t{i}") for i in range(6)]
    t0 = time.perf_counter()
    records = await LocalRunner(concurrency=2).run(insts)
    assert RUNNING["max"] == 2
    assert time.perf_counter() - t0 >= 0.15  # three waves of 0.05 s
    assert [r["status"] for r in records] == ["unscored"] * 6


def test_local_runner_is_a_builtin_plugin(plugin_manager):
    assert plugin_manager.runners.get("local") is LocalRunner
    assert (
        plugin_manager.plugins[plugin_manager.runners.owner("local")].module
        == "agent_env.engine.hooks"
    )


@attrs.frozen(kw_only=True)
class BadBox(Step):
    type: ClassVar[str] = "bad_box"

    async def execute(self, ctx) -> None:
        await ctx.create_sandbox("box", SandboxSpec(image="python:3.11-slim"))


async def test_a_sandbox_error_is_an_infrastructure_failure(harness, boxes):
    inst = await harness.run([BadBox(id="box")])
    assert inst.record["outcome"].startswith("failed at step 'box': SandboxError: ")
    assert inst.record["failure"]["class"] == "infrastructure"
