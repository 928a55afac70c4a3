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
        group.add_lazy_command(
            "replay",
            "agentenv_grading.cli_runs:replay",
            "Replay a trial's recorded tool calls against a fresh env; report divergences.",
        )


@hookimpl
def agentenv_register_commands(group):
    group.add_lazy_command(
        "tasks",
        "agentenv_grading.cli_tasks:tasks",
        "Tasks across runs: the ledger (pass rates, flakiness) and health checks.",
    )


@hookimpl
def agentenv_register_agents(registry):
    registry.add_lazy("do-nothing", "agentenv_grading.agents:DoNothingAgent")
    registry.add_lazy("replay", "agentenv_grading.agents:ReplayAgent")


@hookimpl
def agentenv_register_step_types(registry):
    registry.add_lazy("call_reward_verifier", "agentenv_grading.call_reward:CallRewardVerifier")


@hookimpl
def agentenv_run_finished(record):
    from agentenv_grading import ledger

    ledger.add_trials([record.to_dict()])


@hookimpl
def agentenv_sample_task(sampler, tasks, task_version):
    from agentenv_grading import curriculum

    return curriculum.sample(sampler, tasks)
