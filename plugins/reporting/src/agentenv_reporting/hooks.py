"""agent-env hooks of agentenv-reporting: the `runs list`, `runs show`, `runs export` and
`runs compare` commands (imported only when they run)."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"

#: `agent-env runs` subcommand -> (import path, short help: the first words of the command's
#: docstring, as `runs --help` showed them when the command was defined there).
RUNS_COMMANDS: dict[str, tuple[str, str]] = {
    "list": (
        "agentenv_reporting.cli_runs:list_runs",
        "The newest runs: id, when, bundle, and how their task...",
    ),
    "show": (
        "agentenv_reporting.cli_runs:show",
        "A run (`run-...`: its results and the trials that did not...",
    ),
    "export": (
        "agentenv_reporting.cli_export:export",
        "Every trial of RUN... in one file (rows, chat-jsonl, parquet, ...) or pushed as a dataset.",
    ),
    "compare": (
        "agentenv_reporting.cli_compare:compare",
        "RUN_B against RUN_A: pass rates, their change and the trials that flipped.",
    ),
}


@hookimpl
def agentenv_register_subcommands(parent, group):
    if parent == "runs":
        for name, (path, short_help) in RUNS_COMMANDS.items():
            group.add_lazy_command(name, path, short_help)
