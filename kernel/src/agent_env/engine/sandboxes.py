"""The sandboxes one task instance holds: live ones by name (what steps reach through the
context) and every one it created or adopted (what it tears down when it ends)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from agent_env.errors import SandboxError, StepFailed
from agent_env.resources import InstanceResources
from agent_env.suggest import did_you_mean


class InstanceSandboxes:
    """Creates through the run's `SandboxManager`; `keep` defers teardowns to the run's end."""

    def __init__(
        self,
        manager: Any,
        *,
        labels: Mapping[str, str],
        keep: bool,
        log: Callable[[str | None, str], None],
        default_provider: str | None = None,
        keep_logs: Callable[[str, Any], Coroutine[Any, Any, Any]] | None = None,
    ):
        self.manager = manager
        self.labels = dict(labels)
        self.keep = keep
        self.log = log
        self.default_provider = default_provider
        self.live: dict[str, Any] = {}
        self.owned: list[Any] = []
        #: `keep_logs(name, sandbox)` saves a sandbox's process output before its teardown
        self.keep_logs = keep_logs
        self.names: dict[int, str] = {}
        #: instance-scoped resources (`ctx.instance_resource`), closed with the instance
        self.resources = InstanceResources()
        #: sandbox-seconds per provider of the sandboxes torn down, and the live ones' starts
        self.lived: dict[str, float] = {}
        self.born: dict[int, tuple[str, float]] = {}

    async def close_resources(self) -> None:
        """Close the instance's resources (before its sandboxes go; even with `keep`)."""
        await self.resources.aclose(lambda message: self.log(None, message))

    async def create(
        self, step_id: str, name: str, spec: Any, provider: str | None
    ) -> tuple[Any, dict]:
        """The new sandbox and the record to keep under `sandboxes.<name>`."""
        if name in self.live:
            raise StepFailed(step_id, f"a sandbox named {name!r} already exists in this task")
        sandbox = await self.manager.create(
            name,
            spec,
            provider=provider or self.default_provider,
            labels={**self.labels, "step_id": step_id},
            on_fallback=lambda message: self.log(step_id, message),
        )
        self.owned.append(sandbox)
        self.live[name] = sandbox
        self.names[id(sandbox)] = name
        self.born[id(sandbox)] = (str(sandbox.provider), time.monotonic())
        record = {
            "provider": sandbox.provider,
            "id": sandbox.id,
            "info": sandbox.describe(),
            "created_by": step_id,
        }
        return sandbox, record

    def get(self, step_id: str, name: str) -> Any:
        try:
            return self.live[name]
        except KeyError:
            known = ", ".join(sorted(self.live)) or "none"
            raise StepFailed(
                step_id, f"unknown sandbox {name!r}{did_you_mean(name, self.live)}; known: {known}"
            ) from None

    async def release(self, step_id: str, name: str) -> None:
        """A step tears `name` down now (or, with `keep`, at the end of the run)."""
        sandbox = self.live.pop(name, None)
        if sandbox is None:
            return
        if self.keep:
            self.log(step_id, f"keeping sandbox {name!r} ({sandbox.id}) until Ctrl-C (--keep)")
        else:
            await self._teardown(sandbox)

    async def drop_unrecorded(self, recorded: Mapping[str, Any]) -> None:
        """After a rollback: tear down live sandboxes the state no longer records."""
        for name in [n for n in self.live if n not in recorded]:
            await self._teardown(self.live.pop(name))

    async def reconnect(
        self, recorded: Mapping[str, Any], *, dead_owner: Mapping[str, Any] | None = None
    ) -> list[str]:
        """Adopt the recorded sandboxes not live yet; the creating step of each one that is gone.

        Fencing comes first: the sandboxes the dead run (`dead_owner`, the record's previous
        owner) left for this instance are leased to this process, and each adopted one has the
        commands the dead run's steps still ran ended (`Sandbox.fence`), so a step that was
        running when the controller died never runs twice at once. Afterwards what the dead
        run left for this instance and the journal never recorded is torn down; other
        instances' sandboxes are left alone (a sibling trial may be about to adopt them)."""
        instance_id = self.labels.get("task_instance_id", "")
        if self.manager is not None:
            await self.manager.take_over(instance_ids=[instance_id], dead_owner=dead_owner)
        broken: list[str] = []
        for name, rec in recorded.items():
            if name in self.live:
                continue
            try:
                if self.manager is None:
                    raise SandboxError("no sandbox manager")
                sandbox = await self.manager.connect(
                    {"provider": rec.get("provider"), "describe": rec.get("info") or {}}
                )
            except Exception as exc:
                self.log(
                    None,
                    f"sandbox {name!r} is gone ({exc}); re-running from step "
                    f"{rec.get('created_by')!r}",
                )
                broken.append(rec.get("created_by"))
                continue
            self.live[name] = sandbox
            self.owned.append(sandbox)
            self.names[id(sandbox)] = name
            self.born[id(sandbox)] = (str(rec.get("provider")), time.monotonic())
            ended = await sandbox.fence()
            if ended:
                self.log(
                    None,
                    f"fenced sandbox {name!r}: ended {len(ended)} command(s) the interrupted "
                    f"run still ran ({', '.join(ended[:5])})",
                )
        if self.manager is not None:
            await self.manager.release_unadopted(instance_id, keep=[s.id for s in self.owned])
        return broken

    async def vanished(self) -> list[str]:
        """`sandbox 'name' (id) vanished: why` for each live sandbox that is gone (or whose
        commands were killed) although no step tore it down (`Sandbox.vanished`)."""
        gone = []
        for name, sandbox in list(self.live.items()):
            try:
                why = await sandbox.vanished()
            except Exception:  # noqa: BLE001 - a provider that cannot tell says nothing
                why = None
            if why:
                gone.append(f"sandbox {name!r} ({sandbox.id}) vanished: {why}")
        return gone

    async def teardown_owned(self) -> None:
        """Tear down every sandbox this instance created or adopted, concurrently."""
        owned = list(self.owned)
        if owned:
            async with asyncio.TaskGroup() as tg:
                for sandbox in owned:
                    tg.create_task(self._teardown(sandbox))
        self.live.clear()

    async def save_logs(self) -> None:
        """Keep the output of every sandbox this instance still owns, without tearing any down
        (what `--keep` runs save when a trial ends)."""
        if self.keep_logs is None:
            return
        named = [(self.names[id(s)], s) for s in self.owned if id(s) in self.names]
        async with asyncio.TaskGroup() as tg:
            for name, sandbox in named:
                tg.create_task(self.keep_logs(name, sandbox))

    async def _teardown(self, sandbox: Any) -> None:
        name = self.names.pop(id(sandbox), None)
        if self.keep_logs is not None and name is not None:
            await self.keep_logs(name, sandbox)
        try:
            await self.manager.teardown(sandbox)
        except Exception as exc:
            self.log(None, f"teardown of sandbox {getattr(sandbox, 'id', '?')} failed: {exc}")
        if sandbox in self.owned:
            self.owned.remove(sandbox)
        born = self.born.pop(id(sandbox), None)
        if born is not None:
            provider, started = born
            self.lived[provider] = self.lived.get(provider, 0.0) + time.monotonic() - started

    def seconds_by_provider(self) -> dict[str, float]:
        """Sandbox-seconds per provider: the torn-down sandboxes' lives plus the live ones'
        so far (what a trial's cost counts)."""
        out = dict(self.lived)
        now = time.monotonic()
        for provider, started in self.born.values():
            out[provider] = out.get(provider, 0.0) + now - started
        return out
