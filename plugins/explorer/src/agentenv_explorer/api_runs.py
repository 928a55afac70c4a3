"""`/api/v1/runs...` and `/api/v1/trials/...`: runs newest first with counts, one run with its
statistics and paged trials, two runs compared, one trial with its trajectories and logs; start
and cancel."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Route

from agent_env import results
from agentenv_explorer.launcher import RequestError
from agentenv_explorer.params import BadRequest, choice, json_body, only, paging
from agentenv_explorer.summaries import settled
from agentenv_reporting import grouped

#: How often a run's event stream looks at its counts, and how long one stream lasts (the
#: browser's EventSource reconnects; a bounded stream never holds up the explorer's shutdown).
EVENT_POLL_SECONDS = 0.5
EVENT_STREAM_SECONDS = 15.0
#: The run page sums its trials' costs (reading each record) only up to this many records: a
#: bigger run's page says so instead (`agent-env runs show RUN` sums any run).
COST_SUMMED_UP_TO = 1000


def _state(request: Request) -> Any:
    return request.app.state.explorer


def _page(page: Any, rows: list[Any]) -> dict[str, Any]:
    return {
        "items": rows,
        "total": page.total,
        "limit": page.limit,
        "offset": page.offset,
        "has_more": page.has_more,
    }


def _run_row(run: dict[str, Any], counts: dict[str, Any], state: Any) -> dict[str, Any]:
    launched = state.launcher.runs.get(run["id"])
    return {
        "id": run["id"],
        "created_at": run.get("created_at"),
        "bundle": (run.get("bundle") or {}).get("name"),
        "tasks": list(run.get("task_versions") or {})
        or list(dict.fromkeys(run.get("tasks") or [])),
        "trials_per_task": run.get("trials") or 1,
        "agent": (run.get("meta") or {}).get("agent"),
        "model": (run.get("meta") or {}).get("model"),
        # who asked for the run (`run`, `explorer`, `env deploy`, `openenv`...) and what ran
        # its trials (`local`, `ray`, `openenv`); None in runs recorded before they were kept
        "front_end": run.get("front_end"),
        "runner": run.get("runner"),
        "counts": counts,
        "started_here": launched is not None,
        "process_running": bool(launched and launched.running),  # its in-process task
        # still going here or in a live process elsewhere (`agent-env run`): worth following
        "live": bool(launched and launched.running) or not settled(run, counts),
    }


async def list_runs(request: Request) -> JSONResponse:
    only(request.query_params, ("limit", "offset", "bundle"))
    limit, offset = paging(request.query_params)
    documents = _state(request).stores.documents
    page = await results.run_page(
        documents, limit=limit, offset=offset, bundle=request.query_params.get("bundle") or None
    )
    rows = [
        _run_row(run, await _state(request).summaries.counts(documents, run), _state(request))
        for _, run in page.items
    ]
    return JSONResponse(_page(page, rows))


async def _run(request: Request, run_id: str | None = None) -> dict[str, Any]:
    run_id = run_id or request.path_params["run_id"]
    run = await _state(request).stores.documents.get(results.RUNS, run_id)
    if run is None:
        raise BadRequest(f"no run {run_id!r}; GET /api/v1/runs lists them", 404)
    return run


async def show_run(request: Request) -> JSONResponse:
    only(request.query_params, ())
    state = _state(request)
    documents = state.stores.documents
    run_id = request.path_params["run_id"]
    revision = documents.revision()  # before reading: a write meanwhile makes it stale
    kept = state.views.get(run_id, revision)
    if kept is not None:
        return JSONResponse(kept)
    run = await _run(request)
    groups = await state.summaries.groups(documents, run)
    counts = await grouped.run_counts(documents, run, groups=groups)
    view = {
        **_run_row(run, counts, state),
        # the per-trial lists (100,000 entries in a big run) are the trials page's business
        "run": {k: v for k, v in run.items() if k not in ("instances", "trial_index", "tasks")},
        "results": await grouped.run_results(documents, run, groups=groups),
        "cost": await _run_cost(documents, run["id"], _records(groups)),
    }
    if not view["live"]:
        state.views.keep(run_id, revision, view)
    return JSONResponse(view)


async def _run_cost(documents: Any, run_id: str, records: int) -> dict[str, Any]:
    """The run's `records` trial records' costs added up (`agent_env.costs.CostTotals`, every
    attempt's record), or `{summed: false, records}` when there are more than
    `COST_SUMMED_UP_TO` (reading 100,000 records takes seconds)."""
    from agent_env.costs import CostTotals

    if records <= COST_SUMMED_UP_TO:  # a live run may have written more meanwhile
        where = {"run_id": run_id}
        page = await documents.query(results.TRIALS, where=where, limit=COST_SUMMED_UP_TO)
        records = page.total
    if records > COST_SUMMED_UP_TO:
        return {"summed": False, "records": records, "summed_up_to": COST_SUMMED_UP_TO}
    totals = CostTotals()
    for _, record in page.items:
        totals.add(record.get("cost"))
    return {"summed": True, "records": page.total, **totals.to_json()}


def _records(groups: grouped.Groups) -> int:
    """How many trial records (every attempt) the run's grouped counts cover."""
    return sum(n for _, n in groups)


async def compare_runs(request: Request) -> JSONResponse:
    """`?a=RUN&b=RUN`: run B against run A (`agentenv_reporting.compare.compare_runs`), plus each
    run's cost totals (as the run page adds them up)."""
    only(request.query_params, ("a", "b"))
    ids = [request.query_params.get(name) or "" for name in ("a", "b")]
    if not all(ids):
        raise BadRequest("a and b: required, the ids of the two runs (?a=run-...&b=run-...)")
    a, b = [await _run(request, run_id) for run_id in ids]
    documents = _state(request).stores.documents
    from agentenv_reporting.compare import compare_runs as compare

    compared = await compare(documents, a, b)
    summaries = _state(request).summaries
    compared["cost"] = {
        side: await _run_cost(
            documents, run["id"], _records(await summaries.groups(documents, run))
        )
        for side, run in (("a", a), ("b", b))
    }
    return JSONResponse(compared)


async def _run_events(request: Request, run_id: str) -> AsyncIterator[str]:
    state = _state(request)
    documents = state.stores.documents
    last = None
    ends = time.monotonic() + EVENT_STREAM_SECONDS
    yield f"retry: {int(EVENT_POLL_SECONDS * 1000)}\n\n"
    while time.monotonic() < ends and not state.stopping:
        run = await documents.get(results.RUNS, run_id) or {"id": run_id}
        counts = await state.summaries.counts(documents, run)
        launched = state.launcher.runs.get(run_id)
        now = {"counts": counts, "process_running": bool(launched and launched.running)}
        if now != last:
            yield f"event: counts\ndata: {json.dumps(now)}\n\n"
            last = now
        if settled(run, counts) and not now["process_running"]:
            yield "event: end\ndata: {}\n\n"
            return
        await anyio.sleep(EVENT_POLL_SECONDS)


async def run_events(request: Request) -> StreamingResponse:
    """Server-sent events of a run's progress: `counts` (the run row's counts and whether its
    process runs here) whenever they change, `end` once the run can no longer change."""
    only(request.query_params, ())
    run = await _run(request)
    return StreamingResponse(
        _run_events(request, run["id"]),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store"},
    )


def _trial_row(record: dict[str, Any]) -> dict[str, Any]:
    failure = record.get("failure") or {}
    return {
        "id": record["id"],
        "task": (record.get("task") or {}).get("name"),
        "trial": record.get("trial"),
        "attempt": record.get("attempt") or 0,
        "status": record.get("status"),
        "outcome": record.get("outcome"),
        "scores": record.get("scores") or {},
        "failure_class": record.get("failure_class"),
        "failure_step": failure.get("step"),
        "seconds": record.get("seconds"),
        "started_at": record.get("started_at"),
    }


async def run_trials(request: Request) -> JSONResponse:
    only(request.query_params, ("limit", "offset", "status", "task"))
    run_id = request.path_params["run_id"]
    limit, offset = paging(request.query_params)
    page = await results.trial_page(
        _state(request).stores.documents,
        run_id,
        status=choice(request.query_params, "status", results.STATUSES),
        task=request.query_params.get("task") or None,
        limit=limit,
        offset=offset,
    )
    if page.total == 0:
        await _run(request)  # 404 for an unknown run (a run document can be large: only now)
    return JSONResponse(_page(page, [_trial_row(doc) for _, doc in page.items]))


async def show_trial(request: Request) -> JSONResponse:
    only(request.query_params, ())
    iid = request.path_params["instance_id"]
    stores = _state(request).stores
    record = await stores.documents.get(results.TRIALS, iid)
    if record is None:
        raise BadRequest(f"no trial {iid!r}; a run's page lists its trials", 404)
    details = await results.trial_details(stores.objects, record)
    record["steps"] = await results.live_steps(stores.documents, record)  # live while running
    return JSONResponse({"record": record, **details})


async def start_run(request: Request) -> JSONResponse:
    body = await json_body(request)
    try:
        launched = await _state(request).launcher.start(body)
    except RequestError as exc:
        raise BadRequest(str(exc), exc.status) from None
    return JSONResponse({"run_id": launched.run_id, "status": "running"}, status_code=202)


async def cancel_run(request: Request) -> JSONResponse:
    run = await _run(request)
    try:
        cancelled = _state(request).launcher.cancel(run["id"])
    except KeyError:
        raise BadRequest(
            f"run {run['id']!r} was not started by this explorer: stop it where it runs "
            "(Ctrl-C), then `agent-env run --resume` if wanted",
            409,
        ) from None
    return JSONResponse({"run_id": run["id"], "cancelled": cancelled})


async def run_log(request: Request) -> PlainTextResponse:
    run = await _run(request)
    launched = _state(request).launcher.runs.get(run["id"])
    if launched is None:
        raise BadRequest(f"run {run['id']!r} was not started by this explorer: no output kept", 404)
    try:
        text = launched.log.read_text(errors="replace")
    except OSError as exc:
        raise BadRequest(f"the run's output is gone: {exc}", 410) from None
    return PlainTextResponse(text[-200_000:])


ROUTES = [
    Route("/api/v1/runs", list_runs, methods=["GET"]),
    Route("/api/v1/runs", start_run, methods=["POST"]),
    Route("/api/v1/compare", compare_runs, methods=["GET"]),
    Route("/api/v1/runs/{run_id}", show_run, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/trials", run_trials, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/events", run_events, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
    Route("/api/v1/runs/{run_id}/log", run_log, methods=["GET"]),
    Route("/api/v1/trials/{instance_id}", show_trial, methods=["GET"]),
]
