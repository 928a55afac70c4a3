"""Trials that run in another process, or on another machine: what a distributed runner's
workers need, and nothing about any one engine.

The controller describes its run once (`RunContext`: where the project's config is, which
bundle content, the run's options) and each trial as a small `TrialTicket` (slot, task, trial
index, attempt): both are plain data, so they pickle and travel. A worker (`TrialWorker`) opens
its own session from the context, loads the bundle pinned by its digest (from the recorded
spec when the content there is the same, else from the archive the controller published to
the object store), then runs tickets through the run pipeline (`agent_env.runs.worker`). A ticket's trial writes its records to the stores exactly
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
    Status,
    attempt_id,
    now_iso,
)
from agent_env.engine.stored import latest_attempt
from agent_env.engine.tickets import bundle_digest, bundle_files
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
        if record.retryable():
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
