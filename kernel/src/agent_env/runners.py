"""The seam for runner plugins: the `Runner` contract and `LocalRunner`, plus what a runner
that sends trials to other processes or machines needs (`agent_env.engine.remote`): the run's
`RunContext` (`context_for`), a trial as a `TrialTicket` (`trial.ticket()`, counted back with
`await trial.run_remote(call)`), the `TrialWorker` that runs tickets in a worker process, and
`abandon_attempt` / `final_record` for a worker that died. `agentenv-ray-runner` is built on
this module only."""

from agent_env.engine.remote import (
    RunContext,
    abandon_attempt,
    context_for,
    final_record,
)
from agent_env.engine.runner import LocalRunner, Runner
from agent_env.engine.tickets import TrialTicket
from agent_env.runs.worker import TrialWorker

__all__ = [
    "LocalRunner",
    "RunContext",
    "Runner",
    "TrialTicket",
    "TrialWorker",
    "abandon_attempt",
    "context_for",
    "final_record",
]
