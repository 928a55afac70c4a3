"""agent-env hooks of agentenv-grading: commands, agent kinds, the call-reward verifier step,
the split sampler and the ledger's `run_finished` (everything heavy is imported when used)."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"


@hookimpl
def agentenv_register_subcommands(parent, group):
    if parent == "runs":
        group.add_lazy_command(
            "regrade",
            "agentenv_grading.cli_runs:regrade",
            "Re-score a run's stored trials with new verifiers, without deploying anything.",
        )
