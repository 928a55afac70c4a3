"""The `agent-env` command line: `main` (the lazy root group, error handling) and `commands/`
(one module per command, imported only when that command runs)."""
