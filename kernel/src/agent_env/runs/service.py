"""The run pipeline for a front end that runs bundles in its own process (the explorer), in
three calls: open a session, prepare a request (its run document is written on return) and
execute it. The pipeline itself is `agent_env.runs.pipeline`; nothing here knows about click.

    session = await open_session()
    try:
        prepared = await prepare(session, RunRequest(spec="hello"))
        result = await execute(session, prepared)  # cancel: a cancel scope around it
    finally:
        await session.close()  # tears down what is still live
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from agent_env.engine.services import Reporter
from agent_env.runs.checks import (
    check_agent,
    check_provider,
    load_bundle,
    load_seeds,
    spec_for_record,
    with_solution,
)
from agent_env.runs.pipeline import PreparedRun, RunObserver, RunPipeline, RunResult
from agent_env.runs.request import RunRequest, StoredRef

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.engine.run import Session

#: The earlier name of `RunRequest`.
RunOptions = RunRequest


class _ReporterObserver(RunObserver):
    """Shows nothing but the engine's step events, to `reporter`."""

    def __init__(self, reporter: Reporter | None) -> None:
        self._reporter = reporter

    def reporter(self, request: RunRequest) -> Reporter:
        return self._reporter or Reporter()


async def open_session() -> Session:
    """The session `agent-env run` opens (plugins, config from the current folder, stores,
    sandbox manager); `await session.close()` tears down what is still live."""
    from agent_env.engine.run import Session

    return await Session.open()


async def prepare(
    session: Session,
    request: RunRequest,
    *,
    reporter: Reporter | None = None,
    stored: tuple[str, str, int | None] | None = None,
    front_end: str = "explorer",
) -> PreparedRun:
    """What `agent-env run SPEC` (or, with `stored=(kind, id, version)`, `agent-env task|eval
    run ID`) does before its trials run (`RunPipeline.prepare`); `reporter` receives the
    engine's step events; `front_end` is what the run document names as its front end.
    Errors (`BundleError`, `PluginError`, `KeyError` for an unknown
    stored id) come before anything runs."""
    request = attrs.evolve(request, front_end=front_end)
    if stored is not None:
        kind, ref, version = stored
        request = attrs.evolve(request, stored=StoredRef(kind=kind, ref=ref, version=version))
    return await RunPipeline(session, _ReporterObserver(reporter)).prepare(request)


async def execute(session: Session, prepared: PreparedRun) -> RunResult:
    """Run the prepared trials and record the run (`RunPipeline.execute`)."""
    return await RunPipeline(session).execute(prepared)


#: The checks a front end may make before it builds a request are the pipeline's own.
__all__ = [
    "Reporter",
    "RunOptions",
    "RunRequest",
    "check_agent",
    "check_provider",
    "execute",
    "load_bundle",
    "load_seeds",
    "open_session",
    "prepare",
    "spec_for_record",
    "with_solution",
]
