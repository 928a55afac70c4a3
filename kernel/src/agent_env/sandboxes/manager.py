"""`SandboxManager`: creates sandboxes through the registered providers, keeps a lease file per
live sandbox, tears them down, and reaps the sandboxes of owners that died (SIGKILL, power cut).

The engine owns one manager per run; the CLI calls `reap_orphans()` at the start of every
command, so that path is one `listdir` when no lease exists.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from agent_env.aio import shielded, to_thread
from agent_env.errors import AgentEnvError, PluginError, SandboxError
from agent_env.sandbox import Sandbox, SandboxProvider, SandboxSpec, provider_chain
from agent_env.sandboxes import leases, watchdog

log = logging.getLogger(__name__)
DEFAULT_PROVIDER = "local"


class SandboxManager:
    """Providers by name (settings from `[sandbox.<provider>]`), sandboxes by id, leases on disk.

    `create_limit` caps how many sandboxes are being created at once (`[run]
    sandbox_concurrency`, `agent-env run --sandbox-concurrency`); None means no cap."""

    def __init__(
        self,
        plugins: Any,
        config: Any = None,
        home: Path | None = None,
        *,
        create_limit: int | None = None,
    ):
        from agent_env.paths import home as default_home

        self.plugins = plugins
        self.config = config
        self.home = Path(home) if home is not None else default_home()
        self.lease_dir = self.home / "leases"
        self.live: dict[str, Sandbox] = {}
        self.reap_errors: list[str] = []
        self._providers: dict[str, SandboxProvider] = {}
        self._sandbox_table: Mapping[str, Any] | None = None
        self._create_gate: asyncio.Semaphore | None = None
        self.create_limit = create_limit
        #: The most creations seen in flight at once (what the cap is checked against).
        self.peak_creating = 0
        self._creating = 0
        #: Leases `take_over` re-owned from a dead run, by sandbox id, until adopted.
        self._taken: dict[str, dict[str, Any]] = {}

    @property
    def create_limit(self) -> int | None:
        return self._create_limit

    @create_limit.setter
    def create_limit(self, limit: int | None) -> None:
        if limit is not None and limit < 1:
            raise ValueError(f"sandbox creation limit must be at least 1, got {limit}")
        self._create_limit = limit
        self._create_gate = None

    # -- providers -----------------------------------------------------------------------

    def _table(self) -> Mapping[str, Any]:
        """The `[sandbox]` table (read once: every step's context asks for the default)."""
        if self.config is None:
            return {}
        if self._sandbox_table is None:
            self._sandbox_table = self.config.table("sandbox") or {}
        return self._sandbox_table

    def default_provider(self) -> str:
        return self._table().get("default") or DEFAULT_PROVIDER

    def chain(self, spec: str | None = None) -> tuple[str, ...]:
        """The providers to try, in order, for `spec` (a name or a fallback chain `a,b`;
        default: `[sandbox] default`); see `agent_env.sandbox.provider_chain`. A plain
        sandbox asked on `local` stays there (only an env deploy falls back to Docker)."""
        return provider_chain(spec or self.default_provider(), self.plugins.sandbox_providers)

    def provider(self, name: str) -> SandboxProvider:
        """The provider instance named `name` (PluginError with a did-you-mean if unknown);
        for a chain `a,b`, its first provider."""
        if "," in name:
            name = self.chain(name)[0]
        if name not in self._providers:
            cls = self.plugins.sandbox_providers.get(name)
            settings = self._table().get(name, {})
            if not isinstance(settings, Mapping):
                settings = {}
            self._providers[name] = cls(settings, home=self.home)
        return self._providers[name]

    # -- lifecycle -----------------------------------------------------------------------

    async def create(
        self,
        name: str,
        spec: SandboxSpec,
        provider: str | None = None,
        labels: Mapping[str, str] | None = None,
        *,
        on_fallback: Callable[[str], None] | None = None,
    ) -> Sandbox:
        """Create sandbox `name` and write its lease; the spec gets the owner labels. With a
        chain (`local,docker`), each provider is tried in order until one creates it; the
        sandbox's `provider` says which did, and `on_fallback` hears why earlier ones did not."""
        names = self.chain(provider)
        if len(names) == 1:
            return await self._create_on(names[0], name, spec, labels)
        refused: list[str] = []
        for provider_name in names:
            try:
                sandbox = await self._create_on(provider_name, name, spec, labels)
            except (SandboxError, PluginError) as e:
                log.info("sandbox %r: provider %s refused: %s", name, provider_name, e)
                refused.append(f"{provider_name} refused it ({e})")
                continue
            if refused:
                message = f"sandbox {name!r} created on {provider_name}: " + "; ".join(refused)
                log.info(message)
                if on_fallback is not None:
                    on_fallback(message)
            return sandbox
        raise SandboxError(
            f"no provider of {','.join(names)} could create sandbox {name!r}: " + "; ".join(refused)
        )

    async def _create_on(
        self,
        provider_name: str,
        name: str,
        spec: SandboxSpec,
        labels: Mapping[str, str] | None,
    ) -> Sandbox:
        provider_obj = self.provider(provider_name)
        if getattr(provider_obj, "watch_on_process", False):
            watchdog.arm(self.home)  # it starts the watchdog before its first process
        else:
            watchdog.watch(self.home)
        owner = leases.me()
        all_labels = {
            **dict(spec.labels),
            **dict(labels or {}),
            "sandbox_name": name,
            "owner_pid": str(owner["owner_pid"]),
            "owner_host": owner["host"],
        }
        if owner["owner_start_time"] is not None:
            all_labels["owner_start_time"] = str(owner["owner_start_time"])
        spec = attrs.evolve(spec, labels=all_labels)
        # A SIGKILL between the provider's create and the lease below would leave a sandbox
        # no lease names: the pending lease makes the next reaper ask the provider itself.
        pending = leases.write_pending(
            self.lease_dir,
            {
                "provider": provider_name,
                **owner,
                "run_id": all_labels.get("run_id"),
                "task_instance_id": all_labels.get("task_instance_id"),
                "created_at": leases.now(),
            },
        )
        try:
            if self._create_limit is None:
                sandbox = await self._create(provider_obj, spec)
            else:
                if self._create_gate is None:
                    self._create_gate = asyncio.Semaphore(self._create_limit)
                async with self._create_gate:
                    sandbox = await self._create(provider_obj, spec)
        except BaseException:
            pending.unlink(missing_ok=True)
            raise
        self.live[sandbox.id] = sandbox
        try:
            leases.write(
                self._lease_path(sandbox.id),
                {
                    "sandbox_id": sandbox.id,
                    "name": name,
                    "provider": provider_name,
                    "describe": sandbox.describe(),
                    **owner,
                    "run_id": all_labels.get("run_id"),
                    "task_instance_id": all_labels.get("task_instance_id"),
                    "created_at": leases.now(),
                },
            )
        except BaseException:
            await shielded(self.teardown(sandbox))
            raise
        finally:
            pending.unlink(missing_ok=True)
        return sandbox

    async def _create(self, provider: SandboxProvider, spec: SandboxSpec) -> Sandbox:
        self._creating += 1
        self.peak_creating = max(self.peak_creating, self._creating)
        try:
            return await provider.create(spec)
        finally:
            self._creating -= 1

    async def connect(self, info: Mapping[str, Any]) -> Sandbox:
        """Reconnect from `describe()` output (or `{provider, describe}`); re-owns the lease."""
        describe = info.get("describe", info)
        provider_name = info.get("provider") or describe.get("provider")
        if not provider_name:
            raise SandboxError(f"cannot reconnect: no provider in {dict(info)!r}")
        watchdog.watch(self.home)
        sandbox_id = describe.get("id")
        if isinstance(sandbox_id, str) and self._being_reaped(sandbox_id):
            raise SandboxError(f"sandbox {sandbox_id} is being torn down by a reaper")
        sandbox = await self.provider(provider_name).connect(describe)
        self.live[sandbox.id] = sandbox
        self._taken.pop(sandbox.id, None)
        self._adopt(sandbox.id, provider_name, sandbox.describe())
        return sandbox

    # -- resume: leasing what a dead run left to the run that resumes it ------------------

    async def take_over(
        self,
        *,
        run_id: str | None = None,
        instance_ids: Iterable[str] = (),
        dead_owner: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Lease to this process every sandbox whose owner is dead and whose lease names
        `run_id` or one of `instance_ids`: no other reaper (another command, the dead owner's
        watchdog) tears them down while the resume adopts them one trial at a time. First
        waits (a few seconds at most) for the watchdog of `dead_owner` (a record's `{pid,
        start_time, host}`) to finish reaping, so what it reaps is gone, not half-gone. What is
        taken over and never adopted is torn down by `release_unadopted` or `reap_used`."""
        if watchdog.may_wait(dead_owner):
            await to_thread(watchdog.wait_for_supervisor, dead_owner)
        instance_ids = set(instance_ids)
        try:
            names = sorted(os.listdir(self.lease_dir))
        except FileNotFoundError:
            return []
        taken: list[str] = []
        watched = False
        for name in names:
            if name.startswith((".", leases.PENDING)) or leases.CLAIM in name:
                continue
            if not name.endswith(leases.SUFFIX):
                continue
            lease = leases.read(self.lease_dir / name)
            if lease is None or not _names(lease, run_id, instance_ids):
                continue
            if leases.owner_alive(lease):
                continue
            if not watched:  # a resume killed in turn leaves them to its own watchdog
                watchdog.watch(self.home)
                watched = True
            lease = leases.take(self.lease_dir / name)
            if lease is not None:
                sandbox_id = lease.get("sandbox_id") or name.removesuffix(leases.SUFFIX)
                self._taken[sandbox_id] = lease
                taken.append(sandbox_id)
        return taken

    async def release_unadopted(self, instance_id: str, keep: Iterable[str] = ()) -> list[str]:
        """Tear down what a dead run left for task instance `instance_id` that its resume did
        not adopt (`keep`): a sandbox a step created while the controller died, before the
        journal recorded it. Another instance's sandboxes are never touched."""
        keep = set(keep) | set(self.live)
        try:
            names = sorted(os.listdir(self.lease_dir))
        except FileNotFoundError:
            return []
        reaped: list[str] = []
        for name in names:
            if name.startswith((".", leases.PENDING)) or leases.CLAIM in name:
                continue
            if not name.endswith(leases.SUFFIX):
                continue
            sandbox_id = name.removesuffix(leases.SUFFIX)
            if sandbox_id in keep:
                continue
            lease = leases.read(self.lease_dir / name)
            if lease is None or lease.get("task_instance_id") != instance_id:
                continue
            if leases.owner_alive(lease) and not leases.mine(lease):
                continue
            claimed = leases.claim(self.lease_dir / name)
            if claimed is None:
                continue
            self._taken.pop(sandbox_id, None)
            if await self._reap_one(sandbox_id, lease, claimed):
                reaped.append(sandbox_id)
        return reaped

    async def _reap_taken(self) -> list[str]:
        """Tear down what `take_over` leased to this process and no instance adopted."""
        reaped: list[str] = []
        for sandbox_id, lease in list(self._taken.items()):
            self._taken.pop(sandbox_id, None)
            if sandbox_id in self.live:
                continue
            claimed = leases.claim(self._lease_path(sandbox_id))
            if claimed is not None and await self._reap_one(sandbox_id, lease, claimed):
                reaped.append(sandbox_id)
        return reaped

    def _being_reaped(self, sandbox_id: str) -> bool:
        """Whether a live reaper holds the claim on `sandbox_id`'s lease."""
        prefix = f"{sandbox_id}{leases.CLAIM}"
        try:
            names = os.listdir(self.lease_dir)
        except FileNotFoundError:
            return False
        mine = f"{prefix}{os.getpid()}"
        return any(n.startswith(prefix) and n != mine and not leases.stale_claim(n) for n in names)

    async def teardown(self, sandbox: Sandbox) -> None:
        """Tear `sandbox` down (idempotent) and drop its lease."""
        await shielded(sandbox.teardown())
        self.live.pop(sandbox.id, None)
        try:
            self._lease_path(sandbox.id).unlink()
        except FileNotFoundError:
            pass

    async def teardown_all(self) -> None:
        """Tear down every sandbox this manager holds, concurrently; SandboxError listing
        the ones that failed (the others are still torn down)."""
        failures: list[str] = []

        async def one(sandbox: Sandbox) -> None:
            try:
                await self.teardown(sandbox)
            except Exception as e:  # noqa: BLE001 - collected and reported below
                failures.append(f"{sandbox.id}: {e}")

        async def every() -> None:
            async with asyncio.TaskGroup() as tg:
                for sandbox in list(self.live.values()):
                    tg.create_task(one(sandbox))

        await shielded(every())
        if failures:
            raise SandboxError("teardown failed for " + "; ".join(failures))

    # -- orphans -------------------------------------------------------------------------

    async def reap_orphans(self, adopt: Iterable[str] = ()) -> list[str]:
        """Tear down sandboxes whose owner process is dead; those in `adopt` become ours.

        Returns the ids torn down. Problems (an uninstalled provider, a failed teardown) are
        kept in `reap_errors` and the lease stays for a later attempt; this never raises.
        """
        try:
            names = os.listdir(self.lease_dir)
        except FileNotFoundError:
            return []
        if not names:
            return []
        leases.discard_dead_temps(self.lease_dir, names)
        adopt = set(adopt)
        reaped: list[str] = []
        for name in sorted(names):
            path = self.lease_dir / name
            if name.startswith(leases.PENDING):
                await self._reap_pending(path)
                continue
            if leases.CLAIM in name:
                if not leases.stale_claim(name):
                    continue
            elif not name.endswith(leases.SUFFIX) or name.startswith("."):
                continue
            lease = leases.read(path)
            if lease is None:
                continue
            sandbox_id = lease.get("sandbox_id") or name.split(leases.CLAIM)[0].removesuffix(
                leases.SUFFIX
            )
            if sandbox_id in adopt:
                self._adopt(sandbox_id, lease.get("provider"), lease.get("describe", {}), lease)
                continue
            if leases.CLAIM not in name and leases.owner_alive(lease):
                continue
            claimed = leases.claim(path)
            if claimed is None:
                continue
            lease = leases.read(claimed) or lease
            if leases.CLAIM not in name and leases.owner_alive(lease):
                # taken over (a resume) between our read and the claim: not an orphan
                leases.unclaim(claimed, path)
                continue
            if await self._reap_one(sandbox_id, lease, claimed):
                reaped.append(sandbox_id)
        return reaped

    async def prune(self, providers: Iterable[str] | None = None) -> list[str]:
        """`reap_orphans`, then the own label-based `reap()` of `providers` (every installed
        one by default): what a lease never recorded. Problems land in `reap_errors`."""
        reaped = list(await self.reap_orphans())
        names = self.plugins.sandbox_providers.names() if providers is None else providers
        for name in list(names):
            try:
                for sandbox_id in await self.provider(name).reap():
                    if sandbox_id not in reaped:
                        reaped.append(sandbox_id)
            except Exception as e:  # noqa: BLE001 - one broken provider must not stop the others
                self.reap_errors.append(f"provider {name!r}: {e}")
        return reaped

    async def reap_used(self) -> list[str]:
        """`prune` limited to the providers this manager used (after a resume: also what the
        killed run created but never leased, and what it took over that no trial adopted)."""
        reaped = await self._reap_taken()
        return [*reaped, *(i for i in await self.prune(list(self._providers)) if i not in reaped)]

    def lease_rows(self) -> list[dict[str, Any]]:
        """Every sandbox with a lease: id, provider, run, task instance, owner and liveness."""
        rows: list[dict[str, Any]] = []
        try:
            names = sorted(os.listdir(self.lease_dir))
        except FileNotFoundError:
            return rows
        for name in names:
            if not name.endswith(leases.SUFFIX) or name.startswith((".", leases.PENDING)):
                continue
            if leases.CLAIM in name:
                continue
            lease = leases.read(self.lease_dir / name)
            if lease is None:
                continue
            rows.append(
                {
                    "id": lease.get("sandbox_id") or name.removesuffix(leases.SUFFIX),
                    "provider": lease.get("provider"),
                    "run_id": lease.get("run_id"),
                    "task_instance_id": lease.get("task_instance_id"),
                    "owner_pid": lease.get("owner_pid"),
                    "owner_alive": leases.owner_alive(lease),
                }
            )
        return rows

    async def _reap_pending(self, path: Path) -> None:
        """A creation its owner never finished recording: if the owner died, let the
        provider reap by its own labels whatever that creation left behind."""
        lease = leases.read(path)
        if lease is None or leases.owner_alive(lease):
            return
        name = lease.get("provider") or ""
        try:
            await self.provider(name).reap()
        except Exception as e:  # noqa: BLE001 - kept for a later attempt
            self.reap_errors.append(f"provider {name!r}: reaping an unfinished creation: {e}")
            return
        path.unlink(missing_ok=True)

    async def _reap_one(self, sandbox_id: str, lease: dict[str, Any], claimed: Path) -> bool:
        try:
            provider = self.provider(lease.get("provider") or "")
        except (PluginError, AgentEnvError) as e:
            self.reap_errors.append(f"sandbox {sandbox_id}: {e}")
            os.replace(claimed, self._lease_path(sandbox_id))
            return False
        try:
            sandbox = await provider.connect(lease.get("describe") or {})
        except SandboxError:
            claimed.unlink(missing_ok=True)  # already gone
            return True
        try:
            await shielded(sandbox.teardown())
        except Exception as e:  # noqa: BLE001 - reported, lease kept for a later attempt
            self.reap_errors.append(f"sandbox {sandbox_id}: teardown failed: {e}")
            os.replace(claimed, self._lease_path(sandbox_id))
            return False
        claimed.unlink(missing_ok=True)
        log.info("reaped orphaned sandbox %s (owner pid %s)", sandbox_id, lease.get("owner_pid"))
        return True

    def _adopt(
        self,
        sandbox_id: str,
        provider: str | None,
        describe: Mapping[str, Any],
        lease: dict[str, Any] | None = None,
    ) -> None:
        path = self._lease_path(sandbox_id)
        current = lease or leases.read(path) or {}
        leases.write(
            path,
            {
                **current,
                "sandbox_id": sandbox_id,
                "provider": provider or current.get("provider"),
                "describe": dict(describe) or current.get("describe", {}),
                **leases.me(),
            },
        )

    def _lease_path(self, sandbox_id: str) -> Path:
        return self.lease_dir / f"{sandbox_id}{leases.SUFFIX}"


def _names(lease: Mapping[str, Any], run_id: str | None, instance_ids: set[str]) -> bool:
    return (run_id is not None and lease.get("run_id") == run_id) or (
        lease.get("task_instance_id") in instance_ids
    )


def reap_orphans_now(
    home: Path | None = None, plugins: Any = None, config: Any = None
) -> tuple[list[str], list[str]]:
    """For the CLI, before any command runs (outside an event loop): returns `(reaped ids,
    problems)`. With no lease it is one `listdir` and loads neither plugins nor config."""
    from agent_env.paths import home as default_home

    home = Path(home) if home is not None else default_home()
    if not leases.has_leases(home):
        return [], []
    if plugins is None:
        from agent_env.plugins import get_plugin_manager

        plugins = get_plugin_manager()
    if config is None:
        from agent_env.config import load_config

        config = load_config(plugins=plugins)
    manager = SandboxManager(plugins, config, home)
    reaped = asyncio.run(manager.reap_orphans())
    return reaped, list(manager.reap_errors)
