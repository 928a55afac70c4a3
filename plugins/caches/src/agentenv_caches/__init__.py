"""agentenv-caches: `agent-env cache list|prune` over the cache kinds plugins register through
`agentenv_register_cache_kinds` (`agent_env.caches`: the interface, `FolderCache`, `LiveUse`,
which stay in the kernel); `pruning.prune` for other front ends."""
