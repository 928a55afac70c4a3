"""Run records and the outcome rule: `TaskInstanceRecord` (collection `task_instances`, one per
task instance) and `RunRecord` (collection `runs`, one per run), attrs models structured and
unstructured by the kernel converter. Their JSON is the stored format: `to_dict()` writes the
same keys older versions wrote (optional ones left out while unset) and keys a model does not
know (written by a newer version, or a run's extra metadata) survive a load and a save in
`extra`.

Outcome: `cancelled` if the DAG was interrupted; `failed at step 'x': ...` on a fatal step
failure; otherwise the verifier scores decide. When an aggregating verifier (a step class
with `Step.is_aggregate = True`, such as core-steps' `aggregate_verifiers`) recorded a score, only
aggregate scores count (they already summarize the verifiers they read); otherwise every
recorded non-null score counts. No score: `unscored`; every score >= 1: `passed (id: 1)`;
else `scored below 1 (id: 0.5, ...)`.

Failure class (`failure_class(status, failure)`): every finished trial that did not pass gets
one of `FAILURE_CLASSES`, so reports can tell whose fault a failure was.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

import attrs

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

#: Why a trial did not pass: `verifier` (it ran and scored below 1), `agent` (the agent or its
#: model misbehaved), `env` (a task step or the environment failed: the default for a step
#: error), `infrastructure` (sandbox, docker, store or engine: retried by `--retry-infra`),
#: `timeout`, `cancelled` (interrupted), `unscored` (no verifier recorded a score).
FAILURE_CLASSES = (
    "verifier",
    "agent",
    "env",
    "infrastructure",
    "timeout",
    "cancelled",
    "unscored",
)
#: Step failure classes as steps raise them (`StepFailed(failure_class=...)`) -> report class.
_STEP_CLASSES = {
    "agent": "agent",
    "model": "agent",
    "env": "env",
    "error": "env",
    "verifier": "env",
    "infrastructure": "infrastructure",
    "infra": "infrastructure",
    "sandbox": "infrastructure",
    "store": "infrastructure",
    "timeout": "timeout",
    "cancelled": "cancelled",
}


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_id(prefix: str) -> str:
    """A short, time-sortable id such as `ti-20261202163512-a1b2c3`."""
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    return f"{prefix}-{stamp}-{secrets.token_hex(3)}"


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


def aggregate_ids(steps: Sequence[Any]) -> set[str]:
    out = set()
    for step in steps:
        if type(step).is_aggregate:
            vid = getattr(step, "verifier_id", None) or step.id
            out.add(vid)
    return out


def counted_scores(steps: Sequence[Any], verifiers: Mapping[str, Any]) -> dict[str, float]:
    """The scores that decide the outcome (see the module docstring)."""
    scores = {
        vid: v.get("score")
        for vid, v in (verifiers or {}).items()
        if isinstance(v, dict) and isinstance(v.get("score"), (int, float))
    }
    aggs = aggregate_ids(steps)
    if any(vid in aggs for vid in scores):
        scores = {vid: s for vid, s in scores.items() if vid in aggs}
    return scores


def fmt_score(score: float) -> str:
    return f"{score:.4g}"


def decide(
    steps: Sequence[Any],
    state: Mapping[str, Any],
    *,
    failure: Mapping[str, Any] | None,
    cancelled: bool,
) -> tuple[str, str, dict[str, float]]:
    """(status, outcome string, counted scores) for a finished DAG."""
    scores = counted_scores(steps, state.get("verifiers") or {})
    if cancelled:
        return "cancelled", "cancelled", scores
    if failure is not None:
        if failure.get("step") is None:
            return "failed", f"failed: {failure['message']}", scores
        return (
            "failed",
            f"failed at step {failure['step']!r}: {failure['message']}",
            scores,
        )
    if not scores:
        return "unscored", "unscored", scores
    listed = ", ".join(f"{vid}: {fmt_score(s)}" for vid, s in scores.items())
    if all(s >= 1 for s in scores.values()):
        return "passed", f"passed ({listed})", scores
    return "scored_below", f"scored below 1 ({listed})", scores


def step_failure_class(raised: str | None) -> str:
    """The report class of a step failure class as raised; unknown ones count as `env`."""
    return _STEP_CLASSES.get(str(raised or "error").lower(), "env")


def failure_class(status: str, failure: Mapping[str, Any] | None) -> str | None:
    """The failure class of a finished record; None when it passed or has not finished."""
    if status == "scored_below":
        return "verifier"
    if status in ("cancelled", "unscored"):
        return status
    if status == "failed":
        return step_failure_class((failure or {}).get("class"))
    return None


# ---- the record models -----------------------------------------------------------------

R = TypeVar("R", bound="_Record")


@attrs.define(kw_only=True, on_setattr=attrs.setters.NO_OP)
class _Record:
    """Shared by the record models: `from_dict` / `to_dict` through the kernel converter.

    Fields typed `dict[str, Any]`, `list[...]` or `Any` hold free-form JSON (step info, verifier
    results, outputs...): the converter checks their JSON kind and passes them through as they
    are, without a deep copy (the redactor copies what is stored; a record is written several
    times per instance, so a copy per write would cost as much as the redaction)."""

    #: What `from_dict` calls the document in errors (`task instance record 'ti-...'`).
    kind: ClassVar[str] = "record"
    #: Fields left out of `to_dict()` while None (older documents did not have them).
    optional: ClassVar[frozenset[str]] = frozenset()

    #: Keys of the stored document this model does not know, kept as they were.
    extra: dict[str, Any] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    @classmethod
    def new(cls: type[R], **fields: Any) -> R:
        """A record built in code (no checks): fields the model does not have go to `extra`."""
        names = _field_names(cls)
        record = cls(**{k: v for k, v in fields.items() if k in names})
        record.extra = {k: v for k, v in fields.items() if k not in names}
        return record

    def replace(self: R, **changes: Any) -> R:
        """A copy with `changes` (`attrs.evolve`, which would drop `extra`)."""
        copy = attrs.evolve(self, **changes)
        copy.extra = dict(self.extra)
        return copy

    @classmethod
    def from_dict(cls: type[R], doc: Mapping[str, Any]) -> R:
        """The model of a stored document (nested JSON values are shared with `doc`);
        `StructureProblems` naming the document and field when a field has the wrong shape."""
        if not isinstance(doc, Mapping):
            from agent_env.convert import structure

            structure(doc, cls, where=cls.kind)  # raises the converter's message
        names = _field_names(cls)
        known = {k: v for k, v in doc.items() if k in names}
        try:
            record = _structure_fn(cls)(known, cls)
        except Exception:  # noqa: BLE001 - the converter's strict pass names the problem
            from agent_env.convert import structure

            structure(known, cls, where=f"{cls.kind} {doc.get('id')!r}")
            raise
        record.extra = {k: v for k, v in doc.items() if k not in names}
        return record

    def to_dict(self) -> dict[str, Any]:
        """The stored document (JSON types only; nested free-form values are the record's own,
        not copies)."""
        out = _unstructure_fn(type(self))(self)
        for key in self.optional:
            if out[key] is None:
                del out[key]
        if self.extra:
            out.update(self.extra)
        return out


@functools.cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(a.name for a in attrs.fields(cls) if a.init)


def _members(tp: Any) -> tuple[Any, ...]:
    """The non-None members of a union (`tp` itself when it is not one)."""
    import types
    import typing

    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return tuple(a for a in typing.get_args(tp) if a is not type(None))
    return (tp,)


def _free_form(tp: Any) -> bool:
    """A field whose value is free-form JSON (no model, no enum inside)."""
    import typing

    return all(a is Any or typing.get_origin(a) in (dict, list) for a in _members(tp))


def _plain(tp: Any) -> bool:
    """A field whose value is stored as it is: JSON scalars and free-form JSON."""
    return _free_form(tp) or all(a in (str, int, float, bool) for a in _members(tp))


def _pass_through(tp: Any) -> Any:
    """A structure hook that checks the JSON kind of a free-form value and keeps it as is."""
    import typing

    nullable = type(None) in typing.get_args(tp)
    kinds = tuple(typing.get_origin(a) or object for a in _members(tp))

    def hook(value: Any, _: Any) -> Any:
        if (value is None and nullable) or isinstance(value, kinds):
            return value
        names = " or ".join("an object" if k is dict else "a list" for k in kinds)
        raise ValueError(f"expected {names}, got {value!r:.60}")

    return hook


def _fields(cls: type) -> dict[str, Any]:
    """Field name -> resolved type, `extra` left out."""
    attrs.resolve_types(cls)
    return {a.name: a.type for a in attrs.fields(cls) if a.name != "extra"}


def _omit_extra(cls: type) -> dict[str, Any]:
    from cattrs.gen import override

    return {"extra": override(omit=True)} if "extra" in attrs.fields_dict(cls) else {}


@functools.cache
def _structure_fn(cls: type) -> Any:
    """The kernel converter's structure function for `cls`, free-form JSON fields checked for
    their JSON kind and passed through (generated on first use: a command that only writes
    records never pays for it)."""
    from cattrs.gen import make_dict_structure_fn, override

    from agent_env.convert import converter

    hooks = {
        n: override(struct_hook=_pass_through(tp))
        for n, tp in _fields(cls).items()
        if _free_form(tp)
    }
    return make_dict_structure_fn(
        cls, converter(), _cattrs_forbid_extra_keys=True, **_omit_extra(cls), **hooks
    )


@functools.cache
def _unstructure_fn(cls: type) -> Any:
    """The kernel converter's unstructure function for `cls`: scalars and free-form JSON read
    as they are (cattrs inlines its own `identity` as an attribute read), `Status` as its
    string, nested models through their own function."""
    from cattrs.fns import identity
    from cattrs.gen import make_dict_unstructure_fn, override

    from agent_env.convert import converter

    hooks = {}
    for name, tp in _fields(cls).items():
        if tp is Status:
            hooks[name] = override(unstruct_hook=str)
        elif _plain(tp):
            hooks[name] = override(unstruct_hook=identity)
        elif attrs.has(tp):
            hooks[name] = override(unstruct_hook=_unstructure_fn(tp))
    return make_dict_unstructure_fn(cls, converter(), **_omit_extra(cls), **hooks)


@attrs.define(kw_only=True, on_setattr=attrs.setters.NO_OP)
class TaskRef:
    """Which task an instance runs: its name, its id and the bundle's version of it."""

    name: str
    id: str | None = None
    version: int | None = None


@attrs.define(kw_only=True, on_setattr=attrs.setters.NO_OP)
class TaskInstanceRecord(_Record):
    """One task instance (collection `task_instances`): what ran, how it ended, per-step
    status, verifier results and outputs. `steps`, `verifiers`, `failure`, `outputs` and
    `owner` keep their stored JSON shape (`failure`: `{step, message, class}`; `owner`: a
    `ProcessIdentity` as `{pid, start_time, host}`, `start_time` absent in older records)."""

    kind: ClassVar[str] = "task instance record"
    optional: ClassVar[frozenset[str]] = frozenset(
        {"agent", "model", "seed_values", "attempt", "outputs"}
    )

    id: str
    run_id: str
    task: TaskRef
    bundle: dict[str, Any] = attrs.field(factory=dict)
    trial: int = 0
    seed: Any = None
    #: (The converter's str hook takes a `StrEnum` for a str; the field converter makes it a
    #: `Status` again. Assignments are not converted: the engine assigns `Status` members.)
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
        version, bundle digest, agent, model, seed, scores, outcome, failure class, durations
        and the instance id."""
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
        }


@attrs.define(kw_only=True, on_setattr=attrs.setters.NO_OP)
class RunRecord(_Record):
    """One run (collection `runs`): what was asked for and which instances it made. Trial `i`
    is task `tasks[i]`, trial number `trial_index[i]`, first attempt `instances[i]`."""

    kind: ClassVar[str] = "run record"

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

    def trial_numbers(self) -> list[int]:
        return list(self.trial_index) if self.trial_index else [0] * len(self.instances)
