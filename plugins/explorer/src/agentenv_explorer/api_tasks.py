"""The existing product's per-task routes under `/api/v1/tasks/{id}/...`, mapped onto our
stores: a run of a stored task is a run (its id is the `workflow_id` and the `run_group_id`),
each of its trials a task instance. The id is one percent-encoded path segment
(`%40local%2Fx%2Fhello`), so these routes read the raw path; anything else under
`/api/v1/tasks/` is an entity route."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agent_env import results
from agent_env.suggest import did_you_mean
from agentenv_explorer import api_entities
from agentenv_explorer.launcher import RequestError
from agentenv_explorer.params import BadRequest, json_body, only, paging
from agentenv_reporting import grouped

_ROUTE = re.compile(
    r"/api/v1/tasks/(?P<id>[^/]+)/(?P<what>run|runs|cancel-run|instances|run-groups)"
    r"(?:/(?P<sub>[^/]+))?(?:/(?P<tail>progress))?/?"
)
#: The run request fields that map onto our run options.
RUN_FIELDS = ("version", "agent_model", "agent_artifact_id", "sandbox")
#: The reference's fields this explorer cannot honour (501, never silently ignored).
UNSUPPORTED = (
    "start_step",
    "step_overrides",
    "overrides",
    "context_from_instance_id",
    "context_json",
    "metadata",
)
#: At most this many trials in one `POST .../runs` (the reference's limit).
MAX_GROUP = 100
_DONE = ("passed", "scored_below", "unscored", "failed", "cancelled")


def _state(request: Request) -> Any:
    return request.app.state.explorer


def _options(body: dict[str, Any], extra: tuple[str, ...] = ()) -> tuple[Any, int | None]:
    """(RunOptions, version) of a run request; 400 for an unknown field, 501 for one of the
    reference's fields that has no equivalent here."""
    from agent_env.runs.service import RunOptions

    known = (*RUN_FIELDS, *extra)
    for name in body:
        if name in UNSUPPORTED:
            raise BadRequest(f"{name}: not supported by this explorer", 501)
        if name not in known:
            raise BadRequest(
                f"unknown field {name!r}{did_you_mean(name, known)}; fields: {', '.join(known)}"
            )
    version = body.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise BadRequest("version: a whole number")
    for name in ("agent_model", "agent_artifact_id", "sandbox"):
        if body.get(name) is not None and not isinstance(body[name], str):
            raise BadRequest(f"{name}: a string")
    options = RunOptions(
        model=body.get("agent_model") or None,
        agent=body.get("agent_artifact_id") or None,
        provider=body.get("sandbox") or None,
    )
    return options, version


async def _task(request: Request, task_id: str) -> Any:
    entity = await _state(request).stores.entities.latest("task", task_id)
    if entity is None:
        raise BadRequest(f"no task {task_id!r}; GET /api/v1/tasks lists them", 404)
    return entity


async def _launch(request: Request, task_id: str, options: Any, version: int | None) -> Any:
    try:
        return await _state(request).launcher.launch(options, stored=("task", task_id, version))
    except RequestError as exc:
        raise BadRequest(str(exc), exc.status) from None


async def run_task(request: Request, task_id: str) -> JSONResponse:
    await _task(request, task_id)
    options, version = _options(await json_body(request, '{"version": 1}'))
    launched = await _launch(request, task_id, options, version)
    return JSONResponse(
        {"workflow_id": launched.run_id, "instance_id": launched.instances[0], "status": "QUEUED"},
        status_code=202,
    )


async def run_task_group(request: Request, task_id: str) -> JSONResponse:
    entity = await _task(request, task_id)
    body = await json_body(request, '{"version": 1}')
    if "seeds" in body:
        raise BadRequest("seeds: not supported by this explorer; give count", 501)
    count = body.pop("count", None)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_GROUP:
        raise BadRequest(f"count: required, a whole number from 1 to {MAX_GROUP}")
    options, version = _options(body)
    import attrs

    launched = await _launch(request, task_id, attrs.evolve(options, trials=count), version)
    return JSONResponse(
        {
            "run_group_id": launched.run_id,
            "task_id": task_id,
            "task_version": version or entity.version,
            "total": count,
            "runs": [
                {
                    "index": i,
                    "workflow_id": launched.run_id,
                    "instance_id": iid,
                    "seed": None,
                    "error": None,
                }
                for i, iid in enumerate(launched.instances)
            ],
        },
        status_code=202,
    )


async def cancel_task_run(request: Request, task_id: str) -> JSONResponse:
    only(request.query_params, ("workflow_id",))
    workflow = request.query_params.get("workflow_id") or ""
    if not workflow:
        raise BadRequest("workflow_id: required (the run id POST .../run answered)")
    try:
        cancelled = _state(request).launcher.cancel(workflow)
    except KeyError:
        raise BadRequest(f"no run {workflow!r} started by this explorer", 404) from None
    return JSONResponse({"workflow_id": workflow, "canceled": cancelled})


def _status(counts: dict[str, Any], live: bool) -> str:
    if counts["running"] or (counts["unfinished"] and live):
        return "RUNNING"
    if counts["unfinished"]:
        return "INCOMPLETE"
    if counts["cancelled"]:
        return "CANCELLED"
    return "COMPLETED" if counts["failed"] == 0 else "FAILED"


async def _task_counts(request: Request, run: dict[str, Any], name: str) -> dict[str, Any]:
    """The run's counts over the trials of one task."""
    documents = _state(request).stores.documents
    groups = await _state(request).summaries.groups(documents, run)
    mine = [(key, n) for key, n in groups if key[0] == name]
    planned = sum(1 for t in run.get("tasks") or [] if t == name)
    return await grouped.run_counts(
        documents, {"id": run["id"], "instances": [None] * planned}, groups=mine
    )


async def _runs_of(request: Request, task_id: str) -> tuple[list[dict[str, Any]], int]:
    """One page of the run documents that ran `task_id`, newest first (every version), and
    how many there are."""
    stores = _state(request).stores
    limit, offset = paging(request.query_params)
    ids = await results.runs_using(stores, "task", task_id) or []
    out = []
    for run_id in ids[offset : offset + limit]:
        run = await stores.documents.get(results.RUNS, run_id)
        if run is not None:
            out.append(run)
    return out, len(ids)


def _paged(request: Request, rows: list[Any], total: int) -> JSONResponse:
    limit, offset = paging(request.query_params)
    return JSONResponse(
        {
            "items": rows,
            "total": total,
            "limit": limit,
            "offset": offset,
            "has_more": offset + len(rows) < total,
        }
    )


async def _run_row(request: Request, run: dict[str, Any], task: Any) -> dict[str, Any]:
    name = (task.content or {}).get("name") or task.entity_id.rpartition("/")[2]
    counts = await _task_counts(request, run, name)
    launched = _state(request).launcher.runs.get(run["id"])
    live = bool(launched and launched.running)
    return {
        "run_id": run["id"],
        "runner": (run.get("options") or {}).get("runner") or "local",
        "task_id": task.entity_id,
        "task_version": (run.get("task_versions") or {}).get(name),
        "status": _status(counts, live),
        "counts": counts,
        "created_at_utc": run.get("created_at"),
        "agent": (run.get("meta") or {}).get("agent"),
        "model": (run.get("meta") or {}).get("model"),
        "error": launched.error if launched else None,
        "owner": run.get("owner"),
    }


async def list_task_runs(request: Request, task_id: str) -> JSONResponse:
    only(request.query_params, ("limit", "offset"))
    task = await _task(request, task_id)
    runs, total = await _runs_of(request, task_id)
    return _paged(request, [await _run_row(request, run, task) for run in runs], total)


def instance_view(record: dict[str, Any], steps: dict[str, Any] | None = None) -> dict[str, Any]:
    """A trial record in the reference's task-instance shape (plus our `outcome`, `scores`);
    `steps` as they stand (`results.live_steps`), else the record's. A running trial's
    current step is its first step not yet finished."""
    steps = record.get("steps") or {} if steps is None else steps
    completed = [
        {"step_id": sid, "status": info.get("status")}
        for sid, info in steps.items()
        if info.get("status") not in ("pending", "running")
    ]
    done = {c["step_id"] for c in completed}
    running = [sid for sid in steps if sid not in done] if record.get("status") == "running" else []
    task = record.get("task") or {}
    failure = record.get("failure") or {}
    return {
        "instance_id": record["id"],
        "run_id": record.get("run_id"),
        "task_id": task.get("id"),
        "task_version": task.get("version"),
        "status": record.get("status"),
        "outcome": record.get("outcome"),
        "scores": record.get("scores") or {},
        "current_step": running[0] if running else None,
        "total_steps": len(steps),
        "completed_steps": completed,
        "error": failure.get("message"),
        "context": {"metadata": {"verifications": record.get("verifiers") or {}}},
        "created_at_utc": record.get("created_at"),
        "completed_at_utc": record.get("finished_at"),
        "done": record.get("status") in _DONE,
    }


async def _instance(request: Request, task_id: str, iid: str) -> dict[str, Any]:
    record = await _state(request).stores.documents.get(results.TRIALS, iid)
    if record is None or (record.get("task") or {}).get("id") != task_id:
        raise BadRequest(f"no instance {iid!r} of task {task_id!r}", 404)
    return record


async def list_instances(request: Request, task_id: str) -> JSONResponse:
    only(request.query_params, ("limit", "offset"))
    await _task(request, task_id)
    limit, offset = paging(request.query_params)
    page = await _state(request).stores.documents.query(
        results.TRIALS,
        where={"task.id": task_id},
        order_by="created_at",
        descending=True,
        limit=limit,
        offset=offset,
    )
    return _paged(request, [instance_view(d) for _, d in page.items], page.total)


async def show_instance(request: Request, task_id: str, iid: str, progress: bool) -> JSONResponse:
    only(request.query_params, ())
    record = await _instance(request, task_id, iid)
    documents = _state(request).stores.documents
    view = instance_view(record, await results.live_steps(documents, record))
    if progress:
        keys = ("instance_id", "status", "current_step", "total_steps", "completed_steps", "done")
        view = {k: view[k] for k in keys}
    return JSONResponse(view)


def _group_row(row: dict[str, Any]) -> dict[str, Any]:
    counts = row["counts"]
    return {
        "run_group_id": row["run_id"],
        "task_id": row["task_id"],
        "task_version": row["task_version"],
        "status": row["status"],
        "total": counts["trials"],
        "completed": counts["passed"] + counts["failed"] + counts["unscored"],
        "passed": counts["passed"],
        "failed": counts["failed"],
        "cancelled": counts["cancelled"],
        "running": counts["running"],
        "provisioning": 0,  # a trial here is pending (waiting) or running
        "waiting": counts["unfinished"],
        "created_at_utc": row["created_at_utc"],
    }


async def list_groups(request: Request, task_id: str) -> JSONResponse:
    only(request.query_params, ("limit", "offset"))
    task = await _task(request, task_id)
    runs, total = await _runs_of(request, task_id)
    return _paged(request, [_group_row(await _run_row(request, r, task)) for r in runs], total)


#: A group's step counts and instances are read from at most this many trial records.
GROUP_RECORDS = 500


async def show_group(request: Request, task_id: str, gid: str) -> JSONResponse:
    only(request.query_params, ())
    task = await _task(request, task_id)
    run = await _state(request).stores.documents.get(results.RUNS, gid)
    if run is None:
        raise BadRequest(f"no run group {gid!r}; GET .../run-groups lists them", 404)
    row = _group_row(await _run_row(request, run, task))
    page = await _state(request).stores.documents.query(
        results.TRIALS, where={"run_id": gid, "task.id": task_id}, limit=GROUP_RECORDS
    )
    steps: dict[str, dict[str, int]] = {}
    for _, record in page.items:
        for sid, info in (record.get("steps") or {}).items():
            count = steps.setdefault(sid, {"done": 0, "failed": 0})
            if info.get("status") == "completed":
                count["done"] += 1
            elif info.get("status") == "failed":
                count["failed"] += 1
    row |= {
        "step_counts": steps,
        "step_counts_complete": not page.has_more,
        "instances": [instance_view(d) for _, d in page.items],
    }
    return JSONResponse(row)


async def dispatch(request: Request) -> Response:
    """Route `/api/v1/tasks/{id}/...` on the raw path; other paths are entity routes."""
    raw = request.scope.get("raw_path", request.url.path.encode()).decode("latin-1")
    found = _ROUTE.fullmatch(raw.split("?", 1)[0])
    if found is None:
        if request.method != "GET":
            raise BadRequest(
                f"{request.method} is not served at {request.url.path}; a task id goes "
                "percent-encoded as one segment (/api/v1/tasks/%40local%2Fme%2Fhello/run)",
                405,
            )
        request.scope["path_params"] = {"kind": "tasks", "entity_id": request.path_params["rest"]}
        return await api_entities.show_entity(request)
    task_id, what, sub, tail = (unquote(found[g]) if found[g] else None for g in found.groupdict())
    assert task_id is not None and what is not None
    name = sub or ""  # set for the keys that name an instance or a group
    handlers = {
        ("POST", "run", False, False): lambda: run_task(request, task_id),
        ("POST", "runs", False, False): lambda: run_task_group(request, task_id),
        ("GET", "runs", False, False): lambda: list_task_runs(request, task_id),
        ("POST", "cancel-run", False, False): lambda: cancel_task_run(request, task_id),
        ("GET", "instances", False, False): lambda: list_instances(request, task_id),
        ("GET", "instances", True, False): lambda: show_instance(request, task_id, name, False),
        ("GET", "instances", True, True): lambda: show_instance(request, task_id, name, True),
        ("GET", "run-groups", False, False): lambda: list_groups(request, task_id),
        ("GET", "run-groups", True, False): lambda: show_group(request, task_id, name),
    }
    handler = handlers.get((request.method, what, bool(sub), bool(tail)))
    if handler is None:
        raise BadRequest(f"{request.method} is not served at {request.url.path}", 405)
    return await handler()


ROUTES = [Route("/api/v1/tasks/{rest:path}", dispatch, methods=["GET", "POST"])]
