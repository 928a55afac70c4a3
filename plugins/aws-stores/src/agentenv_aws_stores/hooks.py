"""agent-env hooks of the aws-stores plugin: registers the `s3`, `dynamodb`, `secretsmanager`
and `ecr` store types and declares their `[stores.<type>]` settings. Imports stay cheap."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"
from agentenv_aws_stores.settings import SECTIONS

CONFIG_SECTIONS = {f"stores.{name}": dict(keys) for name, keys in SECTIONS.items()}


@hookimpl
def agentenv_register_stores(registry):
    # by import path: a backend's SDK (boto3) loads only when a config selects it
    registry.add_lazy("s3", "agentenv_aws_stores.s3:S3ObjectStore", kind="object")
    registry.add_lazy(
        "dynamodb", "agentenv_aws_stores.dynamodb:DynamoDocumentStore", kind="document"
    )
    registry.add_lazy(
        "secretsmanager", "agentenv_aws_stores.secretsmanager:SecretsManagerStore", kind="secret"
    )
    registry.add_lazy("ecr", "agentenv_aws_stores.ecr:EcrImageStore", kind="image")
