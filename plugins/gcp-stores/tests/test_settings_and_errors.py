"""Bad settings and missing resources fail with errors that name the setting, and change
nothing; behaviour beyond the contract (prefixes, compression, odd keys in Firestore)."""

from __future__ import annotations

import uuid

import pytest

from agent_env.errors import ConfigError, StoreError
from agentenv_gcp_stores.artifactregistry import ArtifactRegistryImageStore
from agentenv_gcp_stores.firestore import FirestoreDocumentStore
from agentenv_gcp_stores.gcs import GcsObjectStore
from agentenv_gcp_stores.secretmanager import SecretManagerStore
from agentenv_gcp_stores.testing import settings
from agentenv_testing.stores import assert_run_hello_fails


def _tag() -> str:
    return uuid.uuid4().hex[:10]


@pytest.mark.parametrize(
    "cls", [GcsObjectStore, FirestoreDocumentStore, SecretManagerStore, ArtifactRegistryImageStore]
)
def test_unknown_setting_is_a_config_error_with_a_suggestion(cls):
    with pytest.raises(ConfigError, match=r"unknown setting 'projet' \(did you mean 'project'\?\)"):
        cls({"bucket": "b", "projet": "p"} if cls is GcsObjectStore else {"projet": "p"})


@pytest.mark.parametrize(
    "config,message,env",
    [
        pytest.param(
            '[stores]\ndocument = "firestore"\n[stores.firestore]\ndatabse = "x"\n',
            "[stores.firestore] has unknown key 'databse' (did you mean 'database'?)",
            {},
            id="typo",
        ),
        pytest.param(
            '[stores]\nobject = "gcs"\n',
            "agentenv-framework[gcp]",
            {"AGENT_ENV_DISABLE_PLUGINS": "gcp-stores"},
            id="plugin-missing",
        ),
    ],
)
def test_config_mistakes_fail_before_anything_runs(tmp_path, config, message, env):
    assert_run_hello_fails(tmp_path, config, message, **env)


@pytest.mark.parametrize(
    "cls,key",
    [
        (GcsObjectStore, "bucket"),
        (SecretManagerStore, "project"),
        (ArtifactRegistryImageStore, "project"),
    ],
)
def test_required_settings_are_named(cls, key):
    with pytest.raises(ConfigError, match=f"{key} is not set"):
        cls({})


def test_bad_prefixes_are_config_errors():
    with pytest.raises(ConfigError, match="collection_prefix"):
        FirestoreDocumentStore({"collection_prefix": "a/b"})
    with pytest.raises(ConfigError, match="prefix"):
        SecretManagerStore({"project": "p", "prefix": "has space"})


@pytest.mark.anyio
async def test_a_broken_service_account_key_is_a_config_error():
    store = SecretManagerStore({"project": "p", "credentials_json": '{"type": "nonsense"}'})
    with pytest.raises(ConfigError, match="credentials_json"):
        await store.get("x")


@pytest.mark.anyio
async def test_missing_bucket_is_named_and_not_created(gcs_endpoint):
    bucket = f"absent-{_tag()}"
    store = GcsObjectStore(settings(gcs_endpoint, bucket=bucket))
    with pytest.raises(StoreError, match=f"bucket '{bucket}' does not exist.*create_bucket"):
        await store.put("k", b"x")
    await store.close()
    creator = GcsObjectStore(settings(gcs_endpoint, bucket=bucket, create_bucket=True))
    assert await creator.list() == []
    await creator.close()


@pytest.mark.anyio
async def test_gcs_prefix_keeps_keys_apart_in_a_shared_bucket(gcs_endpoint):
    bucket = f"shared-{_tag()}"
    a = GcsObjectStore(settings(gcs_endpoint, bucket=bucket, prefix="team-a", create_bucket=True))
    b = GcsObjectStore(settings(gcs_endpoint, bucket=bucket, prefix="team-b/", create_bucket=True))
    whole = GcsObjectStore(settings(gcs_endpoint, bucket=bucket))
    await a.put("x/1", b"a")
    await b.put("x/1", b"b")
    assert (await a.get("x/1"), await b.get("x/1")) == (b"a", b"b")
    assert await a.list() == ["x/1"]
    assert await whole.list() == ["team-a/x/1", "team-b/x/1"]
    for store in (a, b, whole):
        await store.close()


@pytest.mark.anyio
async def test_large_documents_are_compressed_and_prefixes_stay_apart(firestore_endpoint):
    root = f"r{_tag()}"
    one = FirestoreDocumentStore(settings(firestore_endpoint, collection_prefix=root))
    two = FirestoreDocumentStore(settings(firestore_endpoint, collection_prefix=root + "x"))
    doc = {"log": "step ok\n" * 200_000}
    await one.put("runs", "r1", doc)
    assert await one.get("runs", "r1") == doc
    assert await two.get("runs", "r1") is None
    assert await two.list("runs") == []
    await one.close()
    await two.close()


@pytest.mark.anyio
async def test_keys_firestore_ids_could_not_hold(firestore_endpoint):
    store = FirestoreDocumentStore(settings(firestore_endpoint, collection_prefix=f"r{_tag()}"))
    keys = ["..", ".", "__reserved__", "a/b/c", "k" * 1024]
    for key in keys:
        assert await store.create("odd", key, {"k": key}) is True
    assert [k for k, _ in await store.list("odd")] == sorted(keys)
    assert await store.list("odd", "a/") == [("a/b/c", {"k": "a/b/c"})]
    await store.close()


@pytest.mark.anyio
async def test_an_unreachable_endpoint_is_a_store_error():
    store = SecretManagerStore(settings("http://127.0.0.1:9", timeout=2))
    with pytest.raises(StoreError, match="secretmanager store: cannot read secret 'x'"):
        await store.get("x")


@pytest.mark.anyio
async def test_rotating_a_secret_keeps_one_active_version(secretmanager_server):
    prefix = f"rot_{_tag()}-"
    store = SecretManagerStore(settings(secretmanager_server.url, prefix=prefix))
    for value in ["one", "two", "three"]:
        await store.set("key", value)
    assert await store.get("key") == "three"
    versions = secretmanager_server.secrets[f"projects/agentenv-test/secrets/{prefix}key"]
    assert versions["versions"][-1] == b"three"
    assert versions["versions"][:-1] == [None, None]
    await store.close()


@pytest.mark.anyio
async def test_keys_over_firestores_index_limit_are_rejected(firestore_endpoint):
    store = FirestoreDocumentStore(settings(firestore_endpoint, collection_prefix=f"r{_tag()}"))
    with pytest.raises(StoreError, match="1500 bytes"):
        await store.put("c", "é" * 800, {})
    assert await store.list("c") == []
    await store.close()
