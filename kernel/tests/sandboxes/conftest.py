"""Plugins for the sandbox tests: the real plugin manager with only the built-in plugins."""

from __future__ import annotations

import pytest

from agent_env.plugins import PluginManager


def builtin_plugins() -> PluginManager:
    """The kernel's built-ins (the `local` provider among them), no entry points."""
    return PluginManager(autoload=False)


@pytest.fixture
def plugins():
    return builtin_plugins()


@pytest.fixture
def anyio_backend():
    return "asyncio"
