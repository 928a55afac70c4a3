"""The health check of one task: its oracle (the shipped solution, `--agent oracle`) and a
do-nothing agent each run it once through the run pipeline (each a run of its own, stored like
any run). Solvable: the oracle's trial passed. Passes without work: the do-nothing trial
passed. Healthy: solvable (or no solution shipped to tell) and not passing without work. The
finding is recorded in the ledger under the task's id and version."""

from __future__ import annotations

from typing import Any

from agent_env.errors import AgentEnvError, BundleError

FRONT_END = "tasks health"


def split_target(target: str) -> tuple[str, str]:
    """`BUNDLE/TASK` -> (bundle spec, task name); the task is the last path part."""
    spec, _, task = target.rstrip("/").rpartition("/")
    if not spec or not task:
        raise AgentEnvError(
            f"{target!r}: give BUNDLE/TASK (e.g. examples/notes-agent/groceries): the bundle's "
            "folder, installed name or hf:// spec, then the task's name"
        )
    return spec, task


async def _probe(spec: str, task: str, agent: str, provider: str | None) -> dict[str, Any]:
    """One trial of `task` with `agent`: its run, status, outcome and task id/version."""
    from agent_env.runs.service import RunRequest, execute, open_session, prepare

    session = await open_session()
    try:
        request = RunRequest(spec=spec, task_names=(task,), agent=agent, provider=provider)
        prepared = await prepare(session, request, front_end=FRONT_END)
        result = await execute(session, prepared)
    finally:
        await session.close()
    (record,) = result.records
    return {
        "run_id": result.run_id,
        "instance_id": record.get("id"),
        "status": str(record.get("status")),
        "outcome": record.get("outcome"),
        "task": record.get("task") or {},
    }


async def check_health(spec: str, task: str, provider: str | None = None) -> dict[str, Any]:
    """Run the two probes, record the finding in the ledger and return it."""
    from agentenv_grading import ledger

    try:
        oracle: dict[str, Any] | None = await _probe(spec, task, "oracle", provider)
    except BundleError as e:
        if "ships a solution" not in str(e):
            raise
        oracle = None
    nothing = await _probe(spec, task, "do-nothing", provider)
    solvable = None if oracle is None else oracle["status"] == "passed"
    trivial = nothing["status"] == "passed"
    problems = []
    if solvable is False:
        problems.append("its oracle cannot solve it")
    if trivial:
        problems.append("it passes without work")
    if problems:
        verdict = "UNHEALTHY: " + " and ".join(problems)
    elif solvable is None:
        verdict = "solvability unknown (the task ships no solution); does not pass without work"
    else:
        verdict = "healthy: solvable, and does not pass without work"
    ref = nothing["task"]
    not_run = {"run_id": None, "instance_id": None, "status": "not run", "outcome": "no solution"}
    finding = {
        "task": ref.get("name") or task,
        "task_id": ref.get("id"),
        "task_version": ref.get("version"),
        "solvable": solvable,
        "passes_without_work": trivial,
        "healthy": not problems,
        "verdict": verdict,
        "oracle": {k: v for k, v in (oracle or not_run).items() if k != "task"},
        "do_nothing": {k: v for k, v in nothing.items() if k != "task"},
    }
    ledger.record_health(
        str(ref.get("id") or task),
        ref.get("version"),
        str(finding["task"]),
        solvable=solvable,
        passes_without_work=trivial,
        detail={
            "verdict": verdict,
            "oracle_run": finding["oracle"]["run_id"],
            "do_nothing_run": nothing["run_id"],
        },
    )
    return finding
