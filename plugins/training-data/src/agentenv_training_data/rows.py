"""One training row per trial: the conversation (`chat`), what ran (run, instance, task id and
version, trial, attempt, agent, model, seed), which prompts' trajectories could not be read, how it was judged (per-verifier scores, the
reward, pass, outcome, failure class), per-step rewards when a grader recorded them, timings
and costs. Every column has one JSON type in every row (free-form values such as the seed table
row are JSON text), so `datasets` and Parquet read the rows as they are written."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_env.exports import TrialExport
from agentenv_training_data.chat import conversation

#: The columns of a row, in order (the Parquet schema in `formats` has the same).
COLUMNS = (
    "run_id",
    "instance_id",
    "task",
    "task_id",
    "task_version",
    "trial",
    "attempt",
    "agent",
    "model",
    "seed",
    "seed_values",
    "messages",
    "missing_trajectories",
    "scores",
    "reward",
    "passed",
    "status",
    "outcome",
    "failure_class",
    "failure",
    "step_rewards",
    "started_at",
    "finished_at",
    "seconds",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "sandbox_seconds",
    "cost_usd",
)


def training_row(trial: TrialExport) -> dict[str, Any]:
    """The row of one trial (keys: `COLUMNS`)."""
    record, row = trial.record, trial.row
    cost = row.get("cost") or {}
    seed = row.get("seed")
    return {
        "run_id": row["run_id"],
        "instance_id": row["instance_id"],
        "task": row["task"],
        "task_id": row.get("task_id"),
        "task_version": row.get("task_version"),
        "trial": int(row.get("trial") or 0),
        "attempt": int(row.get("attempt") or 0),
        "agent": row.get("agent"),
        "model": row.get("model"),
        "seed": None if seed is None else str(seed),
        "seed_values": None
        if row.get("seed_values") is None
        else json.dumps(row["seed_values"], sort_keys=True, default=str),
        "messages": conversation(trial.trajectories),
        "missing_trajectories": missing_trajectories(trial.trajectories),
        "scores": [
            {"verifier": str(k), "score": _number(v)} for k, v in (row.get("scores") or {}).items()
        ],
        "reward": _number(row.get("score")),
        "passed": bool(row.get("passed")),
        "status": row.get("status"),
        "outcome": row.get("outcome"),
        "failure_class": row.get("failure_class"),
        "failure": row.get("failure"),
        "step_rewards": step_rewards(record),
        "started_at": row.get("started_at"),
        "finished_at": row.get("finished_at"),
        "seconds": _number(row.get("seconds")),
        "prompt_tokens": int(cost.get("prompt_tokens") or 0),
        "completion_tokens": int(cost.get("completion_tokens") or 0),
        "total_tokens": int(cost.get("total_tokens") or 0),
        "sandbox_seconds": [
            {"provider": str(k), "seconds": _number(v)}
            for k, v in (cost.get("sandbox_seconds") or {}).items()
        ],
        "cost_usd": _number(cost.get("usd")),
    }


def missing_trajectories(trajectories: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The prompts whose trajectory could not be read (gone from the object store, or left
    empty or torn by a power loss), `[{prompt_id, reason}]`: their `messages` hold only the
    prompt and the answer, so a trainer can tell a short conversation from a lost one."""
    return [
        {"prompt_id": str(doc.get("prompt_id")), "reason": str(doc["missing"])}
        for doc in trajectories
        if doc.get("missing") is not None
    ]


def step_rewards(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-call scores a grader recorded (`step_rewards`: `{call_index, score, verifier}`),
    in call order; empty when none were recorded."""
    out = []
    for item in record.get("step_rewards") or []:
        if not isinstance(item, Mapping) or not isinstance(item.get("call_index"), int):
            continue
        out.append(
            {
                "call_index": item["call_index"],
                "score": _number(item.get("score")),
                "verifier": None if item.get("verifier") is None else str(item["verifier"]),
            }
        )
    return sorted(out, key=lambda r: r["call_index"])


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
