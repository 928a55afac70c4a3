"""Registers the `docker` sandbox provider, the `docker` and `registry` image stores and the
`sandbox` command (when the kernel does not provide one). Imports only stdlib + agent_env."""

from agent_env import hookimpl


@hookimpl
def agentenv_register_sandbox_providers(registry):
    from agentenv_docker_sandbox.provider import DockerProvider

    registry.add(DockerProvider)


@hookimpl
def agentenv_register_stores(registry):
    from agentenv_docker_sandbox.store import DockerImageStore, RegistryImageStore

    registry.add(DockerImageStore)
    registry.add(RegistryImageStore)


@hookimpl
def agentenv_register_commands(group):
    taken = set(getattr(group, "commands", {})) | set(getattr(group, "lazy_commands", {}))
    if "sandbox" not in taken:
        group.add_lazy_command(
            "sandbox", "agentenv_docker_sandbox.cli:sandbox", "Clean up sandboxes (prune orphans)."
        )
