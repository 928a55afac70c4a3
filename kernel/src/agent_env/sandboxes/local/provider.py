"""The `local` provider: creates, reconnects and reaps local sandboxes under its root, and
refuses the limits a host process cannot be held to."""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from agent_env.convert import StructureProblems, structure
from agent_env.errors import SandboxError
from agent_env.notices import warn_once
from agent_env.sandbox import SandboxProvider, SandboxSpec
from agent_env.sandboxes import procs
from agent_env.sandboxes.local import isolation
from agent_env.sandboxes.local.sandbox import LocalSandbox

_NETWORKS = (None, "bridge", "host", "run")
#: `create` stages a sandbox's meta folder as `.<id>.meta.tmp` and renames it into place.
_STAGING_SUFFIX = ".meta.tmp"
#: A staging folder whose owner cannot be read is left alone this long (a creation takes
#: milliseconds; another process may be between its `mkdir` and its first write).
STAGING_GRACE_SECONDS = 60.0


@attrs.frozen(kw_only=True)
class LocalSettings:
    """The `[sandbox.local]` table."""

    #: Where the sandboxes' folders live (default: `<home>/sandboxes`).
    root: str | None = None
    #: The bubblewrap executable processes run under (`isolation`); "" turns isolation off.
    bwrap: str = isolation.DEFAULT_BWRAP
    #: Run untrusted agents even where processes cannot be isolated (bwrap missing or
    #: refused): their rewards are then worthless against a hostile agent.
    allow_unisolated: bool = False


def _read_settings(settings: Mapping[str, Any]) -> LocalSettings:
    """`[sandbox.local]` structured strictly; `SandboxError` naming every problem (an unknown
    setting with a did-you-mean and the known ones)."""
    try:
        # a path set in code (`configure(sandbox=...)`) is as good as its string
        data = {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in settings.items()}
        parsed: LocalSettings = structure(data, LocalSettings, noun="setting")
    except StructureProblems as e:
        known = ", ".join(f.name for f in attrs.fields(LocalSettings))
        problems = "; ".join(
            f"has {p}; known: {known}" if p.startswith("unknown setting") else p for p in e.problems
        )
        raise SandboxError(f"[sandbox.local] {problems}") from None
    return parsed


class LocalProvider(SandboxProvider):
    """Sandboxes that are a folder plus host processes (what `hello` uses; no Docker)."""

    type = "local"
    #: A local sandbox is a folder until it starts a process (a crash leaves the folder to the
    #: next command's reaper): `SandboxManager` only arms the watchdog, the sandbox starts it.
    watch_on_process = True

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        parsed = _read_settings(self.settings)
        from agent_env.paths import home as default_home

        base = home or default_home()
        self.lease_dir = base / "leases"
        self.root = Path(parsed.root).expanduser() if parsed.root else base / "sandboxes"
        self.bwrap_command = parsed.bwrap
        self.allow_unisolated = parsed.allow_unisolated
        #: What no sandbox process may see: the home (stores, journals) and the sandboxes.
        self.hidden = (base, self.root)

    @property
    def isolation(self) -> isolation.Probe:
        """Whether processes run under bubblewrap here (probed once per process); when they
        cannot, the reason is logged once."""
        found = isolation.probe(self.bwrap_command)
        if not found.available:
            warn_once(
                [
                    f"local sandboxes are NOT isolated: {found.reason}. Agents, envs and "
                    "verifiers run as plain host processes; untrusted agents are refused "
                    "unless you pass --allow-unisolated or set [sandbox.local] allow_unisolated"
                ]
            )
        return found

    def refuse_untrusted(self, agent: str) -> None:
        """SandboxError when agent `agent` (any but an oracle or scripted one) would act where
        processes are not isolated and the user did not opt out."""
        found = self.isolation
        if found.available or self.allow_unisolated:
            return
        raise SandboxError(
            f"agent {agent!r} is untrusted and local sandboxes cannot be isolated here "
            f"({found.reason}): it could read the answer key and write its own reward. "
            "Install bubblewrap, run on another provider (--sandbox docker), or accept "
            "worthless rewards with `agent-env run --allow-unisolated` "
            "([sandbox.local] allow_unisolated = true)"
        )

    async def create(self, spec: SandboxSpec) -> LocalSandbox:
        _refuse_unenforceable(spec)
        sandbox_id = f"local-{uuid.uuid4().hex[:12]}"
        folder = self.root / sandbox_id
        meta = self.root / f"{sandbox_id}.meta"
        # The meta folder (with the owner labels) appears atomically before the work folder,
        # so a SIGKILL at any point leaves either nothing visible or something `reap` finds.
        staging = self.root / f".{sandbox_id}{_STAGING_SUFFIX}"
        staging.mkdir(parents=True)
        sandbox = LocalSandbox(
            sandbox_id,
            folder,
            staging,
            labels=dict(spec.labels),
            env_vars=dict(spec.env_vars),
            read_only=_read_only(spec.settings),
            new=True,
            **self._isolation_args(),
        )
        sandbox.save()
        os.rename(staging, meta)
        sandbox.meta = meta
        folder.mkdir()
        return sandbox

    def _isolation_args(self) -> dict[str, Any]:
        return {"bwrap": self.isolation.executable, "hidden": self.hidden}

    async def connect(self, info: Mapping[str, Any]) -> LocalSandbox:
        sandbox_id = info.get("id")
        if not isinstance(sandbox_id, str) or not sandbox_id.startswith("local-"):
            raise SandboxError(f"not a local sandbox description: {dict(info)!r}")
        meta = self.root / f"{sandbox_id}.meta"
        try:
            state = json.loads((meta / "state.json").read_text())
        except FileNotFoundError:
            raise SandboxError(f"local sandbox {sandbox_id} is gone (no {meta})") from None
        sandbox = LocalSandbox(
            sandbox_id,
            Path(state["folder"]),
            meta,
            labels=state.get("labels", {}),
            env_vars=state.get("env_vars", {}),
            read_only=state.get("read_only", ()),
            **self._isolation_args(),
        )
        sandbox.restore_tracked(state.get("processes", []))
        return sandbox

    async def reap(self, *, adopt: Sequence[str] = ()) -> list[str]:
        """Tear down every local sandbox under the root whose owner (labels) is dead."""
        reaped = []
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        for name in sorted(names):
            if name.startswith(".") and name.endswith(_STAGING_SUFFIX):
                if self._abandoned_staging(self.root / name):
                    shutil.rmtree(self.root / name, ignore_errors=True)
                    reaped.append(name[1 : -len(_STAGING_SUFFIX)])
                continue
            if not name.endswith(".meta"):
                continue
            sandbox_id = name[: -len(".meta")]
            if sandbox_id in adopt:
                continue
            if not (self.root / name / "state.json").exists():
                # A meta folder appears with its state file (renamed into place) and loses it
                # only in a teardown: this is what a teardown cut short (a SIGKILL) left.
                shutil.rmtree(self.root / sandbox_id, ignore_errors=True)
                shutil.rmtree(self.root / name, ignore_errors=True)
                reaped.append(sandbox_id)
                continue
            try:
                sandbox = await self.connect({"id": sandbox_id})
            except SandboxError:
                continue
            if self._leased_alive(sandbox_id) or owner_alive(sandbox.labels):
                continue
            await sandbox.teardown()
            reaped.append(sandbox_id)
        return reaped

    @staticmethod
    def _abandoned_staging(staging: Path) -> bool:
        """A creation killed before its rename (nothing else uses the folder): its owner (the
        labels it staged) is dead, or, when it holds no readable owner, it is older than
        `STAGING_GRACE_SECONDS`."""
        try:
            labels = json.loads((staging / "state.json").read_text()).get("labels") or {}
        except (OSError, ValueError, AttributeError):
            labels = {}
        if procs.ProcessIdentity.from_labels(labels) is not None:
            return not owner_alive(labels)
        try:
            age = time.time() - staging.stat().st_mtime
        except FileNotFoundError:
            return False
        return age > STAGING_GRACE_SECONDS

    def _leased_alive(self, sandbox_id: str) -> bool:
        """A lease (written by SandboxManager, re-owned on adopt) overrides the labels."""
        from agent_env.sandboxes import leases

        lease = leases.read(self.lease_dir / f"{sandbox_id}{leases.SUFFIX}")
        return lease is not None and leases.owner_alive(lease)


def owner_alive(labels: Mapping[str, str]) -> bool:
    """Whether the process named by `owner_pid`/`owner_start_time`/`owner_host` still runs.

    A sandbox without an owner, or owned on another host, counts as alive (not ours to judge).
    """
    owner = procs.ProcessIdentity.from_labels(labels)
    return owner is None or owner.alive()


def _refuse_unenforceable(spec: SandboxSpec) -> None:
    if spec.image:
        raise SandboxError(
            f"the local sandbox runs host processes and cannot run image {spec.image!r}; "
            "use a provider that runs images (e.g. --sandbox docker) or drop `image`"
        )
    for field, value in (
        ("cpus", spec.cpus),
        ("memory", spec.memory),
        ("pids", spec.pids),
    ):
        if value is not None:
            raise SandboxError(
                f"the local sandbox cannot enforce a {field} limit ({value!r}); "
                "use a provider that can (e.g. docker) or drop the limit"
            )
    if spec.network not in _NETWORKS:
        raise SandboxError(
            f"the local sandbox cannot enforce network {spec.network!r} (its processes share "
            f"the host network); supported: bridge, host, run"
        )
    unknown = sorted(set(spec.settings) - {"read_only"})
    if unknown:
        raise SandboxError(f"the local sandbox does not understand settings {unknown}")
    _read_only(spec.settings)


def _read_only(settings: Mapping[str, Any]) -> tuple[str, ...]:
    """`settings["read_only"]`: absolute host folders the sandbox's processes see read-only
    (under isolation; unisolated processes see the whole host anyway)."""
    paths = settings.get("read_only") or ()
    if isinstance(paths, str) or not all(isinstance(p, str) and p.startswith("/") for p in paths):
        raise SandboxError(f"settings read_only: a list of absolute paths, not {paths!r}")
    return tuple(paths)
