"""Warm pools: deployed task instances reused across episodes (an OpenEnv session's resets,
`agent-env run --trials N --pool M`).

A task's *deploy steps* (its `deploy_env` steps that depend only on one another) run once in a
held instance (`TaskInstance.hold`); each episode is still a task instance of its own, with its
own record, that `adopt`s a held instance instead of running those steps (its record's
`reused` names which one) and runs the rest (agent, prompts, verifiers) as usual. When the
episode ends the held instance is recycled in the background: every resource that keeps
per-episode state is `recycle`d (the run's gateway: each env's `data/reset`, the episode's
tokens revoked, its call log, clock and tool rules cleared), then it waits idle for the next
episode. A failed recycle retires the instance (torn down, never handed out again); after
`OFF_AFTER_FAILURES` failed deploys or recycles in a row the task's pool turns itself off and
its episodes deploy as without a pool.

Each pool fills ahead to `size` idle instances and refills in the background, but never while
the machine has less than `min_free_mb` MiB available (MemAvailable in /proc/meminfo): the
memory bound. An episode that finds no idle instance waits for one being filled or recycled,
or deploys one at once. An instance is lent to one episode at a time. `TaskPools.running()`
tears every held instance down when it ends; a crash leaves them to the sandbox leases.

    async with pools.running():
        request = RunRequest(..., resources={WARM_POOL: pools})
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import anyio
import attrs

from agent_env.bundles.dag import resolve_dependencies
from agent_env.engine.instance import WARM_POOL, TaskInstance
from agent_env.engine.services import Reporter
from agent_env.errors import AgentEnvError

#: Step types a warm instance runs once (the rest run in every episode, which re-seeds the envs).
DEPLOY_STEPS = frozenset({"deploy_env"})
#: Step types whose effects a data/reset does not undo: a task with one is never pooled.
NOT_REUSABLE = frozenset({"teardown_sandboxes", "register_env_triggers"})
DEFAULT_MIN_FREE_MB = 512
OFF_AFTER_FAILURES = 3
RECYCLE_TIMEOUT = 60.0
DEFAULT_REUSE = "reset"

log = logging.getLogger("agent_env.pool")

__all__ = ["WARM_POOL", "TaskPools", "deploy_steps", "memory_available_mb"]


def deploy_steps(steps: Sequence[Any], reuse: str | None) -> tuple[list[Any], str | None]:
    """(the steps a warm instance of a task with `steps` runs, why the task is not pooled or
    None). `reuse` is its bundle's `reuse` (None: `DEFAULT_REUSE`)."""
    if (reuse or DEFAULT_REUSE) == "redeploy":
        return [], "its bundle says reuse = 'redeploy'"
    refused = sorted({s.type for s in steps if s.type in NOT_REUSABLE})
    if refused:
        return [], f"a data/reset does not undo its {', '.join(refused)} step(s)"
    deps = resolve_dependencies(list(steps))
    warm: list[Any] = []
    ids: set[str] = set()
    for step in steps:
        if step.type in DEPLOY_STEPS and set(deps[step.id]) <= ids:
            warm.append(step)
            ids.add(step.id)
    if not warm:
        return [], "it deploys no env before its other steps"
    return warm, None


def memory_available_mb() -> float | None:
    """MemAvailable from /proc/meminfo in MiB (None where there is no such file)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


@attrs.define(eq=False)
class Warm:
    """A held instance and how many episodes it served."""

    held: TaskInstance
    episodes: int = 0


class TaskPool:
    """The warm instances of one task (one set of deploy steps)."""

    def __init__(
        self,
        pools: TaskPools,
        bundle_name: str,
        task: Any,
        steps: list[Any],
        services: Any,
    ):
        self.pools = pools
        self.bundle_name = bundle_name
        self.name = task.name
        self.task = task
        self.steps = steps
        self.services = attrs.evolve(services, reporter=Reporter(), keep=False)
        self.idle: list[Warm] = []
        self.lent: set[Warm] = set()
        self.filling = 0
        self.recycling = 0
        self.waiting = 0
        self.failures_in_a_row = 0
        self.off: str | None = None
        self._changed = anyio.Event()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def take(self) -> Warm | None:
        """An idle instance (lent until `give_back`), one being readied, or one deployed now;
        None when the pool is off or the deploy failed (the episode then deploys itself)."""
        while self.off is None and not self.pools.closed:
            if self.idle:
                warm = self.idle.pop()
                self.lent.add(warm)
                self.refill()
                return warm
            if self.filling + self.recycling > self.waiting:
                self.waiting += 1
                try:
                    await self._changed.wait()
                finally:
                    self.waiting -= 1
                continue
            made = await self._deploy()
            if made is None:
                return None
            self.lent.add(made)
            self.refill()
            return made
        return None

    async def give_back(self, warm: Warm, *, retire: str | None) -> None:
        self.lent.discard(warm)
        if retire is not None:
            self.pools.stats["retired"] += 1
            self.pools.notice(f"pool {self.name}: warm instance {warm.held.id} retired: {retire}")
        if retire is not None or self.pools.closed or self.off is not None:
            if self.pools.closed:  # no background left: tear it down now
                await self._drop(warm)
            else:
                self.pools.background(self._drop, warm)
            self.refill()
            return
        self.recycling += 1
        self.pools.background(self._recycle, warm)

    def held(self) -> int:
        """Instances held: idle, lent, being filled or recycled."""
        return len(self.idle) + len(self.lent) + self.filling + self.recycling

    def refill(self) -> None:
        """Start deploys until the pool holds `size` instances (memory permitting)."""
        while (
            self.off is None
            and not self.pools.closed
            and self.held() < self.pools.size
            and self.pools.memory_ok()
        ):
            self.filling += 1
            self.pools.background(self._fill)

    async def _fill(self) -> None:
        try:
            warm = await self._deploy()
        finally:
            self.filling -= 1
        if warm is not None:
            if self.pools.closed:
                await self._drop(warm)
            else:
                self.idle.append(warm)
        self._notify()

    async def _deploy(self) -> Warm | None:
        held = await TaskInstance.warm(
            self.services, task=self.task, steps=self.steps, pool_id=self.pools.id
        )
        try:
            await held.hold()
        except AgentEnvError as e:
            self._failed("failed_deploys", f"a warm instance did not deploy: {e}")
            return None
        try:
            marked = await _call_each(held, "mark_initial")
        except BaseException as e:
            await held.drop()
            if not isinstance(e, Exception):
                raise
            self._failed(
                "failed_deploys",
                f"warm instance {held.id} did not take its first reset: {type(e).__name__}: {e}",
            )
            return None
        no_reset = sorted({name for names in marked for name in names or ()})
        if no_reset and self.pools.reuse.get(self.bundle_name) != "reset":
            await held.drop()
            self.off = (
                f"env(s) {', '.join(no_reset)} serve no data/reset; if they keep no state "
                'between episodes, say reuse = "reset" in the bundle\'s bundle.toml'
            )
            self.pools.notice(f"pool {self.name}: off: {self.off}")
            self._notify()
            return None
        self.pools.stats["deployed"] += 1
        self.failures_in_a_row = 0
        return Warm(held)

    async def _recycle(self, warm: Warm) -> None:
        held = warm.held
        kept = False
        try:
            with anyio.fail_after(RECYCLE_TIMEOUT):
                gone = await held.sandboxes.vanished()
                if gone:
                    raise AgentEnvError("; ".join(gone))
                await _call_each(held, "recycle")
        except Exception as e:  # any failure: the instance is dirty, never lent again
            self.pools.stats["retired"] += 1
            self._failed(
                "failed_resets",
                f"warm instance {held.id} retired, its reset failed: {type(e).__name__}: {e}",
            )
        else:
            self.failures_in_a_row = 0
            self.pools.stats["resets"] += 1
            # one deployed on demand beyond `size` goes once it is not needed
            if not self.pools.closed and self.off is None and self.held() <= self.pools.size:
                self.idle.append(warm)
                kept = True
        finally:
            self.recycling -= 1
            self._notify()
            if not kept:  # retired, or the pools closed (also mid-reset): torn down
                await self._drop(warm)
                self.refill()

    def _failed(self, counter: str, line: str) -> None:
        """Count a failed deploy or reset; after `OFF_AFTER_FAILURES` in a row, the pool is off."""
        self.pools.stats[counter] += 1
        self.failures_in_a_row += 1
        self.pools.notice(f"pool {self.name}: {line}")
        if self.failures_in_a_row >= OFF_AFTER_FAILURES and self.off is None:
            self.off = f"{self.failures_in_a_row} deploys or resets in a row failed"
            self.pools.notice(
                f"pool {self.name}: off ({self.off}); its episodes deploy their own envs"
            )
        self._notify()

    async def _drop(self, warm: Warm) -> None:
        await warm.held.drop()

    async def close(self) -> None:
        idle, self.idle = self.idle, []
        self._notify()
        async with anyio.create_task_group() as tg:
            for warm in idle:
                tg.start_soon(self._drop, warm)


class TaskPools:
    """The warm pools of one front end (an OpenEnv server, a run), one per task; the instance
    resource `WARM_POOL` its task instances start with. `size`: idle instances each pool keeps
    ready; `reuse`: bundle name -> its `bundle.toml` `reuse`."""

    def __init__(
        self,
        size: int,
        *,
        reuse: Mapping[str, str | None] | None = None,
        min_free_mb: float = DEFAULT_MIN_FREE_MB,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        from agent_env.engine.records import new_id

        if size < 1:
            raise ValueError(f"a pool holds at least 1 instance, not {size!r}")
        self.id = new_id("pool")
        self.size = size
        self.reuse = dict(reuse or {})
        self.min_free_mb = min_free_mb
        self._notice = notice
        self.pools: dict[tuple[str, str, str], TaskPool] = {}
        self.refused: dict[tuple[str, str], str] = {}
        self.closed = False
        self._tg: Any = None
        self.stats = {
            "deployed": 0,
            "reused": 0,
            "resets": 0,
            "failed_resets": 0,
            "failed_deploys": 0,
            "retired": 0,
        }

    def notice(self, line: str) -> None:
        (self._notice or log.warning)(line)

    def memory_ok(self) -> bool:
        available = memory_available_mb()
        return available is None or available >= self.min_free_mb

    def background(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._tg is None:
            raise RuntimeError("the warm pools are not running (use `async with pools.running()`)")
        self._tg.start_soon(fn, *args)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[TaskPools]:
        """Run the pools' background fills and resets; at the end tear every idle instance
        down (lent ones go when their episode gives them back)."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                try:
                    yield self
                finally:
                    self.closed = True
                    tg.cancel_scope.cancel()
        finally:
            self._tg = None
            with anyio.CancelScope(shield=True):
                async with anyio.create_task_group() as closing:
                    for pool in self.pools.values():
                        closing.start_soon(pool.close)

    def pool_for(
        self, bundle_name: str, task: Any, steps: Sequence[Any], services: Any
    ) -> TaskPool | None:
        """The pool of `task` (as `steps`, seeds applied), made on first use; None when the
        task is not pooled (said once, why)."""
        warm, why = deploy_steps(steps, self.reuse.get(bundle_name))
        if why is not None:
            if (bundle_name, task.name) not in self.refused:
                self.refused[bundle_name, task.name] = why
                self.notice(f"task {task.name!r} deploys its own envs each episode: {why}")
            return None
        key = (bundle_name, task.name, "\0".join(repr(s) for s in warm))
        pool = self.pools.get(key)
        if pool is None:
            pool = self.pools[key] = TaskPool(self, bundle_name, task, warm, services)
        return pool

    def fill(self, bundle_name: str, task: Any, services: Any) -> None:
        """Fill `task`'s pool ahead of its first episode."""
        pool = self.pool_for(bundle_name, task, task.steps, services)
        if pool is not None:
            pool.refill()

    # ---- the WARM_POOL protocol (agent_env.engine.instance) ------------------------------

    async def acquire(self, instance: TaskInstance) -> Any:
        """Lend `instance` a warm instance of its task (it `adopt`s it); None to deploy."""
        if self.closed:
            return None
        bundle_name = str(instance.live.bundle.get("name") or "")
        task = _Task(instance.task_name, instance.task_id, instance.steps)
        pool = self.pool_for(bundle_name, task, instance.steps, instance.run_services)
        if pool is None:
            return None
        warm = await pool.take()
        if warm is None:
            return None
        warm.episodes += 1
        self.stats["reused"] += 1
        instance.adopt(
            warm.held,
            {
                "instance": warm.held.id,
                "episode": warm.episodes,
                "steps": sorted(warm.held.done),
            },
        )
        return (pool, warm)

    async def release(self, lent: Any, instance: TaskInstance) -> None:
        """Take back what `acquire` lent `instance`: recycled in the background, or retired
        when the instance failed for an infrastructure reason (a sandbox gone, Docker down)."""
        pool, warm = lent
        failure = instance.failure or {}
        retire = None
        if failure.get("class") == "infrastructure":
            retire = f"its episode {instance.id} failed: {failure.get('message')}"
        await pool.give_back(warm, retire=retire)

    def describe(self) -> dict[str, Any]:
        """Counts for reports and benchmarks: held, idle, lent, plus the running totals."""
        return {
            "size": self.size,
            "tasks": len(self.pools),
            "idle": sum(len(p.idle) for p in self.pools.values()),
            "lent": sum(len(p.lent) for p in self.pools.values()),
            **self.stats,
        }


async def _call_each(held: TaskInstance, method: str) -> list[Any]:
    """Call `method()` (sync or async) on each of `held`'s resources that has one, and return
    what they returned: how a resource with per-episode state takes part (`mark_initial` once
    deployed, returning the envs it cannot reset; `recycle` between episodes; the run's
    gateway has both)."""
    out = []
    for resource in held.sandboxes.resources.values():
        fn = getattr(resource, method, None)
        if callable(fn):
            done = fn()
            out.append(await done if inspect.isawaitable(done) else done)
    return out


@attrs.frozen
class _Task:
    """What a pool needs of a task: its name and its (seeded) steps."""

    name: str
    id: str | None
    steps: Sequence[Any]
