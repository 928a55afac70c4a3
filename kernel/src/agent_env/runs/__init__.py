"""Running a bundle, independent of the CLI: `RunOptions` (what a run was asked to do) and
`service` (load the bundle, check the provider, execute instances through the configured
runner). `agent-env run`, `run --resume` and later front ends call the same functions."""
