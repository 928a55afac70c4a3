"""agentenv-openenv: serve bundles as OpenEnv environments."""
