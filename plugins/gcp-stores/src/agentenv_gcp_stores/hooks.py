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
    # by import path: a backend's SDK (google-cloud-*) loads only when a config selects it
    registry.add_lazy("gcs", "agentenv_gcp_stores.gcs:GcsObjectStore", kind="object")
    registry.add_lazy(
        "firestore", "agentenv_gcp_stores.firestore:FirestoreDocumentStore", kind="document"
    )
    registry.add_lazy(
        "secretmanager", "agentenv_gcp_stores.secretmanager:SecretManagerStore", kind="secret"
    )
    registry.add_lazy(
        "artifactregistry",
        "agentenv_gcp_stores.artifactregistry:ArtifactRegistryImageStore",
        kind="image",
    )
