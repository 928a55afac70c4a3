"""What a test kit needs from the kernel's engine, as public names; the kits themselves (the
pytest fixtures and the contract suites) are the `agentenv-testing` package (`agentenv_testing`,
a pytest plugin through `pytest11`).

`run_task` runs one task of a bundle folder through the run pipeline and replays its journal;
`entities` opens versioned entities over a document store; `check_run_overrides` checks a step
type's declared CLI overrides; `root_group` builds a fresh `agent-env` command group;
`reset_notices` forgets the once-per-command warnings already shown; `require` (in
`agent_env.testing.require`) skips a test locally and fails it on CI when a daemon or emulator
it needs is missing (usable without pytest installed until it skips). The earlier names (`agent_env.testing.StepTypeContract`, the
fixtures, ...) still resolve, from agentenv-testing, on first use: importing this module imports
neither the engine nor the contracts.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.plugins import PluginManager
    from agent_env.stores.base import DocumentStore

__all__ = ["check_run_overrides", "entities", "reset_notices", "root_group", "run_task"]

#: The distribution that holds the fixtures and the contract suites.
KIT = "agentenv-testing"


async def run_task(
    plugins: PluginManager, root: Path, home: Path, task: str = "t"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run `task` of the bundle at `root` through the run pipeline, as `agent-env run --task`
    would; returns `(record, state)` (the final state replayed from the instance's journal).
    Sandboxes go under `home` (`AGENT_ENV_HOME`), which must be empty of leases afterwards."""
    from agent_env.config import load_config
    from agent_env.engine.journal import Journal
    from agent_env.engine.run import Session
    from agent_env.engine.state import replay
    from agent_env.runs.pipeline import RunPipeline
    from agent_env.runs.request import RunRequest

    config = load_config(root, plugins=plugins)  # steps may read `ctx.config`
    if Path(config.home).resolve() != Path(home).resolve():
        raise ValueError(f"run_task: home {home} is not AGENT_ENV_HOME ({config.home})")
    session = await Session.open(plugins=plugins, config=config)
    try:
        request = RunRequest(spec=str(root), task_names=(task,), front_end="testing")
        result = await RunPipeline(session).run(request)
        (record,) = result.records
        _, entries = await Journal.open(session.stores.documents, record["id"])
        return record, replay(entries)
    finally:
        await session.close()


def entities(documents: DocumentStore) -> Any:
    """Versioned entities (`put`, `get`, `versions`, ...) over `documents`, as bundles store
    them (what `Stores.entities` is over the configured document store)."""
    from agent_env.stores.versioned import Entities

    return Entities(documents)


def check_run_overrides(step_type: type) -> Mapping[str, Any]:
    """`step_type.run_overrides`, checked (each key a run option, each field one of the type's);
    a wrong declaration raises `PluginError` naming the step type."""
    from agent_env.runs.overrides import declared

    return declared(step_type)


def root_group() -> Any:
    """A fresh `agent-env` root command group (click), bound to the current plugin manager."""
    from agent_env.cli.root import build_cli

    return build_cli()


def reset_notices() -> None:
    """Forget which once-per-command warnings were shown (each test starts as a new command)."""
    from agent_env import notices

    notices.reset()


def __getattr__(name: str) -> Any:
    """The names that moved to agentenv-testing (`StepTypeContract`, `plugin_manager`, ...)."""
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        kit = importlib.import_module("agentenv_testing")
    except ModuleNotFoundError as exc:
        if exc.name != "agentenv_testing":
            raise
        raise AttributeError(
            f"agent_env.testing.{name} moved to the {KIT} package (import it from "
            f"agentenv_testing); install it with: pip install {KIT}"
        ) from None
    try:
        return getattr(kit, name)
    except AttributeError:
        contracts = importlib.import_module("agentenv_testing.contracts")
        if name in contracts.__all__:
            return getattr(contracts, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
