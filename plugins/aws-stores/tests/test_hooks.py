"""Registering and opening the cloud stores stays cheap: no SDK is imported until a store is
used, so `agent-env --help` and local-only runs never pay for boto3 or the Google clients."""

from __future__ import annotations

from agentenv_testing.stores import open_in_fresh_process

TYPES = {"document": "dynamodb", "object": "s3", "secret": "secretsmanager", "image": "ecr"}
CLASSES = {
    "document": "DynamoDocumentStore",
    "object": "S3ObjectStore",
    "secret": "SecretsManagerStore",
    "image": "EcrImageStore",
}


def test_opening_aws_stores_imports_no_sdk():
    classes, imported = open_in_fresh_process({**TYPES, "s3": {"bucket": "b"}})
    assert classes == CLASSES
    assert imported == []


def test_registered_types():
    from agent_env.plugins.manager import PluginManager

    stores = PluginManager().stores
    assert {kind: stores.get(kind, name).__name__ for kind, name in TYPES.items()} == CLASSES
