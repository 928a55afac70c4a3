"""The engine: DAG scheduler (`instance`), step context (`context`), journal and state replay
(`journal`, `state`), run records (`records`, on `record_model`) and reading them back
(`stored`), the outcome rule (`outcome`), `LocalRunner` (`runner`), the trials of a run
(`trials`, `seeds`) and the parts of a run below the CLI (`run`). Reports on records (results,
stats, export) are `agent_env.reporting`; the live progress line is `agent_env.cli.progress`."""
