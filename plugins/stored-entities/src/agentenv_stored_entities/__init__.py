"""The stored-entity commands of agent-env: `task`, `eval`, `env`, `agent` / `a2a-agent`,
`artifact`, `bundle` and `entity`, which list, show, put, validate, export and run the tasks,
evals, envs, agents and artifacts kept in the stores.

`commands` holds the click commands (`hooks` registers them lazily); `put`, `evals` and
`declared` write entities as versions (a new one only when the digest changed) and check them.
What the kernel's run pipeline needs of stored entities (resolving, exporting and deploying
them) stays in `agent_env.entities`."""
