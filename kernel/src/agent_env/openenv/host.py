"""The engine facade an embedding front end (the OpenEnv server) runs single task instances
through: one session (plugins, config, stores, sandboxes), the bundles materialized once, and
`run(key, task, instance_id)` for each episode, with the played agent kind as the run's agent.

Example::

    host = await TaskHost.open({"all": bundle}, agent="openenv")
    try:
        record = await host.run("all", bundle.tasks["groceries"], host.new_instance_id())
    finally:
        await host.close()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs


def plugin_manager() -> Any:
    """The process-wide plugin manager (what `agent-env run` uses)."""
    from agent_env.plugins import get_plugin_manager

    return get_plugin_manager()


@attrs.define
class TaskHost:
    """Runs task instances of materialized bundles in this process; `close` tears down
    whatever is still live (leases, like every run)."""

    session: Any
    services: dict[str, Any]
    bundle_info: dict[str, dict[str, Any]]
    run_id: str
    agent: str | None = None
    task_versions: dict[str, dict[str, int]] = attrs.field(factory=dict)

    @classmethod
    async def open(
        cls, bundles: Mapping[str, Any], *, agent: str | None = None, plugins: Any = None
    ) -> TaskHost:
        """Open the session and materialize each bundle (keyed as the caller keys them)."""
        from agent_env.bundles import materialize
        from agent_env.engine.records import new_id
        from agent_env.engine.run import Session, bundle_info

        session = await Session.open(plugins=plugins)
        try:
            await session.sandboxes.reap_orphans()
            services, info, versions = {}, {}, {}
            for key, bundle in bundles.items():
                materialized = await materialize(bundle, session.stores)
                services[key] = await session.services(
                    artifacts=materialized.artifacts, agent=agent
                )
                info[key] = bundle_info(bundle, str(bundle.root))
                versions[key] = dict(materialized.task_versions)
        except BaseException:
            await session.close()
            raise
        return cls(session, services, info, new_id("run"), agent, versions)

    @staticmethod
    def new_instance_id() -> str:
        from agent_env.engine.records import new_id

        return new_id("ti")

    async def run(self, key: str, task: Any, instance_id: str) -> dict[str, Any]:
        """Run `task` of bundle `key` as instance `instance_id` to the end (torn down, record
        written); its stored record: status, outcome, scores, verifiers, failure."""
        from agent_env.engine.instance import TaskInstance

        instance = await TaskInstance.create(
            self.services[key],
            task=task,
            instance_id=instance_id,
            run_id=self.run_id,
            bundle=self.bundle_info[key],
            task_version=self.task_versions.get(key, {}).get(task.name),
            meta={"agent": self.agent},
            write=False,
        )
        return await instance.run()

    async def close(self) -> None:
        await self.session.close()
