"""Small step types and an engine harness over real SQLite stores (no sandboxes needed)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

import anyio
import attrs
import pytest

from agent_env.engine.instance import TaskInstance
from agent_env.engine.records import new_id
from agent_env.engine.services import EngineServices, Reporter
from agent_env.errors import StepFailed
from agent_env.models import Step
from agent_env.plugins import PluginManager
from agent_env.redact import Redactor
from agent_env.stores import open_stores

EVENTS: list[tuple[str, str, float]] = []
BARRIERS: dict[str, Any] = {}
FAILS: dict[str, int] = {}


@attrs.frozen(kw_only=True)
class Mark(Step):
    """Records start/end events; optionally sleeps, writes `outputs.<id>`, fails N times."""

    type: ClassVar[str] = "mark"
    sleep: float = 0.0
    value: Any = None
    fail: str | None = None
    fail_times: int = 1_000_000
    barrier: str | None = None

    async def execute(self, ctx) -> None:
        EVENTS.append(("start", self.id, time.perf_counter()))
        try:
            if self.barrier:
                event, expected = BARRIERS[self.barrier]
                BARRIERS[self.barrier] = (event, expected - 1)
                if expected - 1 == 0:
                    event.set()
                with anyio.fail_after(2):
                    await event.wait()
            if self.sleep:
                await anyio.sleep(self.sleep)
            ctx.set("outputs", self.id, value=self.value if self.value is not None else True)
            if self.fail and FAILS.get(self.id, 0) < self.fail_times:
                FAILS[self.id] = FAILS.get(self.id, 0) + 1
                ctx.set("scratch", self.id, value=FAILS[self.id])
                raise StepFailed(self.id, self.fail)
        finally:
            EVENTS.append(("end", self.id, time.perf_counter()))


@attrs.frozen(kw_only=True)
class Score(Step):
    """A verifier that records a fixed score."""

    type: ClassVar[str] = "score"
    is_verifier: ClassVar[bool] = True
    verifier_id: str
    score: float | None = 1.0

    async def execute(self, ctx) -> None:
        ctx.record_verifier(self.verifier_id, [{"id": "x", "result": True}], self.score)


@attrs.frozen(kw_only=True)
class Aggregate(Score):
    """A third-party aggregate: the declared `is_aggregate`, not a type name, makes it count."""

    type: ClassVar[str] = "my_total"
    is_aggregate: ClassVar[bool] = True


@attrs.frozen(kw_only=True)
class FakeTask:
    name: str
    id: str
    steps: list


class Harness:
    FakeTask = FakeTask
    Mark = Mark
    Score = Score
    Aggregate = Aggregate
    events = EVENTS
    barriers = BARRIERS

    def __init__(self, services: EngineServices):
        self.services = services

    def barrier(self, name: str, parties: int) -> None:
        BARRIERS[name] = (anyio.Event(), parties)

    async def new(self, steps: list, name: str = "t") -> TaskInstance:
        task = FakeTask(name=name, id=f"@test/{name}", steps=steps)
        return await TaskInstance.create(
            self.services,
            task=task,
            instance_id=new_id("ti"),
            run_id="run-test",
            bundle={"spec": "test", "name": "test"},
            task_version=1,
        )

    async def run(self, steps: list, name: str = "t") -> TaskInstance:
        inst = await self.new(steps, name)
        await inst.run()
        return inst

    def started(self) -> list[str]:
        return [sid for kind, sid, _ in EVENTS if kind == "start"]


@pytest.fixture
def harness(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_ENV_HOME", str(tmp_path))
    EVENTS.clear()
    BARRIERS.clear()
    FAILS.clear()
    plugins = PluginManager(autoload=False)
    stores = open_stores({}, plugins, home=tmp_path)
    services = EngineServices(
        plugins=plugins,
        config=None,
        stores=stores,
        sandboxes=None,
        redactor=Redactor(),
        reporter=Reporter(),
    )
    yield Harness(services)
    anyio.run(stores.close)
