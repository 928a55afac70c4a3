"""Regrade: re-score a stored run's trials with new or changed verifiers, from what the records
hold (the prompts' answers and gateway calls, earlier verifier results), without deploying
anything. The result is a new run whose document and trial records point at the originals
(`regraded_from`), so `runs show`, `runs compare` and exports read it like any run.

Verifiers that need a live env (`env_outcome_verifier`, `verify_sandbox`, ...) cannot run on a
record: their recorded results are kept when the trial has them, and a trial without them fails
at that step, saying so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import attrs

from agent_env.errors import AgentEnvError, StepFailed
from agent_env.results import RUNS, TRIALS, decide_outcome
from agentenv_grading.record_context import RecordContext, state_from_record

#: Verifier step types that read only the record (the prompts' answers and tool calls, the
#: recorded verifier results). A third-party step says so with `reads_only_the_record = True`.
RECORD_ONLY_TYPES = frozenset(
    {
        "agent_prompt_response_verifier",
        "tool_call_verifier",
        "aggregate_verifiers",
        "rubrics_verifier",
        "call_reward_verifier",
    }
)
#: Trials in these states have no verdict to change.
UNFINISHED = frozenset({"pending", "running", "cancelled"})
PAGE = 1000


def reads_only_the_record(step: Any) -> bool:
    return type(step).type in RECORD_ONLY_TYPES or bool(
        getattr(type(step), "reads_only_the_record", False)
    )


@attrs.frozen(kw_only=True)
class Verifiers:
    """The verifiers a regrade applies: `per_task` (task name -> steps) from a new bundle
    (they replace the recorded ones), or `steps` for every task (`--verifier FILE`: they are
    laid over the recorded ones, a same `verifier_id` replaced)."""

    steps: tuple[Any, ...] = ()
    per_task: Mapping[str, tuple[Any, ...]] | None = None
    source: str = ""

    @property
    def replace(self) -> bool:
        return self.per_task is not None

    def for_task(self, name: str) -> tuple[Any, ...] | None:
        if self.per_task is None:
            return self.steps
        return self.per_task.get(name)


def verifiers_from_file(path: str | Path, plugins: Any) -> Verifiers:
    """The verifier steps of a JSON file (an array of step objects, as a task file);
    `AgentEnvError` naming the file and step for anything that is not a verifier."""
    from agent_env.bundles import read_steps

    steps = read_steps(Path(path), plugins)
    others = [s.id for s in steps if not type(s).is_verifier]
    if others:
        raise AgentEnvError(
            f"{path}: step {others[0]!r} is not a verifier; a --verifier file holds verifier "
            "steps only (e.g. tool_call_verifier, agent_prompt_response_verifier)"
        )
    problems = [f"{path}: step {s.id!r}: {message}" for s in steps for message in _check(s)]
    if problems:
        raise AgentEnvError("; ".join(problems))
    return Verifiers(steps=tuple(steps), source=str(path))


def _check(step: Any) -> list[str]:
    """The step's own checks, without a bundle (a check that needs one is skipped: the
    verifier then fails when it runs, naming its step)."""
    try:
        return list(step.check(None) or ())
    except (AttributeError, TypeError, KeyError):
        return []


def verifiers_from_bundle(spec: str, plugins: Any) -> Verifiers:
    """The verifier steps of each task of the bundle `spec` (a folder, installed bundle or
    plugin source)."""
    from agent_env.bundles import load_bundle

    bundle = load_bundle(spec, plugins)
    per_task = {
        name: tuple(s for s in task.steps if type(s).is_verifier)
        for name, task in bundle.tasks.items()
    }
    return Verifiers(per_task=per_task, source=str(spec))


@attrs.frozen
class _Aggregate:
    """Stands in for a recorded aggregating verifier the new verifiers do not name, so the
    outcome rule still counts only aggregates."""

    is_aggregate: ClassVar[bool] = True
    verifier_id: str


def _recorded_aggregates(record: Mapping[str, Any]) -> list[_Aggregate]:
    scored = {
        vid
        for vid, v in (record.get("verifiers") or {}).items()
        if isinstance(v, Mapping) and isinstance(v.get("score"), (int, float))
    }
    counted = set(record.get("scores") or {})
    if counted and counted < scored:  # only aggregates counted when the trial ran
        return [_Aggregate(vid) for vid in sorted(counted)]
    return []


@attrs.define
class Regrade:
    """Regrades one run's trials into a new run (`new_run_id`)."""

    verifiers: Verifiers
    plugins: Any
    config: Any = None
    stores: Any = None
    counts: dict[str, int] = attrs.field(factory=dict)
    #: Read each trial's stored trajectories, so the verifiers see every call with its result
    #: (`--with-results`; one object read per prompt).
    with_results: bool = False

    async def trial(self, record: Mapping[str, Any], new_id: str, new_run_id: str) -> dict:
        """The new record of one trial (not stored)."""
        steps = self.verifiers.for_task(str((record.get("task") or {}).get("name")))
        doc = dict(record)
        doc.update(
            id=new_id,
            run_id=new_run_id,
            regraded_from={"run_id": record.get("run_id"), "instance_id": record.get("id")},
        )
        if steps is None or str(record.get("status")) in UNFINISHED:
            why = "not finished" if steps is not None else "the new bundle has no such task"
            doc["log"] = [f"regrade: kept as recorded ({why})"]
            self._count("kept")
            return doc
        state = state_from_record(record)
        if self.with_results:
            await self._add_results(record, state)
        if self.verifiers.replace:
            state["verifiers"] = {}
        ids = {s.id for s in steps}
        failure = record.get("failure")
        if failure is not None and failure.get("step") in ids:
            failure = None  # the regraded step decides anew
        lines: list[str] = []
        recorded = record.get("verifiers") or {}
        for step in steps:
            if failure is not None:
                break
            if not reads_only_the_record(step):
                if step.verifier_id in recorded:
                    state["verifiers"][step.verifier_id] = recorded[step.verifier_id]
                    lines.append(f"{step.id}: needs a live env; its recorded result is kept")
                    continue
                failure = {
                    "step": step.id,
                    "message": f"{type(step).type} needs a live env and the trial has no "
                    f"recorded result for verifier {step.verifier_id!r}",
                    "class": "verifier",
                }
                break
            ctx = RecordContext(
                state, record, step.id, plugins=self.plugins, config=self.config, stores=self.stores
            )
            try:
                await step.execute(ctx)
            except StepFailed as e:
                if step.fail_task_on_error:
                    failure = {"step": step.id, "message": e.reason, "class": e.failure_class}
                lines.append(f"{step.id}: {e.reason}")
            lines.extend(ctx.lines)
        decide_steps = (
            [*steps, *_recorded_aggregates(record)] if not self.verifiers.replace else steps
        )
        status, outcome, scores, failure_class = decide_outcome(
            decide_steps, state["verifiers"], failure=failure
        )
        doc.update(
            status=status,
            outcome=outcome,
            scores=scores,
            verifiers=state["verifiers"],
            failure=failure,
            failure_class=failure_class,
            log=[f"regrade: {line}" for line in lines],
        )
        if state["step_rewards"]:
            doc["step_rewards"] = state["step_rewards"]
        else:
            doc.pop("step_rewards", None)
        self._count(
            "flipped" if (status == "passed") != (record.get("status") == "passed") else "same"
        )
        return doc

    async def _add_results(self, record: Mapping[str, Any], state: dict[str, Any]) -> None:
        """Each prompt's calls as the gateway logged them (with `result` and `env`), from the
        trial's stored trajectories; a prompt whose trajectory is missing keeps its calls."""
        from agent_env.results import trial_details

        trajectories = (await trial_details(self.stores.objects, record))["trajectories"]
        for prompt_id, prompt in state["prompts"].items():
            calls = (trajectories.get(prompt_id) or {}).get("gateway_calls")
            if isinstance(calls, list):
                prompt["tool_calls"] = calls

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    async def run(self, documents: Any, run_id: str) -> dict[str, Any]:
        """Regrade every stored trial of `run_id` into a new run; its summary."""
        from agent_env.suggest import did_you_mean

        run_doc = await documents.get(RUNS, run_id)
        if run_doc is None:
            known = [k for k, _ in (await documents.query(RUNS, limit=200)).items]
            raise AgentEnvError(f"no run {run_id!r}{did_you_mean(run_id, known)}")
        new_run = new_run_id()
        stamp_old, stamp_new = run_id.removeprefix("run-"), new_run.removeprefix("run-")
        ids: dict[str, str] = {}
        before = after = total = 0
        offset = 0
        while True:
            page = await documents.query(
                TRIALS, where={"run_id": run_id}, order_by="id", limit=PAGE, offset=offset
            )
            for key, record in page.items:
                new_id = _new_trial_id(key, stamp_old, stamp_new, total)
                doc = await self.trial(record, new_id, new_run)
                await documents.put(TRIALS, new_id, doc)
                ids[key] = new_id
                total += 1
                before += record.get("status") == "passed"
                after += doc.get("status") == "passed"
            offset += len(page.items)
            if not page.has_more or not page.items:
                break
        new_doc = dict(run_doc)
        new_doc.update(
            id=new_run,
            instances=[ids.get(i, i) for i in run_doc.get("instances") or []],
            created_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
            owner=None,
            front_end="regrade",
            regraded_from=run_id,
            regrade={"verifiers": self.verifiers.source, "counts": dict(self.counts)},
        )
        await documents.put(RUNS, new_run, new_doc)
        return {
            "run_id": new_run,
            "regraded_from": run_id,
            "trials": total,
            "passed_before": before,
            "passed_after": after,
            **{k: self.counts.get(k, 0) for k in ("flipped", "same", "kept")},
        }


def new_run_id() -> str:
    """A run id in the engine's form (`run-<UTC stamp>-<6 hex>`), time-sortable."""
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    return f"run-{stamp}-{os.urandom(3).hex()}"


def _new_trial_id(old: str, stamp_old: str, stamp_new: str, index: int) -> str:
    """The old trial id under the new run's stamp (slot and attempt kept), else a new slot."""
    prefix = f"ti-{stamp_old}-"
    if old.startswith(prefix):
        return f"ti-{stamp_new}-{old[len(prefix) :]}"
    return f"ti-{stamp_new}-{index:05d}"


async def regrade_run(
    run_id: str,
    verifiers: Verifiers,
    *,
    plugins: Any,
    stores: Any,
    config: Any = None,
    with_results: bool = False,
) -> dict[str, Any]:
    """Regrade `run_id` into a new run with `verifiers`; the summary (new run id, trials,
    passes before and after, how many flipped)."""
    regrade = Regrade(verifiers, plugins, config, stores, with_results=with_results)
    return await regrade.run(stores.documents, run_id)
