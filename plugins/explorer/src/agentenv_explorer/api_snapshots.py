"""`/api/v1/snapshots/{ID[@N]}`: one stored task snapshot (a `snapshot_task` step took it) with
every env's state and digest, read and checked by `agent_env.engine.snapshot.load`, so the
trial page can show the env states before and after a prompt."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agent_env.errors import AgentEnvError
from agentenv_explorer.params import BadRequest, only


async def show_snapshot(request: Request) -> JSONResponse:
    from agent_env.engine import snapshot as stored

    only(request.query_params, ())
    ref = request.path_params["ref"]
    try:
        taken = await stored.load(request.app.state.explorer.stores, ref)
    except AgentEnvError as exc:  # unknown id or version, or a damaged body: say which
        raise BadRequest(str(exc), 404) from None
    return JSONResponse(
        {
            "ref": taken.ref,
            "id": taken.id,
            "version": taken.version,
            "task": taken.task,
            "at_step": taken.at_step,
            "taken_from": taken.taken_from,
            "digest": taken.digest,
            "call_position": taken.call_position,
            "clock": dict(taken.clock),
            "envs": {name: dict(state) for name, state in sorted(taken.envs.items())},
        }
    )


ROUTES = [Route("/api/v1/snapshots/{ref:path}", show_snapshot, methods=["GET"])]
