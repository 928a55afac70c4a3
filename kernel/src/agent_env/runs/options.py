"""`RunOptions`: the options of one `agent-env run`, built once by the front end."""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class RunOptions:
    """What a run was asked to do; every part of the run pipeline reads this typed value."""

    spec: str | None = None
    task_names: tuple[str, ...] = ()
    eval_names: tuple[str, ...] = ()
    keep: bool = False
    dry_run: bool = False
    as_json: bool = False
    #: A task instance (`ti-...`) or run (`run-...`) id to resume.
    resume: str | None = None
    #: `--sandbox`: the provider (or fallback chain `a,b`) every step deploys on, also the
    #: ones that name their own `sandbox_type` (`agent_env.runs.overrides`).
    provider: str | None = None
    #: `--agent` / `--model`: deployed in every `deploy_agent` step instead of the task's choice.
    agent: str | None = None
    model: str | None = None
    #: `--judge-model` / `--user-model`: the judges' and simulated users' model for this run
    #: (`agent_env.runs.overrides` sets them on the steps that have one).
    judge_model: str | None = None
    user_model: str | None = None
    trials: int = 1
    concurrency: int | None = None
    sandbox_concurrency: int | None = None
    retry_infra: int | None = None
    #: A seed table file (`--seeds`), else the bundle's `seeds.toml`.
    seeds: str | None = None
    #: Also write one JSON line per trial to this file (`--export`).
    export: str | None = None
    #: `--wide`: the results table shows the pass@k columns (beyond 100 columns).
    wide: bool = False
    #: `--runner` / `--address`: the runner type (default `[run] runner`) and, for a runner that
    #: fans trials out over a cluster, the cluster's address (default `[run.<runner>] address`).
    runner: str | None = None
    runner_address: str | None = None

    @property
    def many(self) -> bool:
        """More than one trial per task: the quiet reporter and the results table."""
        return self.trials > 1
