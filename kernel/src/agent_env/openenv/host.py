"""The run pipeline for an embedding front end that runs one task instance at a time (the
OpenEnv server): one session, the bundles loaded and materialized once, and each episode a
run of its own (`prepare` writes its run document, so `agent-env runs list`, `runs show`, the
explorer and exports see it; `execute` runs it to the end and records it).

Example::

    host = await TaskHost.open({"all": bundle}, agent="openenv")
    try:
        prepared = await host.prepare("all", bundle.tasks["groceries"])
        record = await host.execute(prepared)
    finally:
        await host.close()
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from agent_env.runs.request import RunRequest

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.bundles.model import Bundle, Task
    from agent_env.engine.run import Session
    from agent_env.plugins.manager import PluginManager
    from agent_env.resources import InstanceKey
    from agent_env.runs.pipeline import LoadedBundle, PreparedRun, RunPipeline

#: What the run documents of the episodes name as their front end.
FRONT_END = "openenv"


def on_sandbox(tasks: list[Task], sandbox: str) -> list[Task]:
    """`tasks` with every step that chooses a sandbox set to `sandbox`: what `run --sandbox`
    does to the tasks it runs."""
    from agent_env.runs.options import RunOptions
    from agent_env.runs.overrides import apply

    return apply(tasks, RunOptions(provider=sandbox))[0]


def plugin_manager() -> PluginManager:
    """The process-wide plugin manager (what `agent-env run` uses)."""
    from agent_env.plugins import get_plugin_manager

    return get_plugin_manager()


@attrs.define
class TaskHost:
    """Runs single task instances of loaded bundles in this process, each as a run; `close`
    tears down whatever is still live (leases, like every run)."""

    pipeline: RunPipeline
    loaded: dict[str, LoadedBundle]
    agent: str | None = None
    #: The warm pools (`agent_env.runs.pool.TaskPools`) every episode starts with, or None.
    pools: Any = None

    @property
    def session(self) -> Session:
        return self.pipeline.session

    @classmethod
    async def open(
        cls,
        bundles: Mapping[str, Bundle],
        *,
        agent: str | None = None,
        plugins: PluginManager | None = None,
    ) -> TaskHost:
        """Open the session and load each bundle (keyed as the caller keys them)."""
        from agent_env.engine.run import Session
        from agent_env.runs.pipeline import RunPipeline

        session = await Session.open(plugins=plugins)
        pipeline = RunPipeline(session)
        try:
            await pipeline.reap_orphans()
            loaded = {}
            for key, bundle in bundles.items():
                request = RunRequest(bundle=bundle, agent=agent, front_end=FRONT_END)
                loaded[key] = await pipeline.load(request, every_task=True)
        except BaseException:
            await session.close()
            raise
        return cls(pipeline, loaded, agent)

    async def prepare(
        self,
        key: str,
        task: Task,
        resources: Mapping[InstanceKey[Any], Any] | None = None,
    ) -> PreparedRun:
        """A run of one trial of `task` of bundle `key`, its document written; `resources`
        are the instance resources its instance starts with."""
        loaded = self.loaded[key]
        request = self._request(key, task, resources)
        return await self.pipeline.plan(attrs.evolve(loaded, tasks=[task], selection=None), request)

    def _request(
        self, key: str, task: Task, resources: Mapping[InstanceKey[Any], Any] | None = None
    ) -> RunRequest:
        more: dict[InstanceKey[Any], Any] = dict(resources or {})
        if self.pools is not None:
            from agent_env.engine.instance import WARM_POOL

            more[WARM_POOL] = self.pools
        return RunRequest(
            bundle=self.loaded[key].bundle,
            task_names=(task.name,),
            agent=self.agent,
            front_end=FRONT_END,
            runner="local",  # the episode's agent is played in this process
            pool=0,  # the server's pools come as the WARM_POOL resource
            resources=more,
        )

    @contextlib.asynccontextmanager
    async def warm_pools(self, size: int, reuse: Mapping[str, Any]) -> AsyncIterator[None]:
        """Keep `size` warm instances of each task (`agent_env.runs.pool`; `reuse`: each
        bundle's `reuse` setting by bundle name) for the block: filled ahead now, refilled in
        the background, torn down at its end."""
        from agent_env.runs.pool import TaskPools

        async with TaskPools(size, reuse=dict(reuse)).running() as pools:
            self.pools = pools  # kept after the block (closed): what it did stays readable
            await self.fill_pools()
            yield

    async def fill_pools(self) -> None:
        """Fill the warm pools ahead: every task of every loaded bundle (once per bundle)."""
        if self.pools is None:
            return
        seen: set[int] = set()
        for key, loaded in self.loaded.items():
            if id(loaded.bundle) in seen:
                continue
            seen.add(id(loaded.bundle))
            for task in loaded.tasks:
                await self.pipeline.fill_pool(self.pools, loaded, self._request(key, task), task)

    async def execute(self, prepared: PreparedRun) -> dict[str, Any]:
        """Run the prepared run to its end (torn down, recorded); its one trial's stored
        record: status, outcome, scores, verifiers, failure."""
        result = await self.pipeline.execute(prepared)
        (record,) = result.records
        return record

    async def close(self) -> None:
        await self.pipeline.session.close()
