"""The installed CLI agents (npm packages, by version and Node major) as a cache kind."""

from __future__ import annotations

from pathlib import Path

from agent_env.caches import FolderCache


class CliAgentCache(FolderCache):
    type = "cli-agents"
    description = "CLI coding agents installed from npm (Claude Code, Codex, ...)"

    def roots(self) -> list[Path]:
        from agentenv_cli_agents.install import cache_root

        return [cache_root()]
