"""`ctx.instance_resource`: started once per task instance, closed when the instance ends
(also when it fails or is cancelled), never shared between instances."""

from __future__ import annotations

from typing import ClassVar

import anyio
import attrs
import pytest

from agent_env.models import Step
from agent_env.resources import InstanceKey

pytestmark = pytest.mark.anyio
SERVER: InstanceKey[dict] = InstanceKey("test.server")
EVENTS: list[str] = []


@attrs.frozen(kw_only=True)
class UseServer(Step):
    type: ClassVar[str] = "use_server"

    async def execute(self, ctx) -> None:
        async def start() -> dict:
            EVENTS.append(f"start {ctx.task_instance_id}")
            await anyio.sleep(0.01)  # concurrent first uses must still start it once
            return {"owner": ctx.task_instance_id}

        async def close(server: dict) -> None:
            EVENTS.append(f"close {server['owner']}")

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(lambda: ctx.instance_resource(SERVER, start=start, close=close))
        server = await ctx.instance_resource(SERVER, start=start, close=close)
        assert ctx.instance_resource_if_started(SERVER) is server
        ctx.set("outputs", self.id, value=server["owner"])


@pytest.fixture(autouse=True)
def _clear():
    EVENTS.clear()


async def test_a_resource_starts_once_and_closes_when_the_instance_ends(harness):
    inst = await harness.run([UseServer(id="a"), UseServer(id="b")])
    assert inst.state["outputs"]["a"] == inst.state["outputs"]["b"] == inst.id
    assert [f"start {inst.id}", f"close {inst.id}"] == EVENTS


async def test_a_failed_instance_still_closes_its_resources(harness):
    inst = await harness.run([UseServer(id="a"), harness.Mark(id="bad", fail="no")])
    assert inst.record["outcome"] == "failed at step 'bad': no"
    assert [f"start {inst.id}", f"close {inst.id}"] == EVENTS


async def test_a_cancelled_instance_still_closes_its_resources(harness):
    inst = await harness.new([UseServer(id="a"), harness.Mark(id="slow", sleep=30)])
    with anyio.move_on_after(2):
        await inst.run()
    assert inst.record["status"] == "cancelled"
    assert [f"start {inst.id}", f"close {inst.id}"] == EVENTS
