"""`agent_env.openenv.build_app(bundle, ...)`: every task of a bundle as an OpenEnv environment.

A thin re-export of the `agentenv-openenv` plugin's `build_app` (see docs/openenv.md); without
the plugin it fails with the extra to install. `host` is the engine facade the plugin runs
episodes through (one task instance per episode)."""

from __future__ import annotations

from typing import Any

INSTALL_HINT = "agent_env.openenv requires pip install 'agentenv-framework[openenv]'"


def build_app(bundle: Any, **options: Any) -> Any:
    """The OpenEnv server (a FastAPI app) for `bundle`: a folder, an installed bundle's name,
    or a mapping of split names to either; options as `agentenv_openenv.build_app`."""
    try:
        from agentenv_openenv.app import build_app as build
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] in ("agentenv_openenv", "openenv", "fastapi"):
            raise ImportError(INSTALL_HINT) from e
        raise
    return build(bundle, **options)


__all__ = ["INSTALL_HINT", "build_app"]
