"""One task instance: the DAG scheduler, journaling, retry rollback, resume and teardown.

The scheduler starts every step whose dependencies are done, concurrently, in one task group.
A fatal failure stops new steps and lets running ones finish; a tolerated one counts as done.
A step with `retry_config` that fails waits for the running steps, rolls the span back (a
rollback journal entry, then the state is replayed without it) and runs the span again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any

import attrs

from agent_env.aio import shielded
from agent_env.bundles.dag import dependents, resolve_dependencies
from agent_env.engine.context import EngineStepContext
from agent_env.engine.journal import Journal
from agent_env.engine.outcome import decide, doubtful, garbage_failure, step_failure_class
from agent_env.engine.outcome import failure_class as classify_failure
from agent_env.engine.records import (
    COLLECTION,
    STEP_RECORD_FIELDS,
    STEP_RECORD_KEY,
    STEP_REWARDS,
    Status,
    TaskInstanceRecord,
    TaskRef,
    now_iso,
    owner,
)
from agent_env.engine.sandboxes import InstanceSandboxes
from agent_env.engine.services import EngineServices
from agent_env.engine.state import live_entries, replay, unfinished_starts
from agent_env.errors import AgentEnvError, SandboxError, StepFailed, StoreError
from agent_env.resources import InstanceKey

#: Seconds a teardown or final record write may take once the run is over or cancelled.
CLEANUP_TIMEOUT = 60.0
MAX_LOG_LINES = 500
#: The instance resource of a warm pool (`agent_env.runs.pool.TaskPools`): an instance that
#: starts with one asks it for a deployed instance of its task (`await pool.acquire(self)`,
#: which `adopt`s one or returns None) and hands it back at its end (`await pool.release(...)`).
WARM_POOL: InstanceKey[Any] = InstanceKey("engine.warm-pool")
#: The id prefix of a warm pool's held instances (`TaskInstance.warm`).
WARM_PREFIX = "warm"


def is_warm(instance_id: str) -> bool:
    """Whether `instance_id` names a warm pool's held instance: what it starts (the run's
    gateway) serves every episode that adopts it, from the pool's event loop."""
    return instance_id.startswith(WARM_PREFIX + "-")


class TaskInstance:
    """Runs one task's steps as a DAG; its record lives in `task_instances/<id>`.

    `live` is the record being built (a `TaskInstanceRecord`); `record` is the stored form
    (the redacted JSON document last written, what hooks, runners and the CLI get)."""

    def __init__(
        self,
        services: EngineServices,
        steps: Sequence[Any],
        record: TaskInstanceRecord,
        journal: Journal,
        entries: Sequence[dict[str, Any]] = (),
    ):
        # the secrets this instance adds (tokens, env secrets) stay with it (agent_env.redact),
        # unless --keep keeps its sandboxes, and their logs, past its end
        #: The run's services, as given (a warm pool deploys with them).
        self.run_services = services
        if not services.keep:
            services = attrs.evolve(services, redactor=services.redactor.child())
        self.services = services
        self.steps = list(steps)
        self.by_id = {s.id: s for s in self.steps}
        self.deps = resolve_dependencies(self.steps)
        self.dependents_of: dict[str, list[str]] = {s: [] for s in self.deps}
        for sid, wants in self.deps.items():
            for w in wants:
                self.dependents_of[w].append(sid)
        self.live = record
        self._stored: dict[str, Any] | None = None
        self.id: str = record.id
        #: Whether this is a warm pool's held instance (`is_warm`).
        self.in_warm_pool = is_warm(self.id)
        self.run_id: str = record.run_id
        self.task_id: str | None = record.task.id
        self.task_name: str = record.task.name
        self.journal = journal
        self.entries = list(entries)
        self.state: dict[str, Any] = {}
        self.done: set[str] = set()
        self.step_info: dict[str, dict[str, Any]] = {
            s.id: {"status": "pending", "attempts": 0} for s in self.steps
        }
        self.sandboxes = InstanceSandboxes(
            services.sandboxes,
            labels={"run_id": self.run_id, "task_instance_id": self.id},
            keep=services.keep,
            log=self.log,
            default_provider=services.default_provider,
            keep_logs=self._keep_logs,
        )
        self.failure: dict[str, Any] | None = None
        #: The process that ran this instance before a resume (whose leftovers are fenced).
        self.previous_owner: Mapping[str, Any] | None = None
        self.cancelled = False
        self.logs: list[str] = list(record.log)
        #: The instance whose deploy steps made what this one runs on: itself, or the warm
        #: instance it adopted (env secrets are derived from it).
        self.origin_id: str = self.id

    async def _keep_logs(self, sandbox_name: str, sandbox: Any) -> None:
        """Keep the output of the sandbox's servers and agents with this trial."""
        from agent_env.engine import trial_logs

        await trial_logs.save(
            self.services.stores.objects,
            self.id,
            sandbox_name,
            sandbox,
            self.services.redactor,
        )

    # ---- construction -------------------------------------------------------------------

    @classmethod
    async def create(
        cls,
        services: EngineServices,
        *,
        task: Any,
        instance_id: str,
        run_id: str,
        bundle: Mapping[str, Any],
        task_version: int | None = None,
        trial: int = 0,
        seed: Any = None,
        steps: Sequence[Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        write: bool = True,
    ) -> TaskInstance:
        """A new instance of `task` (a bundle `Task`), its record written as `pending` (unless
        `write` is false: a trial about to run at once). `steps` replaces the task's steps (e.g.
        seed placeholders substituted); `meta` adds fields (agent, model, attempt...)."""
        steps = list(task.steps if steps is None else steps)
        fields = {
            "id": instance_id,
            "run_id": run_id,
            "task": TaskRef(name=task.name, id=task.id, version=task_version),
            "bundle": dict(bundle),
            "trial": trial,
            "seed": seed,
            "steps": {s.id: {"status": "pending", "attempts": 0} for s in steps},
            "created_at": now_iso(),
            "owner": owner(),
        }
        record = TaskInstanceRecord.new(**{**fields, **dict(meta or {})})
        instance = cls(services, steps, record, Journal(services.stores.documents, instance_id))
        if write:
            await instance._write_record()
        return instance

    @classmethod
    async def load(
        cls,
        services: EngineServices,
        record: Mapping[str, Any] | TaskInstanceRecord,
        steps: Sequence[Any],
    ) -> TaskInstance:
        """An interrupted instance (its stored record, or the model of it), to be resumed: its
        journal is read, nothing is run yet."""
        if not isinstance(record, TaskInstanceRecord):
            record = TaskInstanceRecord.from_dict(record)
        previous_owner = record.owner
        record = record.replace(resumes=record.resumes + 1)
        journal, entries = await Journal.open(services.stores.documents, record.id)
        instance = cls(services, steps, record, journal, entries)
        instance.previous_owner = previous_owner
        return instance

    @property
    def record(self) -> dict[str, Any]:
        """The stored record: the redacted document last written (before the first write, the
        record as it would be stored, unredacted and sharing its nested values with `live`)."""
        return self._stored if self._stored is not None else self.live.to_dict()

    # ---- running ------------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        """Run (or resume) to the end; always tears down and writes the final record."""
        started = time.perf_counter()
        live = self.live
        live.status = Status.RUNNING
        live.started_at = live.started_at or now_iso()
        live.owner = owner()
        pool = self.sandboxes.resources.get(WARM_POOL) if not self.entries else None
        warm: Any = None
        try:
            await self._write_record()
            if self.entries:
                await self._restore()
            if pool is not None:
                warm = await pool.acquire(self)
            await self._schedule()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        except (SandboxError, StoreError) as exc:
            self.failure = self.failure or {
                "step": None,
                "message": str(exc),
                "class": "infrastructure",
            }
        except AgentEnvError as exc:
            self.failure = self.failure or {"step": None, "message": str(exc), "class": "env"}
        except Exception as exc:  # an engine or store fault fails this instance, not the run
            message = _describe(exc)
            self.failure = self.failure or {
                "step": None,
                "message": message,
                "class": "infrastructure",
            }
        finally:
            await shielded(self._end(pool, warm, started), timeout=CLEANUP_TIMEOUT)
        return self.record

    async def _end(self, pool: Any, warm: Any, started: float) -> None:
        """`run`'s clean-up: resources closed, sandboxes torn down (kept with `--keep`), the
        warm instance given back, the final record written."""
        await self.sandboxes.close_resources()
        if not self.services.keep:
            await self.sandboxes.teardown_owned()
        else:  # --keep: they live on till the run ends; their output so far is kept
            await self.sandboxes.save_logs()
        if warm is not None and pool is not None:
            await pool.release(warm, self)
        await self._finish(time.perf_counter() - started)
        if not self.services.keep:
            self.services.redactor.close()

    # ---- warm reuse (agent_env.runs.pool) -------------------------------------------------

    @classmethod
    async def warm(
        cls, services: EngineServices, *, task: Any, steps: Sequence[Any], pool_id: str
    ) -> TaskInstance:
        """A warm pool's instance of `task` that runs only `steps` (its deploy steps) and is
        `hold`: not a trial, so it writes no record; its id starts `warm-`."""
        from agent_env.engine.records import new_id

        return await cls.create(
            services,
            task=task,
            instance_id=new_id(WARM_PREFIX),
            run_id=pool_id,
            bundle={},
            steps=steps,
            write=False,
        )

    async def hold(self) -> None:
        """Run this instance's steps (a task's deploy steps, for a warm pool) and keep what
        they deployed live for instances that `adopt` it, until `drop`; no record is written.
        On a failure everything is torn down and `AgentEnvError` says which step failed."""
        try:
            await self._schedule()
        except BaseException:
            await self.drop()
            raise
        if self.failure is not None:
            failure = self.failure
            await self.drop()
            raise AgentEnvError(f"step {failure.get('step')!r}: {failure.get('message')}")

    async def drop(self) -> None:
        """Tear down what `hold` deployed (its resources, then its sandboxes)."""
        await shielded(self._drop(), timeout=CLEANUP_TIMEOUT)

    async def _drop(self) -> None:
        await self.sandboxes.close_resources()
        await self.sandboxes.teardown_owned()
        self.services.redactor.close()

    def adopt(self, held: TaskInstance, reused: Mapping[str, Any]) -> None:
        """Start from `held`'s completed steps instead of running them: their state, and the
        sandboxes and resources they started, shared (never owned: this instance's end leaves
        them to `held`). `reused` is recorded as the record's `reused`."""
        from agent_env.engine.state import json_copy

        self.state = json_copy(held.state)
        for sid in held.done:
            if sid in self.step_info:
                self.done.add(sid)
                self.step_info[sid] = {"status": "reused", "attempts": 0, "from": held.id}
        self.sandboxes.live.update(held.sandboxes.live)
        self.sandboxes.resources.share(held.sandboxes.resources)
        self.services.redactor.extend(held.services.redactor)
        self.origin_id = held.id
        self.live.reused = dict(reused)
        self.log(None, f"reused warm instance {held.id} (its steps {', '.join(sorted(held.done))})")

    async def _schedule(self) -> None:
        ended: asyncio.Queue[tuple[str, str | None, bool, str]] = asyncio.Queue()
        running: set[str] = set()
        retry_span: list[str] | None = None
        waiting = self._waiting_counts()
        ready = [s for s in self.deps if s not in self.done and waiting[s] == 0]
        async with asyncio.TaskGroup() as tg:
            while True:
                if self.failure is None and retry_span is None:
                    for sid in ready:
                        running.add(sid)
                        tg.create_task(self._run_step(self.by_id[sid], ended))
                    ready = []
                if not running:
                    if retry_span is not None and self.failure is None:
                        await self._rollback(retry_span, reason="retry")
                        retry_span = None
                        waiting = self._waiting_counts()
                        ready = [s for s in self.deps if s not in self.done and waiting[s] == 0]
                        continue
                    break
                sid, error, fatal, failure_class = await ended.get()
                running.discard(sid)
                span = self._retry_span(sid) if error is not None else None
                if span is not None:
                    retry_span = sorted(
                        set(retry_span or ()) | set(span), key=list(self.deps).index
                    )
                elif error is None or not fatal:
                    self.done.add(sid)
                    for nxt in self.dependents_of[sid]:
                        waiting[nxt] -= 1
                        if waiting[nxt] == 0 and nxt not in self.done:
                            ready.append(nxt)
                elif self.failure is None:
                    self.failure = {"step": sid, "message": error, "class": failure_class}

    def _waiting_counts(self) -> dict[str, int]:
        return {s: sum(1 for d in wants if d not in self.done) for s, wants in self.deps.items()}

    def _retry_span(self, sid: str) -> list[str] | None:
        step = self.by_id[sid]
        rc = step.retry_config
        if rc is None or self.step_info[sid]["attempts"] > rc.max_retries:
            return None
        root = rc.retry_from_step_id if rc.retry_from_step_id in self.deps else sid
        span = dependents(self.deps, root)
        return span if sid in span else [*span, sid]

    async def _run_step(self, step: Any, ended: asyncio.Queue[Any]) -> None:
        sid = step.id
        info = self.step_info[sid]
        info["attempts"] += 1
        info["status"] = "running"
        info["started_at"] = now_iso()
        info.pop("error", None)
        reporter = self.services.reporter
        reporter.step_started(self, sid)
        if not rerunnable(step):  # a resume must know it began, to never run it twice
            start = {"kind": "start", "step_id": sid, "attempt": info["attempts"]}
            self.entries.append(await shielded(self.journal.append(start)))
        ctx = EngineStepContext(self, sid)
        t0 = time.perf_counter()
        error: str | None = None
        verifier = bool(getattr(type(step), "is_verifier", False))
        failure_class = step_failure_class(None, verifier=verifier)
        try:
            wrappers = [w for w in self.services.plugins.step_wrappers(step, ctx) if w is not None]
            if wrappers:
                async with AsyncExitStack() as stack:
                    for wrapper in wrappers:
                        await stack.enter_async_context(wrapper)
                    await step.execute(ctx)
            else:
                await step.execute(ctx)
        except asyncio.CancelledError:
            info["status"] = "cancelled"
            raise
        except StepFailed as exc:
            error = exc.reason if exc.step_id == sid else str(exc)
            failure_class = step_failure_class(exc.failure_class, verifier=verifier)
            if exc.failure_class == "error" and _infrastructure_cause(exc):
                failure_class = "infrastructure"
        except (SandboxError, StoreError) as exc:
            error = f"{type(exc).__name__}: {exc}"
            failure_class = "infrastructure"
        except TimeoutError as exc:
            error = f"timed out: {exc}" if str(exc) else "timed out"
            failure_class = "timeout"
        except Exception as exc:  # a step's bug must fail the step, not the engine
            error = f"{type(exc).__name__}: {exc}"
        gone = await self.sandboxes.vanished() if doubtful(error, failure_class, ctx.ops) else []
        if gone:  # not the agent's or the env's doing: infrastructure, and the trial stops here
            error = "; ".join(gone) + (f" (the step then failed: {error})" if error else "")
            failure_class = "infrastructure"
        seconds = time.perf_counter() - t0
        fatal = bool(step.fail_task_on_error) or bool(gone)
        status = "completed" if error is None else ("failed" if fatal else "tolerated")
        info.update(status=status, finished_at=now_iso(), seconds=round(seconds, 6))
        if error is not None:
            info["error"] = error
        entry = {
            "kind": "step",
            "step_id": sid,
            "type": step.type,
            "attempt": info["attempts"],
            "status": status,
            "error": error,
            "ops": ctx.ops,
            "started_at": info["started_at"],
            "finished_at": info["finished_at"],
            "seconds": info["seconds"],
        }
        doc = await shielded(self.journal.append(self.services.redactor(entry)))
        self.entries.append(doc)
        shown = None if error is None else self.services.redactor(error)
        reporter.step_finished(self, sid, status, seconds, shown)
        ended.put_nowait((sid, error, fatal, failure_class))

    async def _rollback(self, span: Sequence[str], *, reason: str) -> None:
        """Forget `span` (journal a rollback, replay without it) and tear down its sandboxes."""
        doc = await self.journal.append({"kind": "rollback", "steps": list(span), "reason": reason})
        self.entries.append(doc)
        self.done.difference_update(span)
        for sid in span:
            if self.step_info[sid]["status"] != "pending":
                self.step_info[sid]["status"] = "rolled_back"
        self.state = replay(self.entries)
        await self.sandboxes.drop_unrecorded(self.state.get("sandboxes") or {})

    async def _restore(self) -> None:
        """Rebuild the state from the journal and reconnect the sandboxes completed steps made.
        Steps that must run again (failed before the interruption, or whose sandbox is gone) are
        rolled back and listed in the record's `restarts`; when one of them, or one that was
        running at the interruption, is not re-runnable, the trial fails (`_refuse_rerun`)."""
        interrupted = [s for s in unfinished_starts(self.entries) if s in self.by_id]
        if interrupted:
            self._refuse_rerun(interrupted[0], "was running when the run was interrupted")
            self.state = replay(self.entries)
            return
        fatal = []
        for entry in live_entries(self.entries):
            sid = entry["step_id"]
            if sid not in self.by_id:
                raise AgentEnvError(
                    f"task instance {self.id!r}: the journal names step {sid!r} that the task "
                    "no longer has; the task changed since the run started"
                )
            info = self.step_info[sid]
            info.update(
                {k: entry.get(k) for k in ("status", "started_at", "finished_at", "seconds")},
                attempts=entry.get("attempt", 1),
            )
            if entry.get("error"):
                info["error"] = entry["error"]
            if entry["status"] == "failed":
                fatal.append(sid)
            else:
                self.done.add(sid)
        if fatal:
            if not self._restart(fatal, "failed before the interruption"):
                self.state = replay(self.entries)
                return
            await self._rollback(fatal, reason="resume after failure")
        self.state = replay(self.entries)
        while True:
            recorded = dict(self.state.get("sandboxes") or {})
            if not recorded:
                return
            broken = await self.sandboxes.reconnect(recorded, dead_owner=self.previous_owner)
            if not broken:
                return
            span: set[str] = set()
            for creator in broken:
                if creator in self.deps:
                    span.update(dependents(self.deps, creator))
            if not span:
                raise SandboxError(f"task instance {self.id!r}: sandboxes gone: {broken}")
            again = sorted(span, key=list(self.deps).index)
            why = f"sandbox(es) made by {', '.join(sorted(broken))} gone after the interruption"
            if not self._restart([s for s in again if s in self.done], why):
                return
            await self._rollback(again, reason="sandbox gone")

    def _restart(self, steps: Sequence[str], reason: str) -> bool:
        """Record in `restarts` that finished `steps` run again on this resume (False, and the
        trial failed, when one of them is not re-runnable)."""
        refused = [s for s in steps if not rerunnable(self.by_id[s])]
        if refused:
            self._refuse_rerun(refused[0], f"would run again ({reason})")
            return False
        if steps:
            entry = {"resume": self.live.resumes, "reason": reason, "steps": list(steps)}
            self.live.restarts = [*(self.live.restarts or []), entry]
        return True

    def _refuse_rerun(self, sid: str, why: str) -> None:
        """Fail the trial as infrastructure instead of running step `sid` a second time; not
        retried (`retry: false`), since a new attempt would run it again as well."""
        self.failure = {
            "step": sid,
            "message": (
                f"step {sid!r} ({self.by_id[sid].type}) {why}, and its type is not re-runnable: "
                "the trial stops rather than run it twice"
            ),
            "class": "infrastructure",
            "retry": False,
        }

    # ---- sandboxes (through the context) -------------------------------------------------

    async def create_sandbox(
        self, ctx: EngineStepContext, name: str, spec: Any, *, provider: str | None
    ) -> Any:
        sandbox, record = await self.sandboxes.create(ctx.step_id, name, spec, provider)
        ctx.set("sandboxes", name, value=record)
        return sandbox

    async def get_sandbox(self, step_id: str, name: str) -> Any:
        return self.sandboxes.get(step_id, name)

    async def teardown_sandbox(self, ctx: EngineStepContext, name: str) -> None:
        await self.sandboxes.release(ctx.step_id, name)
        if name in (self.state.get("sandboxes") or {}):
            ctx.delete("sandboxes", name)

    # ---- records ------------------------------------------------------------------------

    def log(self, step_id: str | None, message: str) -> None:
        message = self.services.redactor(message)
        self.logs.append(f"{step_id}: {message}" if step_id else message)
        del self.logs[:-MAX_LOG_LINES]
        self.services.reporter.log(self, step_id, message)

    async def _write_record(self) -> dict[str, Any]:
        """Store the record (redacted); the redacted copy (the redactor copies every nested
        value, so the stored document shares nothing with the live record)."""
        self.live.steps = self.step_info
        self.live.log = self.logs
        doc = self.services.redactor(self.live.to_dict())
        await self.services.stores.documents.put(COLLECTION, self.id, doc)
        self._stored = doc
        return doc

    def _cost(self) -> dict[str, Any]:
        """Tokens (the prompts' usage), sandbox-seconds and wall time, priced by `[prices]`."""
        from agent_env.costs import Prices, prices_of, trial_cost

        try:
            prices = prices_of(self.services.config)
        except AgentEnvError as exc:  # checked when the run starts; a record is still written
            self.log(None, f"costs not priced: {exc}")
            prices = Prices()
        outputs = [o for o in (self.live.outputs or {}).values() if isinstance(o, dict)]
        return trial_cost(
            [o for o in outputs if "prompt_id" in o],
            self.sandboxes.seconds_by_provider(),
            self.live.seconds,
            model=self.live.model,
            prices=prices,
        )

    async def _finish(self, seconds: float) -> None:
        if not self.cancelled:
            self.failure = self.failure or garbage_failure(self.state)
        status, outcome, scores = decide(
            self.steps, self.state, failure=self.failure, cancelled=self.cancelled
        )
        for info in self.step_info.values():
            if info["status"] in ("pending", "rolled_back"):
                info["status"] = "skipped"
        live = self.live
        reported = self.state.get(STEP_RECORD_KEY) or {}
        for key in STEP_RECORD_FIELDS:
            if reported.get(key) is not None and not getattr(live, key):
                setattr(live, key, reported[key])
        live.status = Status(status)
        live.outcome = outcome
        live.scores = scores
        live.verifiers = self.state.get("verifiers") or {}
        live.failure = self.failure
        live.failure_class = classify_failure(status, self.failure)
        live.outputs = self.state.get("outputs") or {}
        live.step_rewards = self.state.get(STEP_REWARDS) or None
        live.finished_at = now_iso()
        live.seconds = round(float(live.seconds or 0) + seconds, 6)
        live.cost = self._cost()
        doc = None
        try:
            doc = await self._write_record()
        finally:
            if doc is None:
                self._stored = self.services.redactor(live.to_dict())
            final = self.record
            try:
                self.services.plugins.run_finished(TaskInstanceRecord.from_dict(final))
            except Exception as exc:
                self.services.reporter.log(self, None, f"a run_finished hook failed: {exc}")
            self.services.reporter.instance_finished(self, final)


def rerunnable(step: Any) -> bool:
    """Whether `step` may run a second time on a resume (`Step.rerunnable`)."""
    return bool(getattr(type(step), "rerunnable", True))


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def _infrastructure_cause(exc: BaseException) -> bool:
    """Whether a step failure was caused by a sandbox or store error (Docker down, a sandbox
    that vanished): infrastructure, not the task's fault, whatever class the step gave it."""
    seen: set[int] = set()
    cause = _cause_of(exc)
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, (SandboxError, StoreError)):
            return True
        seen.add(id(cause))
        cause = _cause_of(cause)
    return False


def _cause_of(exc: BaseException) -> BaseException | None:
    return exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
