"""Replay: a stored trial's recorded tool calls, played against a freshly deployed env, and
compared with what was recorded, call by call.

The task is run again through the run pipeline (the bundle the trial recorded, or `--bundle`)
with the `replay` agent in place of the trial's agent: for each prompt it makes the calls the
gateway logged for the original agent, in order, with the same arguments (failed calls too),
and answers with the recorded response. Then each new gateway call is compared with the
recorded one: tool, env, error and result.

Non-deterministic fields: `time`, `duration_ms`, `virtual_time` and `role` are never compared
(they say when and by whom, not what); results are compared as JSON values (so key order does
not matter), a text result that holds JSON as that JSON, and keys named with `--ignore` (ids,
timestamps an env puts in its answers) are dropped at any depth first. A result the recorder
cut to its first 2,000 characters is compared on the same cut.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from agent_env.errors import AgentEnvError

FRONT_END = "runs replay"
CUT = 2000  # prompt_agent keeps the first 2,000 characters of a long result
COMPARED = ("tool", "env", "error", "result")


def _canonical(value: Any, ignore: frozenset[str]) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
            try:
                return _canonical(json.loads(text), ignore)
            except ValueError:
                return value
        return value
    if isinstance(value, Mapping):
        return {k: _canonical(v, ignore) for k, v in value.items() if k not in ignore}
    if isinstance(value, list):
        return [_canonical(v, ignore) for v in value]
    return value


def _as_recorded(result: Any) -> Any:
    """`result` cut the way the recorder cuts a long one (so a cut result compares)."""
    if result is None:
        return None
    text = json.dumps(result)
    return result if len(text) <= CUT else text[:CUT] + "..."


def compare_calls(
    recorded: list[dict[str, Any]], replayed: list[dict[str, Any]], ignore: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """One row per recorded (or extra replayed) call: `index`, `tool`, `same`, and for a
    divergence the `fields` that differ with both values."""
    dropped = frozenset(ignore)
    rows = []
    for index in range(max(len(recorded), len(replayed))):
        old = recorded[index] if index < len(recorded) else None
        new = replayed[index] if index < len(replayed) else None
        if old is None or new is None:
            rows.append(
                {
                    "index": index,
                    "tool": (old or new or {}).get("tool"),
                    "same": False,
                    "fields": {"call": {"recorded": old is not None, "replayed": new is not None}},
                }
            )
            continue
        fields = {}
        for key in COMPARED:
            a, b = old.get(key), new.get(key)
            if key == "result":
                a, b = _as_recorded(a) if not isinstance(a, str) else a, _as_recorded(b)
            a, b = _canonical(a, dropped), _canonical(b, dropped)
            if a != b:
                fields[key] = {"recorded": a, "replayed": b}
        rows.append({"index": index, "tool": old.get("tool"), "same": not fields, "fields": fields})
    return rows


def script_of(trajectories: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """`{prompt_id: {"calls", "response", "recorded"}}` from a trial's stored trajectories."""
    script: dict[str, Any] = {}
    outputs = record.get("outputs") or {}
    for value in outputs.values():
        if not isinstance(value, Mapping) or not isinstance(value.get("prompt_id"), str):
            continue
        pid = value["prompt_id"]
        trajectory = trajectories.get(pid) or {}
        if "gateway_calls" not in trajectory:
            raise AgentEnvError(
                f"trial {record.get('id')!r}: prompt {pid!r} has no stored trajectory "
                f"({trajectory.get('missing') or 'none recorded'}); replay needs the gateway's "
                "recorded calls and results"
            )
        calls = list(trajectory["gateway_calls"])
        script[pid] = {
            "calls": [
                {"tool": c.get("tool"), "arguments": c.get("arguments") or {}} for c in calls
            ],
            "response": value.get("response") or "",
            "recorded": calls,
        }
    if not script:
        raise AgentEnvError(
            f"trial {record.get('id')!r} recorded no prompt: there are no agent calls to replay"
        )
    return script


async def _load(stores: Any, trial_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    from agent_env.results import TRIALS, trial_details
    from agent_env.suggest import did_you_mean

    record = await stores.documents.get(TRIALS, trial_id)
    if record is None:
        page = await stores.documents.query(TRIALS, order_by="id", descending=True, limit=200)
        known = [k for k, _ in page.items]
        raise AgentEnvError(f"no trial {trial_id!r}{did_you_mean(trial_id, known)}")
    details = await trial_details(stores.objects, record)
    return record, details["trajectories"]


def bundle_spec(record: Mapping[str, Any]) -> str:
    """The spec that loads the trial's bundle again (the pinned source when it recorded one)."""
    info = record.get("bundle") or {}
    pinned = (info.get("provenance") or {}).get("pinned_spec")
    spec = pinned or info.get("spec")
    if not isinstance(spec, str) or not spec:
        raise AgentEnvError(
            f"trial {record.get('id')!r} does not record its bundle's spec; give --bundle SPEC"
        )
    return spec


async def replay_trial(
    trial_id: str,
    *,
    bundle: str | None = None,
    provider: str | None = None,
    ignore: Iterable[str] = (),
) -> dict[str, Any]:
    """Replay `trial_id` (see the module docstring); the report: the new run and trial, the
    number of calls, how many reproduced, and a row per call."""
    from agent_env.results import open_configured_stores
    from agent_env.runs.service import RunRequest, execute, open_session, prepare
    from agentenv_grading.agents import REPLAY_SCRIPT

    async with await open_configured_stores() as stores:
        original, trajectories = await _load(stores, trial_id)
    script = script_of(trajectories, original)
    task = str((original.get("task") or {}).get("name"))
    session = await open_session()
    try:
        request = RunRequest(
            spec=bundle or bundle_spec(original),
            task_names=(task,),
            agent="replay",
            provider=provider,
            runner="local",  # the replay agent reads its script in this process
            resources={REPLAY_SCRIPT: script},
        )
        result = await execute(session, await prepare(session, request, front_end=FRONT_END))
    finally:
        await session.close()
    (replayed,) = result.records
    async with await open_configured_stores() as stores:
        _, new_trajectories = await _load(stores, str(replayed["id"]))
    prompts = []
    total = same = 0
    for pid, part in script.items():
        new_calls = list((new_trajectories.get(pid) or {}).get("gateway_calls") or [])
        rows = compare_calls(part["recorded"], new_calls, ignore)
        total += len(rows)
        same += sum(r["same"] for r in rows)
        prompts.append({"prompt_id": pid, "calls": rows})
    return {
        "trial": trial_id,
        "run_id": result.run_id,
        "replayed_trial": replayed["id"],
        "status": str(replayed.get("status")),
        "calls": total,
        "reproduced": same,
        "divergences": total - same,
        "prompts": prompts,
    }
