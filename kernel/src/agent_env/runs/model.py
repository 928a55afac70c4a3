"""The values the run pipeline (`agent_env.runs.pipeline`) passes around: what a front end
shows of a run (`RunObserver`, `Progress`), a loaded bundle (`LoadedBundle`), a run whose
document is written (`PreparedRun`) and how it ended (`RunResult`), plus the exit codes."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from agent_env.engine.services import Reporter
from agent_env.runs.request import RunRequest

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.bundles.model import Bundle, Materialized, Task
    from agent_env.engine.trials import Trial, TrialRun
    from agent_env.runs.selection import Selection

#: The exit codes of a run: 0 nothing failed; 1 a trial failed, scored below 1 or failed for
#: an infrastructure reason; 130 / 143 interrupted by SIGINT / SIGTERM.
EXIT_OK, EXIT_FAILED = 0, 1
EXIT_SIGNAL: Mapping[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Progress(Protocol):
    """A live progress display of a run's trials (the CLI's `agent_env.cli.progress`)."""

    retried: int

    def started(self) -> None: ...
    def finished(self, passed: bool) -> None: ...
    def abandoned(self) -> None: ...
    async def ticker(self) -> None: ...
    def close(self) -> None: ...


class RunObserver:
    """What a front end shows of a run; every method may be left as it is (shows nothing)."""

    def notice(self, line: str) -> None:
        """A line about the run (what was stored, an override, a task left out)."""

    def reporter(self, request: RunRequest) -> Reporter:
        """Receives the engine's per-step events of the run's instances."""
        return Reporter()

    def progress(self, request: RunRequest, total: int, kept: int) -> Progress | None:
        """The live display of a run with trials (`request.trials > 1`), or None."""
        return None

    def finished(self, result: RunResult) -> None | Awaitable[None]:
        """The run's result, also when it was cancelled (then called shielded)."""


@attrs.frozen(kw_only=True)
class LoadedBundle:
    """A bundle the pipeline loaded, checked and materialized, with the tasks to run."""

    bundle: Bundle
    materialized: Materialized
    tasks: list[Task]
    evals: list[str]
    #: The spec the run document records (a folder as its absolute path).
    spec: str
    #: What `agent-env run` without `--task`/`--eval` left out (tasks no eval names).
    selection: Selection | None = None
    #: sha256 over the bundle's files (None for a dry run).
    digest: str | None = None


@attrs.define
class PreparedRun:
    """A run whose document is written: `trial_run.trials` are what `execute` runs."""

    request: RunRequest
    trial_run: TrialRun
    loaded: LoadedBundle | None = None
    #: A resumed task instance (`--resume ti-...`): only these instances' records are shown.
    instances: list[str] | None = None
    #: Instances a resume found already decided (nothing to run, their records shown).
    decided: list[dict[str, Any]] = attrs.field(factory=list)
    #: A resumed run: afterwards, tear down what the interrupted run left and no trial adopted.
    reap_used: bool = False

    @property
    def run_id(self) -> str:
        return self.trial_run.run_id

    @property
    def trials(self) -> list[Trial]:
        return self.trial_run.trials


@attrs.frozen(kw_only=True)
class RunResult:
    """How a run ended: its exit code (`exit_code`), the results summary, the records."""

    run_id: str
    exit_code: int
    #: `Results.summary()`: per-task and per-eval pass rates, failures by class.
    summary: dict[str, Any]
    #: The final stored records of the trials shown (single-trial runs, `--json`, resumes).
    records: list[dict[str, Any]]
    #: `[{name, passed, total}]` per eval.
    evals: list[dict[str, Any]]
    #: One trial per task (the per-trial lines) rather than the results table.
    single: bool
    #: Trials that did not finish (the run was interrupted).
    unfinished: int = 0
    #: Tasks no eval names, left out by running every eval.
    not_run: list[str] = attrs.field(factory=list)
