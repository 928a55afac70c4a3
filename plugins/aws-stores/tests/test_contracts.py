"""The S3, DynamoDB and Secrets Manager backends pass the kernel's store contracts unchanged,
against moto's AWS API server."""

from __future__ import annotations

import functools

import pytest

from agentenv_aws_stores.dynamodb import DynamoDocumentStore
from agentenv_aws_stores.s3 import S3ObjectStore
from agentenv_aws_stores.secretsmanager import SecretsManagerStore
from agentenv_aws_stores.testing import settings
from agentenv_testing.contracts import (
    DocumentStoreContract,
    ObjectStoreContract,
    SecretStoreContract,
    VersionedEntitiesContract,
)
from agentenv_testing.stores import unique_name


class TestS3Objects(ObjectStoreContract):
    @pytest.fixture
    def store_factory(self, moto_endpoint):
        return functools.partial(
            S3ObjectStore,
            settings(moto_endpoint, bucket=unique_name("contract"), create_bucket=True),
        )


@pytest.fixture(scope="module")
def table():
    return unique_name("docs")


class TestDynamoDocuments(DocumentStoreContract):
    @pytest.fixture
    def store_factory(self, moto_endpoint, table):
        return functools.partial(DynamoDocumentStore, settings(moto_endpoint, table=table))


class TestDynamoVersionedEntities(VersionedEntitiesContract):
    @pytest.fixture
    def store_factory(self, moto_endpoint):
        return functools.partial(DynamoDocumentStore, settings(moto_endpoint, table="entities"))


class TestSecretsManagerSecrets(SecretStoreContract):
    @pytest.fixture
    def store_factory(self, moto_endpoint):
        return functools.partial(
            SecretsManagerStore, settings(moto_endpoint, prefix=unique_name("contract") + "/")
        )
