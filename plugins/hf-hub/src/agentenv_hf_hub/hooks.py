"""agent-env hooks of the hf-hub plugin: it claims `hf://` bundle specs, to run and to push,
and `hf://` dataset destinations of `runs export --to`."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"


@hookimpl
def agentenv_resolve_bundle_source(spec: str):
    if not isinstance(spec, str) or not spec.startswith("hf://"):
        return None
    from agentenv_hf_hub.source import resolve

    return resolve(spec)


@hookimpl
def agentenv_register_cache_kinds(registry):
    from agentenv_hf_hub.cache_kind import HubCache

    registry.add(HubCache)


@hookimpl
def agentenv_push_bundle(folder, destination, message):
    if not isinstance(destination, str) or not destination.startswith("hf://"):
        return None
    from agentenv_hf_hub.push import push

    return push(folder, destination, message=message)


@hookimpl
def agentenv_push_dataset(folder, destination, message):
    if not isinstance(destination, str) or not destination.startswith("hf://"):
        return None
    from agentenv_hf_hub.push import push_dataset

    return push_dataset(folder, destination, message=message)
