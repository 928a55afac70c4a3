"""Starting and cancelling runs from the API: each run is an `agent-env run` child process, the
same run service and records as the command line, so a run started here survives nothing
the CLI would not, is resumable the same way, and a cancel is the CLI's SIGTERM handling
(trials recorded as cancelled, sandboxes torn down). Its output goes to a log file beside
the explorer's state."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import attrs

from agent_env.suggest import did_you_mean

#: The fields of a run request, each an `agent-env run` option.
FIELDS = ("spec", "task", "eval", "agent", "model", "trials", "sandbox", "concurrency")
#: How long a started run may take to write its run record (materializing, image checks).
RECORD_TIMEOUT = 180.0
#: How long stopping the explorer waits for its runs to tear down after SIGTERM.
STOP_TIMEOUT = 60.0


class RequestError(ValueError):
    """A run request the explorer refuses (HTTP 400 / 422)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def command_line(request: Mapping[str, Any]) -> list[str]:
    """The `agent-env run` argv for a run request; `RequestError` naming the bad field."""
    unknown = [k for k in request if k not in FIELDS]
    if unknown:
        name = unknown[0]
        raise RequestError(
            f"unknown field {name!r}{did_you_mean(name, FIELDS)}; fields: {', '.join(FIELDS)}"
        )
    spec = request.get("spec")
    if not isinstance(spec, str) or not spec.strip():
        raise RequestError("spec: required, a bundle folder, installed bundle or hf:// spec")
    args = ["run", spec]
    for name in ("task", "eval"):
        values = request.get(name) or []
        values = [values] if isinstance(values, str) else values
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            raise RequestError(f"{name}: a name or a list of names")
        for value in values:
            args += [f"--{name}", value]
    for name in ("agent", "model", "sandbox"):
        value = request.get(name)
        if value in (None, ""):
            continue
        if not isinstance(value, str):
            raise RequestError(f"{name}: a string")
        args += [f"--{name}", value]
    for name, most in (("trials", 10_000), ("concurrency", 1_000)):
        value = request.get(name)
        if value in (None, ""):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            raise RequestError(f"{name}: a whole number from 1 to {most}")
        args += [f"--{name}", str(value)]
    return args


def _agent_env() -> list[str]:
    script = Path(sys.executable).with_name("agent-env")
    if script.is_file():
        return [str(script)]
    found = shutil.which("agent-env")
    if found:
        return [found]
    return [
        sys.executable,
        "-c",
        "import sys; from agent_env.cli.main import main; sys.exit(main())",
    ]


@attrs.define
class Launched:
    """A run this explorer started."""

    run_id: str
    process: subprocess.Popen
    log: Path
    started: float

    @property
    def running(self) -> bool:
        return self.process.poll() is None


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class Launcher:
    """Starts `agent-env run` children in `cwd` (where the explorer found its config) and
    finds each one's run record by the child's pid (the record's `owner.pid`)."""

    def __init__(self, documents: Any, *, cwd: Path, log_dir: Path):
        self.documents = documents
        self.cwd = cwd
        self.log_dir = log_dir
        self.runs: dict[str, Launched] = {}
        self._lock = anyio.Lock()

    async def start(self, request: Mapping[str, Any]) -> Launched:
        args = command_line(request)
        spec = Path(str(request["spec"])).expanduser()
        if not spec.is_absolute() and (self.cwd / spec).exists():
            args[1] = str((self.cwd / spec).resolve())
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = (
            self.log_dir / f"run-{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}-{len(self.runs)}.log"
        )
        env = {k: v for k, v in os.environ.items() if k != "AGENT_ENV_EXPLORER_TOKEN"}
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [*_agent_env(), *args],
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        run_id = await self._run_id(process, log)
        launched = Launched(run_id=run_id, process=process, log=log, started=time.time())
        self.runs[run_id] = launched
        return launched

    async def _run_id(self, process: subprocess.Popen, log: Path) -> str:
        deadline = time.monotonic() + RECORD_TIMEOUT
        while True:
            page = await self.documents.query(
                "runs",
                where={"owner.pid": process.pid},
                order_by="created_at",
                descending=True,
                limit=1,
            )
            if page.items:
                return page.items[0][0]
            code = process.poll()
            if code is not None:
                raise RequestError(
                    f"agent-env run exited with {code} before it started a run:\n{_tail(log)}",
                    status=422,
                )
            if time.monotonic() > deadline:
                process.terminate()
                raise RequestError(f"the run did not start within {RECORD_TIMEOUT:.0f}s", 504)
            await anyio.sleep(0.1)

    def cancel(self, run_id: str) -> bool:
        """SIGTERM the run's process group; False when it had already ended. `KeyError` when
        this explorer did not start it."""
        launched = self.runs[run_id]
        if not launched.running:
            return False
        os.killpg(launched.process.pid, signal.SIGTERM)
        return True

    async def stop_all(self) -> None:
        """At shutdown: cancel every run still going and wait for its teardown."""
        live = [r for r in self.runs.values() if r.running]
        for launched in live:
            try:
                os.killpg(launched.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STOP_TIMEOUT
        while any(r.running for r in live) and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        for launched in live:
            if launched.running:
                os.killpg(launched.process.pid, signal.SIGKILL)
