"""Registering and opening the cloud stores stays cheap: no SDK is imported until a store is
used, so `agent-env --help` and local-only runs never pay for boto3 or the Google clients."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from agent_env.plugins import get_plugin_manager
from agent_env.stores import open_stores
pm = get_plugin_manager()
stores = open_stores({"document": "dynamodb", "object": "s3", "secret": "secretsmanager",
                      "image": "ecr", "s3": {"bucket": "b"}}, pm)
assert type(stores.documents).__name__ == "DynamoDocumentStore"
heavy = sorted({m.split(".")[0] for m in sys.modules
                if m.split(".")[0] in ("boto3", "botocore", "docker", "google", "grpc")})
print(",".join(heavy))
"""


def test_opening_aws_stores_imports_no_sdk():
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_registered_types():
    from agent_env.plugins.manager import PluginManager

    stores = PluginManager().stores
    assert stores.get("object", "s3").__name__ == "S3ObjectStore"
    assert stores.get("document", "dynamodb").__name__ == "DynamoDocumentStore"
    assert stores.get("secret", "secretsmanager").__name__ == "SecretsManagerStore"
    assert stores.get("image", "ecr").__name__ == "EcrImageStore"
