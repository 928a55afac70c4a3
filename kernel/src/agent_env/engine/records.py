"""Run records: `TaskInstanceRecord` (collection `task_instances`, one per task instance) and
`RunRecord` (collection `runs`, one per run), attrs models whose JSON is the stored format (see
`record_model`), the `Status` of an instance, and the ids and owner a record carries. The
outcome rule and the failure classes are `outcome`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar

import attrs

from agent_env.engine.outcome import failure_class
from agent_env.engine.record_model import StoredRecord

COLLECTION = "task_instances"

#: One document per run (collection `runs`): what was asked for and which instances it made.
RUNS = "runs"


class Status(StrEnum):
    """The status of a task instance record (stored as its string value)."""

    PENDING = "pending"
    RUNNING = "running"
    PASSED = "passed"
    SCORED_BELOW = "scored_below"
    UNSCORED = "unscored"
    FAILED = "failed"
    CANCELLED = "cancelled"


def to_status(value: str) -> Status:
    """`value` as a `Status`; ValueError naming the field, with a did-you-mean, otherwise."""
    try:
        return Status(value)
    except ValueError:
        from agent_env.suggest import did_you_mean

        known = [s.value for s in Status]
        raise ValueError(
            f"status: {value!r} is not a status{did_you_mean(str(value), known)}; "
            f"known: {', '.join(known)}"
        ) from None


#: Finished with a verdict from the verifiers: resuming such an instance has nothing to do.
DECIDED = frozenset({Status.PASSED, Status.SCORED_BELOW, Status.UNSCORED})
#: Finished for good: a run resume keeps these trials as they are (infrastructure failures
#: excepted, they are retried by the caller before this is checked).
FINISHED = DECIDED | {Status.FAILED}

#: Record fields a step may report (`ctx.record_fields`); they are journaled in the state
#: under `STEP_RECORD_KEY`, so a resumed instance keeps what its finished steps reported.
STEP_RECORD_FIELDS = ("agent", "model")
STEP_RECORD_KEY = "record"
#: The state key verifiers write per-step rewards under (`[{call_index, score, verifier}]`);
#: the record's `step_rewards` when the instance finishes.
STEP_REWARDS = "step_rewards"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_id(prefix: str) -> str:
    """A short, time-sortable id such as `ti-20261202163512-a1b2c3`."""
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    return f"{prefix}-{stamp}-{os.urandom(3).hex()}"


def slot_id(run_id: str, index: int) -> str:
    """The instance id of trial `index`'s first attempt: `ti-<run stamp>-<index>`."""
    return f"ti-{run_id.removeprefix('run-')}-{index:05d}"


def attempt_id(base: str, attempt: int) -> str:
    """The instance id of retry `attempt` of the trial whose first attempt is `base`."""
    return base if attempt == 0 else f"{base}-r{attempt}"


def owner() -> dict[str, Any]:
    """The running process as a record's `owner`: pid, start time (so a reused pid is not taken
    for it) and host."""
    from agent_env.sandboxes.procs import ProcessIdentity

    return dict(_owner_of(ProcessIdentity.current()))


@functools.lru_cache(maxsize=1)
def _owner_of(identity: Any) -> dict[str, Any]:
    return attrs.asdict(identity)


@attrs.define(kw_only=True, on_setattr=attrs.setters.NO_OP)
class TaskRef:
    """Which task an instance runs: its name, its id and the bundle's version of it."""

    name: str
    id: str | None = None
    version: int | None = None


@attrs.define(kw_only=True, on_setattr=attrs.setters.NO_OP)
class TaskInstanceRecord(StoredRecord):
    """One task instance (collection `task_instances`): what ran, how it ended, per-step
    status, verifier results and outputs. `steps`, `verifiers`, `failure`, `outputs` and
    `owner` keep their stored JSON shape (`failure`: `{step, message, class}`; `owner`: a
    `ProcessIdentity` as `{pid, start_time, host}`, `start_time` absent in older records)."""

    kind: ClassVar[str] = "task instance record"
    optional: ClassVar[frozenset[str]] = frozenset(
        {
            "agent",
            "model",
            "seed_values",
            "attempt",
            "outputs",
            "step_rewards",
            "cost",
            "restarts",
            "reused",
        }
    )

    id: str
    run_id: str
    task: TaskRef
    bundle: dict[str, Any] = attrs.field(factory=dict)
    trial: int = 0
    seed: Any = None
    #: (The field converter also takes a status's string, for records built in code;
    #: assignments are not converted: the engine assigns `Status` members.)
    status: Status = attrs.field(default=Status.PENDING, converter=to_status)
    outcome: str | None = None
    scores: dict[str, float] = attrs.field(factory=dict)
    verifiers: dict[str, Any] = attrs.field(factory=dict)
    steps: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    failure: dict[str, Any] | None = None
    failure_class: str | None = None
    created_at: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    seconds: float | None = None
    resumes: int = 0
    owner: dict[str, Any] = attrs.field(factory=dict)
    log: list[str] = attrs.field(factory=list)
    #: Set by the run (`--agent` / `--model`) or reported by a step (`ctx.record_fields`).
    agent: str | None = None
    model: str | None = None
    #: The seed table row of the trial (`{trial, seed, ...}`), for a resume to reapply.
    seed_values: dict[str, Any] | None = None
    #: Which attempt of the trial (`--retry-infra` re-runs an infrastructure failure).
    attempt: int | None = None
    #: What steps output (`state.outputs`), set when the instance finishes.
    outputs: dict[str, Any] | None = None
    #: Per-step rewards (state `step_rewards`, written by verifiers that score gateway calls):
    #: `[{call_index, score, verifier}, ...]`, absent when no verifier scored a call.
    step_rewards: list[dict[str, Any]] | None = None
    #: Tokens, sandbox-seconds, wall time and US dollars (`agent_env.costs`), set at the end.
    cost: dict[str, Any] | None = None
    #: Finished steps a resume ran again, one entry per occasion: `{resume, reason, steps}`
    #: (absent while none did). A step that may not run twice fails the trial instead.
    restarts: list[dict[str, Any]] | None = None

    def retryable(self) -> bool:
        """Whether `--retry-infra` may run this trial again: an infrastructure failure, unless
        a new attempt would repeat a step that is not re-runnable (`failure.retry` false)."""
        if self.effective_failure_class() != "infrastructure":
            return False
        return (self.failure or {}).get("retry", True) is not False

    #: Set when the instance ran on a warm pool's deployed instance instead of deploying its
    #: own (`{instance, episode, steps}`: which one, its how-manieth episode, the steps reused).
    reused: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED or self.status == Status.CANCELLED

    def effective_failure_class(self) -> str | None:
        """The stored class, or (for records written before classes existed) the derived one."""
        if self.failure_class is not None or self.status == Status.PASSED:
            return self.failure_class
        return failure_class(self.status, self.failure)

    def score(self) -> float | None:
        """The score a counted trial contributes to a mean: the mean of its counted scores
        (passed or scored below 1), 0 for a failure, None otherwise."""
        if self.status == Status.FAILED:
            return 0.0
        scores = [s for s in self.scores.values() if isinstance(s, (int, float))]
        if self.status in (Status.PASSED, Status.SCORED_BELOW) and scores:
            return float(sum(scores) / len(scores))
        return None

    def to_row(self) -> dict[str, Any]:
        """The flat export row of this trial (`runs export`, `run --export`): task id and
        version, bundle digest, agent, model, seed, scores, outcome, failure class, durations,
        cost and the instance id."""
        failure = self.failure or {}
        return {
            "run_id": self.run_id,
            "instance_id": self.id,
            "task": self.task.name,
            "task_id": self.task.id,
            "task_version": self.task.version,
            "trial": self.trial,
            "attempt": self.attempt or 0,
            "bundle": self.bundle.get("name"),
            "bundle_digest": self.bundle.get("digest"),
            "agent": self.agent,
            "model": self.model,
            "seed": self.seed,
            "seed_values": None if self.seed_values is None else dict(self.seed_values),
            "status": str(self.status),
            "passed": self.status == Status.PASSED,
            "outcome": self.outcome,
            "score": self.score(),
            "scores": dict(self.scores),
            "failure_class": self.effective_failure_class(),
            "failure_step": failure.get("step"),
            "failure": failure.get("message"),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "seconds": self.seconds,
            "step_seconds": {
                sid: info.get("seconds")
                for sid, info in self.steps.items()
                if isinstance(info, Mapping)
            },
            "resumes": self.resumes,
            "cost": None if self.cost is None else dict(self.cost),
        }


@attrs.define(kw_only=True, on_setattr=attrs.setters.NO_OP)
class RunRecord(StoredRecord):
    """One run (collection `runs`): what was asked for and which instances it made. Trial `i`
    is task `tasks[i]`, trial number `trial_index[i]`, first attempt `instances[i]`."""

    kind: ClassVar[str] = "run record"
    optional: ClassVar[frozenset[str]] = frozenset({"front_end", "runner", "stopped"})

    id: str
    bundle: dict[str, Any] = attrs.field(factory=dict)
    evals: list[str] = attrs.field(factory=list)
    instances: list[str] = attrs.field(factory=list)
    tasks: list[str] = attrs.field(factory=list)
    #: Absent in runs recorded before trials: every trial is number 0.
    trial_index: list[int] | None = None
    trials: int = 1
    task_versions: dict[str, int | None] = attrs.field(factory=dict)
    eval_tasks: dict[str, list[str]] = attrs.field(factory=dict)
    seed_table: list[dict[str, Any]] = attrs.field(factory=list)
    seed_source: str | None = None
    retry_infra: int = 0
    meta: dict[str, Any] = attrs.field(factory=dict)
    options: dict[str, Any] = attrs.field(factory=dict)
    owner: dict[str, Any] | None = None
    created_at: str | None = None
    #: Who asked for the run (`run`, `task run`, `env deploy`, `explorer`, `openenv`...) and
    #: which runner ran its trials (`local`, `ray`, `openenv`); absent in older runs.
    front_end: str | None = None
    runner: str | None = None
    #: Why the run stopped starting trials early: `{reason: "budget", budget_usd, spent_usd,
    #: not_started}` (`run --budget-usd`); absent when every trial was started.
    stopped: dict[str, Any] | None = None

    def trial_numbers(self) -> list[int]:
        return list(self.trial_index) if self.trial_index else [0] * len(self.instances)
