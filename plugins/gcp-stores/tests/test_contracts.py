"""The Cloud Storage, Firestore and Secret Manager backends pass the kernel's store contracts
unchanged, with the real Google clients against local emulators."""

from __future__ import annotations

import functools

import pytest

from agentenv_gcp_stores.firestore import FirestoreDocumentStore
from agentenv_gcp_stores.gcs import GcsObjectStore
from agentenv_gcp_stores.secretmanager import SecretManagerStore
from agentenv_gcp_stores.testing import settings
from agentenv_testing.contracts import (
    DocumentStoreContract,
    ObjectStoreContract,
    SecretStoreContract,
    VersionedEntitiesContract,
)
from agentenv_testing.stores import unique_name


class TestGcsObjects(ObjectStoreContract):
    @pytest.fixture
    def store_factory(self, gcs_endpoint):
        bucket = unique_name("contract")
        return functools.partial(
            GcsObjectStore, settings(gcs_endpoint, bucket=bucket, create_bucket=True)
        )


class TestFirestoreDocuments(DocumentStoreContract):
    @pytest.fixture
    def store_factory(self, firestore_endpoint):
        return functools.partial(FirestoreDocumentStore, settings(firestore_endpoint))


class TestFirestoreVersionedEntities(VersionedEntitiesContract):
    @pytest.fixture
    def store_factory(self, firestore_endpoint):
        return functools.partial(FirestoreDocumentStore, settings(firestore_endpoint))


class TestSecretManagerSecrets(SecretStoreContract):
    @pytest.fixture
    def store_factory(self, secretmanager_server):
        prefix = unique_name("contract").replace("-", "_") + "-"
        return functools.partial(
            SecretManagerStore, settings(secretmanager_server.url, prefix=prefix)
        )
