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
        # reach a local daemon's containers at their address, no published ports (docs/docker.md)
        "direct": True,
    }
}


@hookimpl
def agentenv_register_sandbox_providers(registry):
    # by import path (docker-py loads on use); `provider_chain` reads the two flags unimported
    registry.add_lazy(
        "docker",
        "agentenv_docker_sandbox.provider:DockerProvider",
        can_build_images=True,
        on_this_machine=True,
    )


@hookimpl
def agentenv_register_stores(registry):
    registry.add_lazy("docker", "agentenv_docker_sandbox.store:DockerImageStore", kind="image")
    registry.add_lazy("registry", "agentenv_docker_sandbox.store:RegistryImageStore", kind="image")


@hookimpl
def agentenv_register_cache_kinds(registry):
    from agentenv_docker_sandbox.cache_kind import ImageCache

    registry.add(ImageCache)
