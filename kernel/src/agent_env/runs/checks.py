"""What the run pipeline checks and loads before anything is written: the sandbox provider,
the `--agent`, the seed table, `--start-step`, and loading a bundle (`load_bundle`, which
`agent-env check` uses too). Nothing here runs a trial."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from agent_env.aio import to_thread
from agent_env.errors import BundleError
from agent_env.runs.request import RunRequest

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.agents import AgentKind
    from agent_env.bundles.model import Bundle, Materialized, Task
    from agent_env.engine.run import Session
    from agent_env.engine.seeds import SeedTable


async def load_bundle(
    session: Session,
    spec: str | Bundle,
    *,
    dry_run: bool = False,
    select: Callable[[Bundle], None] | None = None,
) -> tuple[Bundle, Materialized]:
    """(bundle, materialized): `spec` loaded (unless it is a loaded bundle already), checked
    by `select(bundle)` before anything is written, then materialized into the stores (with
    `dry_run`, only what would be written). The caller shows `materialized.lines`."""
    from agent_env.bundles import load_bundle as load
    from agent_env.bundles import materialize

    if isinstance(spec, str):
        # a source plugin may download (hf://): keep the event loop free while it does
        bundle = await to_thread(load, spec, session.plugins)
    else:
        bundle = spec
    if select is not None:
        select(bundle)
    return bundle, await materialize(bundle, session.stores, dry_run=dry_run)


def check_provider(session: Session, provider: str | None) -> None:
    """`PluginError` when `provider` (a name or a fallback chain `a,b`) names a provider no
    plugin registers; `SandboxError` when it is not a name or chain at all."""
    if provider is not None:
        from agent_env.sandbox import provider_chain

        provider_chain(provider, session.plugins.sandbox_providers)


def spec_for_record(spec: str) -> str:
    """The bundle spec a run records: a folder as its absolute path, anything else as given."""
    path = Path(spec).expanduser()
    return str(path.resolve()) if path.is_dir() else spec


def check_agent(session: Session, bundle: Bundle, agent: str) -> type[AgentKind] | None:
    """`--agent` must name an agent folder of the bundle or a registered agent kind: the
    kind's class when it names one (None for a bundle agent folder); `BundleError` with a
    did-you-mean otherwise."""
    from agent_env.errors import PluginError
    from agent_env.suggest import did_you_mean

    try:
        kinds = list(session.plugins.agents.names())
    except PluginError:
        kinds = []
    if agent in kinds:
        kind: type[AgentKind] = session.plugins.agents.get(agent)
        return kind
    if agent in bundle.agents:
        return None
    names = sorted({*bundle.agents, *kinds})
    raise BundleError(
        f"no agent {agent!r}{did_you_mean(agent, names)}; bundle agents: "
        f"{', '.join(sorted(bundle.agents)) or 'none'}; agent types: {', '.join(kinds) or 'none'}"
    )


def with_solution(bundle: Bundle, tasks: list[Task], agent: str) -> tuple[list[Task], list[str]]:
    """(the tasks that ship a solution (a step whose `has_solution()` is true), the names of
    those left out), for an agent whose kind `needs_solution`; `BundleError` when none does."""
    kept = [t for t in tasks if any(s.has_solution() for s in t.steps)]
    if not kept:
        raise BundleError(
            f"--agent {agent}: no selected task of bundle {bundle.name!r} ships a solution "
            "(deploy_agent metadata.solution)"
        )
    return kept, [t.name for t in tasks if t not in kept]


def load_seeds(request: RunRequest, bundle: Bundle) -> SeedTable:
    """The seed table of a run: `request.seeds` (a file), else the bundle's `seeds.toml`."""
    from agent_env.engine.seeds import load_seed_table

    path = Path(request.seeds).expanduser() if request.seeds else None
    return load_seed_table(path, bundle.root)


def start_at(tasks: list[Task], start: int) -> tuple[list[Task], list[str]]:
    """`tasks` without their first `start` steps, and a line per task saying what is skipped."""
    from agent_env.errors import AgentEnvError

    out, lines = [], []
    for task in tasks:
        if start >= len(task.steps):
            raise AgentEnvError(
                f"--start-step {start}: task {task.name!r} has {len(task.steps)} steps "
                f"(0 to {len(task.steps) - 1}): " + ", ".join(s.id for s in task.steps)
            )
        skipped = [s.id for s in task.steps[:start]]
        out.append(attrs.evolve(task, steps=list(task.steps[start:])))
        lines.append(
            f"--start-step {start}: task {task.name} starts at step {task.steps[start].id!r}"
            + (f"; not run: {', '.join(skipped)}" if skipped else "")
        )
    return out, lines
