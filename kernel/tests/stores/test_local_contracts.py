"""The local backends pass the store contract suites every backend must pass."""

import functools

import pytest

from agent_env.stores.env_secrets import EnvSecretStore
from agent_env.stores.filesystem import FilesystemObjectStore
from agent_env.stores.sqlite import SqliteDocumentStore
from agentenv_testing.contracts import (
    DocumentStoreContract,
    ObjectStoreContract,
    SecretStoreContract,
    VersionedEntitiesContract,
)


class TestSqliteDocuments(DocumentStoreContract):
    @pytest.fixture
    def store_factory(self, tmp_path):
        return functools.partial(SqliteDocumentStore, home=tmp_path)


class TestSqliteVersionedEntities(VersionedEntitiesContract):
    @pytest.fixture
    def store_factory(self, tmp_path):
        return functools.partial(SqliteDocumentStore, {"path": str(tmp_path / "e.sqlite3")})


class TestFilesystemObjects(ObjectStoreContract):
    @pytest.fixture
    def store_factory(self, tmp_path):
        return functools.partial(FilesystemObjectStore, home=tmp_path)


class TestEnvSecrets(SecretStoreContract):
    @pytest.fixture
    def store_factory(self, tmp_path):
        return functools.partial(EnvSecretStore, home=tmp_path)
