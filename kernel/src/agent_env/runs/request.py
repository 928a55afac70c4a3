"""`RunRequest`: what a front end asks the run pipeline (`agent_env.runs.pipeline`) to do.

Every front end builds one: `agent-env run` from its flags, `task run` / `eval run` with
`stored`, `env deploy` and the OpenEnv server with an already loaded `bundle`, a resume with
`resume`. The pipeline reads nothing else (no click, no globals), so each front end is a
parser in front and a display behind the same prepare -> execute -> record path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.bundles.model import Bundle
    from agent_env.resources import InstanceKey


@attrs.frozen(kw_only=True)
class StoredRef:
    """A stored task or eval to run (`task run --id`, `eval run --id`), or an env to deploy
    (`env deploy --id`: a one-step `deploy_env` task)."""

    kind: str
    ref: str
    version: int | None = None
    #: For an env or agent (`env deploy`, `a2a-agent deploy`): the one step that deploys it (id,
    #: type, fields); the kernel adds the entity's name where the step type refers to it.
    step: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class RunRequest:
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
    #: `--budget-usd`: stop starting trials once this many US dollars are spent (default:
    #: `[run] budget_usd`; `agent_env.costs`).
    budget_usd: float | None = None
    #: `--pool N`: warm instances of each task kept deployed and reset (not redeployed) between
    #: its trials (default `[run] pool`, 0: none; `agent_env.runs.pool`).
    pool: int | None = None
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
    #: A stored task or eval to run instead of `spec` (`task run`, `eval run`).
    stored: StoredRef | None = None
    #: `--start-step N`: every task starts at its N-th step (0-based).
    start_step: int | None = None
    #: `--from-snapshot ID[@N]`: every trial restores this task snapshot (`agent_env.runs.fork`);
    #: `--fork N`: that many children (trials) from it.
    from_snapshot: str | None = None
    fork: int | None = None
    #: An already loaded bundle to run instead of `spec` (`env deploy`, the OpenEnv server,
    #: `agent_env.testing`); compared by identity.
    bundle: Bundle | None = attrs.field(default=None, eq=False, repr=False)
    #: The front end that asked (recorded in the run document as `front_end`): `run`,
    #: `task run`, `eval run`, `env deploy`, `explorer`, `openenv`, `testing`...
    front_end: str = "run"
    #: Instance resources every task instance of the run starts with (`ctx.instance_resource`):
    #: how a front end that plays a part in the run (the OpenEnv client playing the agent)
    #: reaches the steps, without a process-wide table.
    resources: Mapping[InstanceKey[Any], Any] = attrs.field(factory=dict, eq=False, repr=False)

    @property
    def many(self) -> bool:
        """More than one trial per task: the quiet reporter and the results table."""
        return self.trials > 1
