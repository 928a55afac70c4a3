"""`TrialWorker`: runs tickets of one recorded run in this process (a distributed runner's
worker, e.g. a Ray actor), through the run pipeline like every other front end.

Opened on the first ticket: its own session from the controller's `RunContext`, the bundle
pinned by its digest (`agent_env.engine.remote`), loaded with the run's overrides by
`RunPipeline.load`. Each ticket's trial writes its records to the shared stores exactly as a
local trial does and returns its final record, which the controller counts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from agent_env.engine.records import FINISHED, RUNS
from agent_env.engine.remote import RunContext, fetch_bundle
from agent_env.engine.stored import latest_attempt
from agent_env.engine.tickets import TrialTicket, bundle_digest
from agent_env.errors import AgentEnvError
from agent_env.runs.request import RunRequest

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.engine.run import Session
    from agent_env.runs.pipeline import LoadedBundle, RunPipeline


@attrs.define
class _Opened:
    pipeline: RunPipeline
    loaded: LoadedBundle
    run_doc: dict[str, Any]
    request: RunRequest


class TrialWorker:
    """Runs tickets of one run in this process: `await worker.run(ticket)` -> final record.

    Opened on the first ticket (session, bundle, services); `close()` tears down what is left.
    Tickets may run concurrently on one worker.
    """

    def __init__(self, context: RunContext, *, apply_env: bool = True):
        self.context = context
        self._apply_env = apply_env
        self._opened: _Opened | None = None
        self._lock = anyio.Lock()

    async def _open(self) -> _Opened:
        async with self._lock:
            if self._opened is None:
                self._opened = await self._build()
        return self._opened

    async def _build(self) -> _Opened:
        from agent_env.engine.run import Session
        from agent_env.runs.pipeline import RunPipeline

        ctx = self.context
        if self._apply_env:
            os.environ.update(ctx.env)
            if Path(ctx.cwd).is_dir():
                os.chdir(ctx.cwd)
        session = await Session.open()
        try:
            pipeline = RunPipeline(session)
            run_doc = await session.stores.documents.get(RUNS, ctx.run_id)
            if run_doc is None:
                raise AgentEnvError(
                    f"run {ctx.run_id!r} is not in this worker's document store: the workers "
                    "must use the controller's stores"
                )
            recorded = run_doc.get("options") or {}
            request = RunRequest(
                spec=await self._bundle_spec(session),
                provider=ctx.provider,
                agent=ctx.agent,
                model=ctx.model,
                judge_model=recorded.get("judge_model"),
                user_model=recorded.get("user_model"),
                front_end="worker",
            )
            loaded = await pipeline.load(request, every_task=True)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await session.close()
            raise
        return _Opened(pipeline, loaded, run_doc, request)

    async def _bundle_spec(self, session: Session) -> str:
        """The recorded spec when it loads the pinned content here, else the published archive."""
        ctx = self.context
        if ctx.digest is None:
            return ctx.spec
        try:
            from agent_env.bundles import load_bundle

            bundle = await anyio.to_thread.run_sync(load_bundle, ctx.spec, session.plugins)
            if await anyio.to_thread.run_sync(bundle_digest, Path(bundle.root)) == ctx.digest:
                return ctx.spec
        except AgentEnvError:
            pass
        if ctx.bundle_key is None:
            raise AgentEnvError(
                f"bundle {ctx.spec!r} does not have the run's content ({ctx.digest}) on this "
                "worker and the run published no archive of it"
            )
        cache = Path(session.config.home) / "cache"
        return str(await fetch_bundle(session.stores.objects, ctx.bundle_key, ctx.digest, cache))

    async def run(self, ticket: TrialTicket) -> dict[str, Any]:
        """Run (or resume, or just report) the ticket's trial; its final record as a dict."""
        opened = await self._open()
        documents = opened.pipeline.session.stores.documents
        record, attempt = await latest_attempt(documents, ticket.slot)
        if record is not None and ticket.attempt <= attempt and record.status in FINISHED:
            return record.to_dict()  # delivered twice: the first run's record stands
        trial, final = await opened.pipeline.worker_trial(
            opened.loaded,
            opened.run_doc,
            ticket,
            opened.request,
            retry_infra=self.context.retry_infra,
        )
        await trial.run()
        done = final()
        assert done is not None
        return done.to_dict()

    async def close(self) -> None:
        if self._opened is not None:
            opened, self._opened = self._opened, None
            await opened.pipeline.session.close()
