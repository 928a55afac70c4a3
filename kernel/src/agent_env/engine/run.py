"""The parts of a run below the CLI: the `Session` (plugins, config, stores, sandbox manager,
opened once per command), task selection, what a record keeps about the bundle, and the checks
a resume makes. Running a request is `agent_env.runs.pipeline`; the trials are `trials`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from agent_env.aio import shielded
from agent_env.engine.records import COLLECTION, RUNS, Status, TaskInstanceRecord
from agent_env.engine.services import EngineServices, Reporter
from agent_env.errors import AgentEnvError, BundleError
from agent_env.redact import StoreRedactors
from agent_env.suggest import did_you_mean


@attrs.define
class Session:
    """The long-lived parts of one command: plugins, config, stores, sandbox manager."""

    plugins: Any
    config: Any
    stores: Any
    sandboxes: Any
    #: The top-level redactor, kept while the secrets it knows are unchanged.
    redactors: StoreRedactors = attrs.field(
        kw_only=True,
        default=attrs.Factory(lambda s: StoreRedactors(s.stores, s.config), takes_self=True),
    )

    @classmethod
    async def open(cls, plugins: Any = None, config: Any = None) -> Session:
        """Build everything from the process-wide plugins and the config (stores connect lazily)."""
        from agent_env.config import load_config
        from agent_env.plugins import get_plugin_manager
        from agent_env.sandboxes.manager import SandboxManager
        from agent_env.stores.open import open_stores_async

        plugins = plugins if plugins is not None else get_plugin_manager()
        config = config if config is not None else load_config(plugins=plugins)
        stores = await open_stores_async(config, plugins)
        return cls(plugins, config, stores, SandboxManager(plugins, config, config.home))

    async def services(
        self,
        *,
        artifacts: Mapping[str, Any] | None = None,
        reporter: Reporter | None = None,
        default_provider: str | None = None,
        keep: bool = False,
        agent: str | None = None,
        model: str | None = None,
    ) -> EngineServices:
        return EngineServices(
            plugins=self.plugins,
            config=self.config,
            stores=self.stores,
            sandboxes=self.sandboxes,
            redactor=await self.redactors.current(),
            artifacts=dict(artifacts or {}),
            reporter=reporter or Reporter(),
            default_provider=default_provider,
            keep=keep,
            agent=agent,
            model=model,
        )

    async def close(self) -> None:
        """Tear down whatever is still live (a safety net), then close the stores."""
        try:
            await shielded(self.sandboxes.teardown_all(), timeout=120)
        finally:
            await shielded(self.stores.close())


def bundle_info(bundle: Any, spec: str) -> dict[str, Any]:
    """What a record keeps about the bundle, enough to load it again for a resume."""
    return {
        "spec": spec,
        "name": bundle.name,
        "id_prefix": bundle.id_prefix,
        "root": str(bundle.root),
        "provenance": dict(getattr(bundle, "provenance", {}) or {}),
    }


def resume_spec(info: Mapping[str, Any]) -> str:
    """The spec that loads a recorded bundle again: the source's pinned form when it gave one
    (an `hf://` spec at the exact commit, so a moved branch cannot change a resumed run)."""
    pinned = (info.get("provenance") or {}).get("pinned_spec")
    return pinned if isinstance(pinned, str) and pinned else info["spec"]


def eval_summary(bundle: Any, eval_names: Iterable[str], records: Sequence[Mapping[str, Any]]):
    """[{name, passed, total}] for each eval, counting the records of its tasks."""
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for rec in records:
        by_task.setdefault(rec["task"]["name"], []).append(rec)
    out = []
    for name in eval_names:
        recs = [r for t in bundle.evals[name].tasks for r in by_task.get(t, [])]
        passed = sum(1 for r in recs if r["status"] == "passed")
        out.append({"name": name, "passed": passed, "total": len(recs)})
    return out


async def load_record(documents: Any, instance_id: str) -> dict[str, Any]:
    """The record of `instance_id`; `AgentEnvError` with a did-you-mean when absent."""
    record = await documents.get(COLLECTION, instance_id)
    if record is not None:
        return record
    known = [k for k, _ in await documents.list(COLLECTION)] + [
        k for k, _ in await documents.list(RUNS)
    ]
    hint = did_you_mean(instance_id, known)
    raise AgentEnvError(
        f"no task instance or run {instance_id!r}{hint}; `agent-env runs list` shows the "
        "recorded ones"
    )


def check_not_running(record: TaskInstanceRecord | Mapping[str, Any]) -> None:
    """Refuse to resume an instance (its record or stored document) whose owner process is
    still alive on this host."""
    if isinstance(record, Mapping):
        ident, status, owner = record["id"], record.get("status"), record.get("owner")
    else:
        ident, status, owner = record.id, record.status, record.owner
    if status == Status.RUNNING:
        check_owner_gone(ident, owner)


def check_owner_gone(ident: str, owner: Mapping[str, Any] | None) -> None:
    """Refuse when `owner` (a record's `{pid, start_time, host}`) is a live process on this
    host other than this one: the instance or run `ident` is still running there."""
    import os

    from agent_env.sandboxes.procs import ProcessIdentity, hostname

    owner = owner or {}
    if owner.get("host") != hostname():
        return
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return
    started = owner.get("start_time")  # absent in records written before it was recorded
    if not ProcessIdentity(pid=pid, start_time=started, host=owner["host"]).alive():
        return
    raise AgentEnvError(
        f"{'run' if str(ident).startswith('run-') else 'task instance'} "
        f"{ident!r} is still running in process {pid}; "
        "stop it first (Ctrl-C tears its sandboxes down) or wait for it"
    )


def task_for_resume(
    bundle: Any, record: TaskInstanceRecord | Mapping[str, Any], task_versions: Mapping[str, int]
):
    """The task of `record` (a record, its stored document, or `{id, task: {name, version}}`)
    from the reloaded bundle, refusing when its content changed."""
    if isinstance(record, Mapping):
        ident, name, was = record["id"], record["task"]["name"], record["task"].get("version")
    else:
        ident, name, was = record.id, record.task.name, record.task.version
    if name not in bundle.tasks:
        raise BundleError(
            f"cannot resume {ident!r}: bundle {bundle.name!r} no longer has task {name!r}"
        )
    now = task_versions.get(name)
    if was is not None and now is not None and was != now:
        raise BundleError(
            f"cannot resume {ident!r}: task {name!r} changed since the run started "
            f"(v{was} then, v{now} now)"
        )
    return bundle.tasks[name]
