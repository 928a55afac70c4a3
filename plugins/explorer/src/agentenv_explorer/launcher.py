"""Starting and cancelling runs from the API, in the explorer's own process through the run
service `agent-env run` uses (`agent_env.runs.service`): the same loading, records, runner and
clean-up. Each run has its own session and cancel scope; a cancel cancels that scope, which
records the running trials as cancelled and tears their sandboxes down, as Ctrl-C does for
the CLI. The engine's progress events go to a log file per run beside the explorer's state."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import attrs

from agent_env.runs.service import Reporter
from agent_env.suggest import did_you_mean

#: The fields of a run request, each an `agent-env run` option.
FIELDS = ("spec", "task", "eval", "agent", "model", "trials", "sandbox", "concurrency")
#: How long a started run may take to write its run record (materializing, image checks).
RECORD_TIMEOUT = 180.0
#: How long stopping the explorer waits for its runs to tear down after cancelling them.
STOP_TIMEOUT = 120.0


class RequestError(ValueError):
    """A run request the explorer refuses (HTTP 400 / 422)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _names(request: Mapping[str, Any], name: str) -> tuple[str, ...]:
    values = request.get(name) or []
    values = [values] if isinstance(values, str) else values
    if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
        raise RequestError(f"{name}: a name or a list of names")
    return tuple(values)


def run_options(request: Mapping[str, Any], cwd: Path) -> Any:
    """The `RunOptions` of a run request (a relative folder spec is taken from `cwd`);
    `RequestError` naming the bad field."""
    from agent_env.runs.service import RunOptions

    unknown = [k for k in request if k not in FIELDS]
    if unknown:
        name = unknown[0]
        raise RequestError(
            f"unknown field {name!r}{did_you_mean(name, FIELDS)}; fields: {', '.join(FIELDS)}"
        )
    spec = request.get("spec")
    if not isinstance(spec, str) or not spec.strip():
        raise RequestError("spec: required, a bundle folder, installed bundle or hf:// spec")
    folder = Path(spec).expanduser()
    if not folder.is_absolute() and (cwd / folder).exists():
        spec = str((cwd / folder).resolve())
    strings: dict[str, str | None] = {}
    for name in ("agent", "model", "sandbox"):
        value = request.get(name)
        if value not in (None, "") and not isinstance(value, str):
            raise RequestError(f"{name}: a string")
        strings[name] = value or None
    counts: dict[str, int | None] = {}
    for name, most in (("trials", 10_000), ("concurrency", 1_000)):
        value = request.get(name)
        if value in (None, ""):
            counts[name] = None
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            raise RequestError(f"{name}: a whole number from 1 to {most}")
        counts[name] = value
    return RunOptions(
        spec=spec,
        task_names=_names(request, "task"),
        eval_names=_names(request, "eval"),
        agent=strings["agent"],
        model=strings["model"],
        provider=strings["sandbox"],
        trials=counts["trials"] or 1,
        concurrency=counts["concurrency"],
    )


class LogReporter(Reporter):
    """The engine's progress events as lines in the run's log file (secrets redacted)."""

    def __init__(self, path: Path):
        self.path = path

    def write(self, line: str) -> None:
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    def _where(self, instance: Any) -> str:
        return f"[{instance.task_name} #{instance.record.get('trial', 0)}]"

    def step_started(self, instance: Any, step_id: str) -> None:
        self.write(f"{self._where(instance)} {step_id}: started")

    def step_finished(self, instance: Any, step_id: str, status: str, seconds: float, error):
        said = f": {instance.services.redactor(error)}" if error else ""
        self.write(f"{self._where(instance)} {step_id}: {status} in {seconds:.2f}s{said}")

    def log(self, instance: Any, step_id: str | None, message: str) -> None:
        self.write(
            f"{self._where(instance)} {step_id or ''}: {instance.services.redactor(message)}"
        )

    def instance_finished(self, instance: Any, record: dict[str, Any]) -> None:
        self.write(f"{self._where(instance)} {record.get('outcome') or record.get('status')}")


@attrs.define
class Launched:
    """A run this explorer started: its cancel scope, its log, whether it is still going."""

    log: Path
    scope: anyio.CancelScope = attrs.field(factory=anyio.CancelScope)
    run_id: str | None = None
    #: The planned trials' instance ids (first attempts), in plan order.
    instances: list[str] = attrs.field(factory=list)
    error: str | None = None
    running: bool = True
    planned: anyio.Event = attrs.field(factory=anyio.Event)
    finished: anyio.Event = attrs.field(factory=anyio.Event)


class Launcher:
    """Runs bundles in this process, each in a task of the app's task group (`attach` gives
    it at start-up)."""

    def __init__(self, documents: Any, *, cwd: Path, log_dir: Path):
        self.documents = documents
        self.cwd = cwd
        self.log_dir = log_dir
        self.runs: dict[str, Launched] = {}
        self._group: Any = None

    def attach(self, group: Any) -> None:
        self._group = group

    async def start(self, request: Mapping[str, Any]) -> Launched:
        """Start the run `request` asks for (`FIELDS`); see `launch`."""
        return await self.launch(run_options(request, self.cwd))

    async def launch(self, options: Any, stored: tuple[str, str, int | None] | None = None):
        """Start a run of `options` (or of the stored task or eval `stored` names: `(kind, id,
        version)`); returns once its run document is written. `RequestError` (422) when it
        could not start, with the reason."""
        if self._group is None:
            raise RequestError("the explorer is not serving (no task group)", 503)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d%H%M%S")
        launched = Launched(log=self.log_dir / f"run-{stamp}-{len(self.runs)}.log")
        launched.log.touch(mode=0o600)
        self._group.start_soon(self._run, launched, options, stored)
        with anyio.move_on_after(RECORD_TIMEOUT):
            await launched.planned.wait()
        if launched.run_id is None:
            launched.scope.cancel()
            reason = launched.error or f"the run did not start within {RECORD_TIMEOUT:.0f}s"
            raise RequestError(f"the run could not start: {reason}", 422)
        self.runs[launched.run_id] = launched
        return launched

    async def _run(self, launched: Launched, options: Any, stored: Any) -> None:
        from agent_env.runs import service

        reporter = LogReporter(launched.log)
        try:
            with launched.scope:
                session = await service.open_session()
                try:
                    trial_run = await service.prepare(
                        session, options, reporter=reporter, stored=stored
                    )
                    launched.run_id = trial_run.run_id
                    launched.instances = [t.id for t in trial_run.trials]
                    reporter.write(f"run {trial_run.run_id}: {len(trial_run.trials)} trial(s)")
                    launched.planned.set()
                    await service.execute(session, trial_run)
                    reporter.write("finished")
                finally:
                    await session.close()  # tears down what is still live (shielded)
            if launched.scope.cancelled_caught:
                reporter.write("cancelled; sandboxes torn down")
        except Exception as exc:  # the run's failure is the run's, not the explorer's
            launched.error = (exc.args[0] if isinstance(exc, KeyError) else str(exc)) or repr(exc)
            reporter.write(f"error: {launched.error}")
        finally:
            launched.running = False
            launched.planned.set()
            launched.finished.set()

    def cancel(self, run_id: str) -> bool:
        """Cancel the run's scope; False when it had already ended. `KeyError` when this
        explorer did not start it."""
        launched = self.runs[run_id]
        if not launched.running:
            return False
        launched.scope.cancel()
        return True

    async def stop_all(self) -> None:
        """At shutdown: cancel every run still going and wait for its teardown."""
        live = [r for r in self.runs.values() if r.running]
        for launched in live:
            launched.scope.cancel()
        with anyio.move_on_after(STOP_TIMEOUT):
            for launched in live:
                await launched.finished.wait()
