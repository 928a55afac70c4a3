"""Running a bundle, independent of the CLI: one pipeline every front end goes through.
`request` (`RunRequest`: what a run was asked to do), `pipeline` (`RunPipeline`: prepare ->
execute -> record, the exit-code rule), `resume`, `worker` (trials on another process),
`model` (the values passed around), `selection` and `overrides` (which tasks, changed how),
and `service` (the three calls an embedding front end such as the explorer makes)."""
