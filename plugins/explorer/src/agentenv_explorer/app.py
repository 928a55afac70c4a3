"""The explorer's ASGI application: the JSON API, the static pages, the guards around them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agent_env.errors import AgentEnvError
from agentenv_explorer import api_entities, api_objects, api_runs, api_snapshots, api_tasks
from agentenv_explorer.guards import Guards
from agentenv_explorer.launcher import Launcher
from agentenv_explorer.params import BadRequest
from agentenv_explorer.summaries import RunSummaries, RunViews, warm_indexes

STATIC = Path(__file__).parent / "static"


@attrs.define
class ExplorerState:
    """What the routes share: the open stores and the launcher of runs."""

    stores: Any
    launcher: Launcher
    summaries: RunSummaries = attrs.field(factory=RunSummaries)
    views: RunViews = attrs.field(factory=RunViews)
    #: Set when the server is asked to stop: open event streams end, so shutdown waits for none.
    stopping: bool = False


async def _health(request: Request) -> JSONResponse:
    stores = request.app.state.explorer.stores
    return JSONResponse(
        {
            "status": "ok",
            "document_store": type(stores.documents).__name__,
            "object_store": type(stores.objects).__name__,
        }
    )


async def _index(request: Request) -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type="text/html")


async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=getattr(exc, "status", 400))


async def _store_error(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": f"{type(exc).__name__}: {exc}"}, status_code=500)


def create_app(
    stores: Any,
    *,
    cwd: Path,
    log_dir: Path,
    bind_host: str = "127.0.0.1",
    allowed_hosts: Iterable[str] = (),
    token: str | None = None,
    close_stores: bool = True,
    warm: bool = True,
) -> Any:
    """The explorer over `stores` (closed at shutdown when `close_stores`); runs it starts
    run in `cwd` and write their output under `log_dir`. With `warm`, the stores' query
    indexes are made before the first request is served."""
    launcher = Launcher(stores.documents, cwd=cwd, log_dir=log_dir)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        try:
            if warm:
                await warm_indexes(stores)
            async with anyio.create_task_group() as group:  # the runs started from the API
                launcher.attach(group)
                try:
                    yield
                finally:
                    await launcher.stop_all()
                    group.cancel_scope.cancel()
        finally:
            if close_stores:
                await stores.close()

    app = Starlette(
        routes=[
            Route("/", _index),
            Route("/health", _health),
            *api_runs.ROUTES,
            *api_objects.ROUTES,
            *api_tasks.ROUTES,
            *api_snapshots.ROUTES,  # before the entities' /api/v1/{kind}/...
            *api_entities.ROUTES,
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={BadRequest: _bad_request, AgentEnvError: _store_error},
        lifespan=lifespan,
    )
    app.state.explorer = ExplorerState(stores=stores, launcher=launcher)
    guarded = Guards(app, bind_host=bind_host, allowed_hosts=allowed_hosts, token=token)
    guarded.state = app.state  # type: ignore[attr-defined]
    return guarded
