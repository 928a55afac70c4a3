"""Registers the `docker` sandbox provider and the `docker` and `registry` image stores.
Imports only stdlib + agent_env (`agent-env sandbox prune` is the kernel's)."""

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"

#: The `[sandbox.docker]` settings, so a typo (`netwrk`) fails before a run with a
#: did-you-mean. None: any type (`command` is a string or a list).
CONFIG_SECTIONS = {
    "sandbox.docker": {
        "image": None,
        "network": "bridge",
        "workdir": None,
        "command": None,
        "init": True,
        "pull": True,
        "base_url": None,
        "api_timeout": 120.0,
        # a daemon on another machine (docs/scale-out.md)
        "tls_verify": None,
        "tls_ca_cert": None,
        "tls_client_cert": None,
        "tls_client_key": None,
        "publish_host": None,
    }
}


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
def agentenv_register_cache_kinds(registry):
    from agentenv_docker_sandbox.cache_kind import ImageCache

    registry.add(ImageCache)
