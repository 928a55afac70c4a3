"""agent-env hooks of the explorer plugin: the `up` command (imported only when it runs)."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"


@hookimpl
def agentenv_register_commands(group):
    group.add_lazy_command(
        "up", "agentenv_explorer.command:up", "Start the web explorer of runs and stores."
    )


#: `[explorer]` in `.agentenv/config.toml`: where `agent-env up` listens, the extra Host names
#: it answers to (behind a proxy), and the token it requires when bound beyond loopback
#: (usually `token = "env:AGENT_ENV_EXPLORER_TOKEN"`).
CONFIG_SECTIONS = {
    "explorer": {"host": "127.0.0.1", "port": 8234, "allowed_hosts": [], "token": None}
}
