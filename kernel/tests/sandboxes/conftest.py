"""Plugins for the sandbox tests: the real hook module registered through pluggy."""

from __future__ import annotations

import types

import pluggy
import pytest

from agent_env import hookspecs
from agent_env.registry import Registry


def builtin_plugins() -> types.SimpleNamespace:
    """A plugin facade with the sandbox-provider registry filled by the built-in hooks."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    from agent_env.sandboxes import hooks

    pm.register(hooks)
    registry = Registry("sandbox provider")
    pm.hook.agentenv_register_sandbox_providers(registry=registry)
    return types.SimpleNamespace(sandbox_providers=registry)


@pytest.fixture
def plugins():
    return builtin_plugins()


@pytest.fixture
def anyio_backend():
    return "asyncio"
