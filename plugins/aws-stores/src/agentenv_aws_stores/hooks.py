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
    from agentenv_aws_stores.dynamodb import DynamoDocumentStore
    from agentenv_aws_stores.ecr import EcrImageStore
    from agentenv_aws_stores.s3 import S3ObjectStore
    from agentenv_aws_stores.secretsmanager import SecretsManagerStore

    registry.add(S3ObjectStore)
    registry.add(DynamoDocumentStore)
    registry.add(SecretsManagerStore)
    registry.add(EcrImageStore)
