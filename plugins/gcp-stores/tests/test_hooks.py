"""Registering and opening the cloud stores stays cheap: no SDK is imported until a store is
used, so `agent-env --help` and local-only runs never pay for the Google clients or boto3."""

from __future__ import annotations

from agentenv_testing.stores import open_in_fresh_process

TYPES = {
    "document": "firestore",
    "object": "gcs",
    "secret": "secretmanager",
    "image": "artifactregistry",
}
CLASSES = {
    "document": "FirestoreDocumentStore",
    "object": "GcsObjectStore",
    "secret": "SecretManagerStore",
    "image": "ArtifactRegistryImageStore",
}


def test_opening_gcp_stores_imports_no_sdk():
    classes, imported = open_in_fresh_process(
        {
            **TYPES,
            "gcs": {"bucket": "b"},
            "secretmanager": {"project": "p"},
            "artifactregistry": {"project": "p"},
        }
    )
    assert classes == CLASSES
    assert imported == []


def test_registered_types():
    from agent_env.plugins.manager import PluginManager

    stores = PluginManager().stores
    assert {kind: stores.get(kind, name).__name__ for kind, name in TYPES.items()} == CLASSES
