"""The local store backends, registered through the same hook external plugins use."""

from agent_env.hookspecs import hookimpl


@hookimpl
def agentenv_register_stores(registry):
    from agent_env.stores.env_secrets import EnvSecretStore
    from agent_env.stores.filesystem import FilesystemObjectStore
    from agent_env.stores.sqlite import SqliteDocumentStore

    registry.add(SqliteDocumentStore)
    registry.add(FilesystemObjectStore)
    registry.add(EnvSecretStore)
