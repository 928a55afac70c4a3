"""Registering and opening the cloud stores stays cheap: no SDK is imported until a store is
used, so `agent-env --help` and local-only runs never pay for the Google clients or boto3."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from agent_env.plugins import get_plugin_manager
from agent_env.stores import open_stores
pm = get_plugin_manager()
stores = open_stores({"document": "firestore", "object": "gcs", "secret": "secretmanager",
                      "image": "artifactregistry", "gcs": {"bucket": "b"},
                      "secretmanager": {"project": "p"}, "artifactregistry": {"project": "p"}}, pm)
assert type(stores.documents).__name__ == "FirestoreDocumentStore"
heavy = sorted({m.split(".")[0] for m in sys.modules
                if m.split(".")[0] in ("boto3", "botocore", "docker", "google", "grpc")})
print(",".join(heavy))
"""


def test_opening_gcp_stores_imports_no_sdk():
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_registered_types():
    from agent_env.plugins.manager import PluginManager

    stores = PluginManager().stores
    assert stores.get("object", "gcs").__name__ == "GcsObjectStore"
    assert stores.get("document", "firestore").__name__ == "FirestoreDocumentStore"
    assert stores.get("secret", "secretmanager").__name__ == "SecretManagerStore"
    assert stores.get("image", "artifactregistry").__name__ == "ArtifactRegistryImageStore"
