"""The engine: DAG scheduler (`instance`), step context (`context`), journal and state
replay (`journal`, `state`), run records and outcomes (`records`), `LocalRunner` (`runner`),
and the whole-run driver the CLI uses (`run`)."""
