"""What a run's records say, read back from the store: results per task and per eval (`results`:
pass rates, mean scores, pass@k, failure classes), the statistics they quote (`stats`), and the
per-trial exports (`export`, with the one reader of stored trajectories). Reads
`agent_env.engine.records` models; the engine imports only `results` (a run's live results),
nothing here imports the scheduler. `runs list|show|export|compare` are agentenv-reporting's."""
