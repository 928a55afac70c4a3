"""The registry operations the CLI's entity commands call (`task`, `eval`, `env`, `agent`,
`artifact`, `bundle init`): `catalog` lists, resolves and shows stored entities; `put` writes
bundle entities as versions (a new one only when the digest changed) and validates them;
`export` writes stored entities back out as a bundle folder, which is also how a stored task
runs by id (`runnable`). Nothing here knows about click."""
