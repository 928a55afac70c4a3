"""Trials that run in another process, or on another machine: what a distributed runner's
workers need, and nothing about any one engine.

The controller describes its run once (`RunContext`: where the project's config is, which
bundle content, the run's options) and each trial as a small `TrialTicket` (slot, task, trial
index, attempt): both are plain data, so they pickle and travel. A worker (`TrialWorker`) opens
its own session from the context, loads the bundle pinned by its digest (from the recorded
spec when the content there is the same, else from the archive the controller published to
the object store), then runs tickets. A ticket's trial writes its records to the stores exactly
as a local trial does (so the stores must be shared when workers are on other machines) and
returns its final record, which the controller counts (`Trial.run_remote`).

A worker that dies mid-trial leaves its attempt `running`: `abandon_attempt` marks it failed
for an infrastructure reason, so the trial's next attempt (a new ticket) is the one that counts.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import attrs

from agent_env.engine.records import (
    COLLECTION,
    FINISHED,
    RUNS,
    Status,
    TaskInstanceRecord,
    attempt_id,
    now_iso,
)
from agent_env.engine.stored import latest_attempt
from agent_env.engine.tickets import TrialTicket, bundle_digest, bundle_files
from agent_env.errors import AgentEnvError

#: Object-store keys of published bundle archives: `bundles/<sha256 hex>.tar.gz`.
BUNDLE_PREFIX = "bundles/"
#: Environment variables a worker takes from the controller (the config's sources and knobs).
CONTEXT_ENV_PREFIXES = ("AGENT_ENV_",)


@attrs.frozen(kw_only=True)
class RunContext:
    """What every worker of one run needs: the same for all its tickets."""

    run_id: str
    spec: str
    digest: str | None = None
    bundle_key: str | None = None
    cwd: str = "."
    env: Mapping[str, str] = attrs.field(factory=dict)
    provider: str | None = None
    agent: str | None = None
    model: str | None = None
    retry_infra: int = 0

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> RunContext:
        return cls(**dict(doc))


def bundle_key(digest: str) -> str:
    return f"{BUNDLE_PREFIX}{digest.removeprefix('sha256:')}.tar.gz"


def _pack(root: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel, path in bundle_files(root):
            info = tar.gettarinfo(str(path), arcname=rel)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            with open(path, "rb") as f:
                tar.addfile(info, f)
    return buf.getvalue()


async def publish_bundle(objects: Any, root: Path, digest: str) -> str:
    """Store the bundle folder's archive under its digest (once) and return its key."""
    key = bundle_key(digest)
    if not await objects.exists(key):
        await objects.put(key, await anyio.to_thread.run_sync(_pack, root))
    return key


def _unpack(data: bytes, target: Path) -> None:
    tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        # the "data" filter refuses absolute paths, `..`, links out of the folder and devices
        tar.extractall(tmp, filter="data")
    try:
        tmp.rename(target)
    except OSError:  # another worker unpacked it first
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


async def fetch_bundle(objects: Any, key: str, digest: str, cache: Path) -> Path:
    """The published bundle `key` unpacked under `cache` (once per digest); checked against
    `digest` so a worker never runs other content than the controller pinned."""
    target = cache / "bundles" / digest.removeprefix("sha256:")
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        await anyio.to_thread.run_sync(_unpack, await objects.get(key), target)
    got = await anyio.to_thread.run_sync(bundle_digest, target)
    if got != digest:
        raise AgentEnvError(
            f"the bundle archive {key!r} holds content {got}, not the run's {digest}; "
            "the object store was changed under the run"
        )
    return target


def context_env(config: Any = None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The controller's variables its workers need: every `AGENT_ENV_*` one (the config's
    sources and settings) and each one an `env:NAME` reference in the config names."""
    from agent_env.config.refs import parse_ref

    environ = os.environ if environ is None else environ
    wanted = {k for k in environ if k.startswith(CONTEXT_ENV_PREFIXES)}

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        else:
            ref = parse_ref(value)
            if ref is not None and ref[0] == "env":
                wanted.add(ref[1])

    if config is not None:
        walk(getattr(config, "values", {}))
    return {k: environ[k] for k in sorted(wanted) if k in environ}


async def abandon_attempt(documents: Any, slot: str, reason: str) -> int | None:
    """After the worker running trial `slot` died: mark its unfinished attempt failed for an
    infrastructure reason and return the attempt to run next; None when the trial already
    finished (its record stands)."""
    record, attempt = await latest_attempt(documents, slot)
    if record is None:
        return 0
    if record.status in FINISHED:
        if record.effective_failure_class() == "infrastructure":
            return attempt + 1
        return None
    failed = record.replace(
        status=Status.FAILED,
        outcome=f"failed: {reason}",
        failure={"class": "infrastructure", "message": reason},
        failure_class="infrastructure",
        finished_at=now_iso(),
    )
    await documents.put(COLLECTION, attempt_id(slot, attempt), failed.to_dict())
    return attempt + 1


async def context_for(trial_run: Any, *, publish: bool) -> RunContext:
    """The `RunContext` of a planned or resumed run (`engine.trials.TrialRun`); with `publish`,
    the bundle's archive is stored in the object store for workers that lack its folder."""
    from agent_env.engine.run import resume_spec

    info = trial_run.bundle_info
    digest = info.get("digest")
    root = trial_run.bundle_root
    key = None
    if publish and digest and root is not None and Path(root).is_dir():
        key = await publish_bundle(trial_run.services.stores.objects, Path(root), digest)
    services = trial_run.services
    return RunContext(
        run_id=trial_run.run_id,
        spec=resume_spec(info),
        digest=digest,
        bundle_key=key,
        cwd=os.getcwd(),
        env=context_env(services.config),
        provider=services.default_provider,
        agent=trial_run.meta.get("agent") or services.agent,
        model=trial_run.meta.get("model") or services.model,
        retry_infra=trial_run.retry_infra,
    )


async def final_record(documents: Any, slot: str) -> dict[str, Any] | None:
    """The record of trial `slot`'s last attempt as stored; None if it never started."""
    record, _ = await latest_attempt(documents, slot)
    return None if record is None else record.to_dict()


class _Collector:
    """Stands in for a run's `Results` in a worker: keeps the final record of its one trial."""

    def __init__(self) -> None:
        self.record: TaskInstanceRecord | None = None

    def add(self, record: TaskInstanceRecord) -> None:
        self.record = record


class TrialWorker:
    """Runs tickets of one run in this process: `await worker.run(ticket)` -> final record.

    Opened on the first ticket (session, bundle, services); `close()` tears down what is left.
    Tickets may run concurrently on one worker.
    """

    def __init__(self, context: RunContext, *, apply_env: bool = True):
        self.context = context
        self._apply_env = apply_env
        self._opened: Any = None
        self._lock = anyio.Lock()

    async def _open(self) -> Any:
        async with self._lock:
            if self._opened is None:
                self._opened = await self._build()
        return self._opened

    async def _build(self) -> Any:
        from agent_env.engine.run import Session
        from agent_env.engine.seeds import SeedTable
        from agent_env.runs import overrides, service
        from agent_env.runs.options import RunOptions

        ctx = self.context
        if self._apply_env:
            os.environ.update(ctx.env)
            if Path(ctx.cwd).is_dir():
                os.chdir(ctx.cwd)
        session = await Session.open()
        try:
            spec = await self._bundle_spec(session)
            bundle, materialized, _ = await service.load_bundle(session, spec)
            run_doc = await session.stores.documents.get(RUNS, ctx.run_id)
            if run_doc is None:
                raise AgentEnvError(
                    f"run {ctx.run_id!r} is not in this worker's document store: the workers "
                    "must use the controller's stores"
                )
            recorded = run_doc.get("options") or {}
            options = RunOptions(
                provider=ctx.provider,
                judge_model=recorded.get("judge_model"),
                user_model=recorded.get("user_model"),
            )
            bundle, _notes = overrides.apply_to_bundle(bundle, options)
            services = await session.services(
                artifacts=materialized.artifacts,
                default_provider=ctx.provider,
                agent=ctx.agent,
                model=ctx.model,
            )
            seeds = SeedTable(
                entries=tuple(run_doc.get("seed_table") or ()), source=run_doc.get("seed_source")
            )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await session.close()
            raise
        return session, bundle, materialized, services, run_doc, seeds

    async def _bundle_spec(self, session: Any) -> str:
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
        from agent_env.engine.trials import Trial, TrialRun

        session, bundle, materialized, services, run_doc, seeds = await self._open()
        documents = session.stores.documents
        record, attempt = await latest_attempt(documents, ticket.slot)
        resume = None
        if record is not None and ticket.attempt <= attempt:
            if record.status in FINISHED:
                return record.to_dict()  # delivered twice: the first run's record stands
            resume = record
        if ticket.task not in bundle.tasks:
            raise AgentEnvError(f"bundle {bundle.name!r} has no task {ticket.task!r}")
        collector = _Collector()
        trial_run = TrialRun(
            services,
            run_id=self.context.run_id,
            bundle_info=run_doc.get("bundle") or {},
            tasks={ticket.task: bundle.tasks[ticket.task]},
            task_versions=materialized.task_versions,
            seeds=seeds,
            retry_infra=self.context.retry_infra,
            meta=run_doc.get("meta") or {},
            results=collector,  # type: ignore[arg-type]
        )
        trial = Trial(
            trial_run,
            ticket.slot,
            ticket.task,
            ticket.index,
            resume=resume,
            attempt=max(ticket.attempt, attempt if resume is not None else 0),
        )
        await trial.run()
        assert collector.record is not None
        return collector.record.to_dict()

    async def close(self) -> None:
        if self._opened is not None:
            session, self._opened = self._opened[0], None
            await session.close()
