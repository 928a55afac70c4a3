"""Fixtures for agent-env's own tests and for plugin authors (loaded by the pytest plugin).

`plugin_manager` is a fresh manager with the built-ins but no entry-point autoload, bound as
the process-wide one; `register_plugin` adds a plugin for one test; `agent_env_home` points
`AGENT_ENV_HOME` at a temporary folder; `cli_runner` invokes `agent-env` against all of them;
`agent_env_warnings` collects the warnings logged on the `agent_env` logger.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def agent_env_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary `AGENT_ENV_HOME` (and no `AGENT_ENV_CONFIG`), removed after the test."""
    home = tmp_path / "agent-env-home"
    home.mkdir()
    monkeypatch.setenv("AGENT_ENV_HOME", str(home))
    monkeypatch.delenv("AGENT_ENV_CONFIG", raising=False)
    return home


@pytest.fixture
def plugin_manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A fresh `PluginManager` (built-ins only, no entry points), bound for the test."""
    from agent_env.config import reset_configuration
    from agent_env.plugins import PluginManager, set_plugin_manager

    monkeypatch.delenv("AGENT_ENV_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("AGENT_ENV_STRICT_PLUGINS", raising=False)
    manager = PluginManager(autoload=False)
    previous = set_plugin_manager(manager)
    try:
        yield manager
    finally:
        set_plugin_manager(previous)
        reset_configuration()


@pytest.fixture
def register_plugin(plugin_manager: Any) -> Iterator[Callable[..., str]]:
    """`register_plugin(module_or_object, name=None, dist=None)`; unregistered at teardown."""
    names: list[str] = []

    def register(plugin: Any, name: str | None = None, *, dist: str | None = None) -> str:
        registered: str = plugin_manager.register(plugin, name, dist=dist)
        names.append(registered)
        return registered

    yield register
    for name in reversed(names):
        plugin_manager.unregister(name)


class AgentEnvCliRunner:
    """Runs `agent-env ARGS` in-process on a fresh root group bound to the test's manager."""

    def __init__(self, manager: Any):
        from click.testing import CliRunner

        self.manager = manager
        self.runner = CliRunner()

    def invoke(self, args: Sequence[str] | str = (), **kwargs: Any) -> Any:
        from agent_env.testing import root_group

        kwargs.setdefault("catch_exceptions", False)
        return self.runner.invoke(root_group(), args, prog_name="agent-env", **kwargs)


@pytest.fixture
def cli_runner(plugin_manager: Any, agent_env_home: Path) -> AgentEnvCliRunner:
    """`cli_runner.invoke(["plugin", "list"])` -> click `Result` (exit_code, stdout, stderr)."""
    return AgentEnvCliRunner(plugin_manager)


@pytest.fixture
def agent_env_warnings() -> Iterator[list[str]]:
    """The warnings logged on the `agent_env` logger during the test (what the CLI prints to
    stderr), as messages; the once-per-command memory starts empty."""
    import logging

    from agent_env.testing import reset_notices

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    reset_notices()
    logger = logging.getLogger("agent_env")
    handler = Keep(level=logging.WARNING)
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.WARNING)
    yield records
    logger.removeHandler(handler)
    logger.setLevel(old)
