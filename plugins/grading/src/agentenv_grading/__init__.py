"""agentenv-grading: what a lab does with stored trials after they ran.

`regrade` re-scores stored trials with new or changed verifiers from the record alone;
`replay` plays a trial's recorded tool calls against a fresh env and compares them call by
call; `call_reward` is the verifier step that scores single gateway calls (per-step rewards);
`ledger` keeps per task version pass rates, intervals and flakiness as runs finish; `health`
runs a task's oracle and a do-nothing agent; `curriculum` samples OpenEnv split tasks from the
ledger. `hooks` wires them in; `cli` holds the commands.
"""
