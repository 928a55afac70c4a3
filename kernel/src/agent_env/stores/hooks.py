"""The local store backends, registered through the same hook external plugins use."""

from agent_env.hookspecs import hookimpl


@hookimpl
def agentenv_register_stores(registry):
    registry.add_lazy("sqlite", "agent_env.stores.sqlite:SqliteDocumentStore", kind="document")
    registry.add_lazy(
        "filesystem", "agent_env.stores.filesystem:FilesystemObjectStore", kind="object"
    )
    registry.add_lazy("env", "agent_env.stores.env_secrets:EnvSecretStore", kind="secret")
