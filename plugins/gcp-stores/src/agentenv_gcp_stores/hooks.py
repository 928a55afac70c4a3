"""agent-env hooks of the gcp-stores plugin: registers the `gcs`, `firestore`,
`secretmanager` and `artifactregistry` store types and declares their settings. Cheap."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"
from agentenv_gcp_stores.settings import SECTIONS

CONFIG_SECTIONS = {f"stores.{name}": dict(keys) for name, keys in SECTIONS.items()}


@hookimpl
def agentenv_register_stores(registry):
    from agentenv_gcp_stores.artifactregistry import ArtifactRegistryImageStore
    from agentenv_gcp_stores.firestore import FirestoreDocumentStore
    from agentenv_gcp_stores.gcs import GcsObjectStore
    from agentenv_gcp_stores.secretmanager import SecretManagerStore

    registry.add(GcsObjectStore)
    registry.add(FirestoreDocumentStore)
    registry.add(SecretManagerStore)
    registry.add(ArtifactRegistryImageStore)
