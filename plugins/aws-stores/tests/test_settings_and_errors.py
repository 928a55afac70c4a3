"""Bad settings and missing resources fail with errors that name the setting, and change
nothing; behaviour beyond the contract (prefixes, compression, DynamoDB's key limit)."""

from __future__ import annotations

import uuid

import boto3
import pytest

from agent_env.errors import ConfigError, StoreError
from agentenv_aws_stores.dynamodb import DynamoDocumentStore
from agentenv_aws_stores.ecr import EcrImageStore
from agentenv_aws_stores.s3 import S3ObjectStore
from agentenv_aws_stores.secretsmanager import SecretsManagerStore
from agentenv_aws_stores.testing import settings
from agentenv_testing.stores import assert_run_hello_fails


def _tag() -> str:
    return uuid.uuid4().hex[:10]


def _boto(service: str, endpoint: str):
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.mark.parametrize(
    "cls", [S3ObjectStore, DynamoDocumentStore, SecretsManagerStore, EcrImageStore]
)
def test_unknown_setting_is_a_config_error_with_a_suggestion(cls):
    with pytest.raises(ConfigError, match=r"unknown setting 'regoin' \(did you mean 'region'\?\)"):
        cls({"bucket": "b", "regoin": "eu-west-1"} if cls is S3ObjectStore else {"regoin": "x"})


@pytest.mark.parametrize(
    "config,message,env",
    [
        pytest.param(
            '[stores]\nobject = "s3"\n[stores.s3]\nbuckett = "b"\n',
            "[stores.s3] has unknown key 'buckett' (did you mean 'bucket'?)",
            {},
            id="typo",
        ),
        pytest.param(
            '[stores]\ndocument = "dynamodb"\n',
            "agentenv-framework[aws]",
            {"AGENT_ENV_DISABLE_PLUGINS": "aws-stores"},
            id="plugin-missing",
        ),
    ],
)
def test_config_mistakes_fail_before_anything_runs(tmp_path, config, message, env):
    assert_run_hello_fails(tmp_path, config, message, **env)


def test_s3_needs_a_bucket():
    with pytest.raises(ConfigError, match="bucket is not set.*AGENT_ENV_STORES_S3_BUCKET"):
        S3ObjectStore({"region": "us-east-1"})


@pytest.mark.anyio
async def test_missing_bucket_is_named_and_not_created(moto_endpoint):
    bucket = f"absent-{_tag()}"
    store = S3ObjectStore(settings(moto_endpoint, bucket=bucket))
    with pytest.raises(StoreError, match=f"bucket '{bucket}' does not exist.*create_bucket"):
        await store.put("k", b"x")
    await store.close()
    names = [b["Name"] for b in _boto("s3", moto_endpoint).list_buckets()["Buckets"]]
    assert bucket not in names


@pytest.mark.anyio
async def test_s3_prefix_keeps_keys_apart_in_a_shared_bucket(moto_endpoint):
    bucket = f"shared-{_tag()}"
    a = S3ObjectStore(settings(moto_endpoint, bucket=bucket, prefix="team-a", create_bucket=True))
    b = S3ObjectStore(settings(moto_endpoint, bucket=bucket, prefix="team-b/", create_bucket=True))
    await a.put("x/1", b"a")
    await b.put("x/1", b"b")
    assert (await a.get("x/1"), await b.get("x/1")) == (b"a", b"b")
    assert await a.list() == ["x/1"]
    raw = _boto("s3", moto_endpoint).list_objects_v2(Bucket=bucket)["Contents"]
    assert sorted(o["Key"] for o in raw) == ["team-a/x/1", "team-b/x/1"]
    await a.close()
    await b.close()


@pytest.mark.anyio
async def test_missing_table_without_create_table_is_named_and_not_created(moto_endpoint):
    table = f"absent-{_tag()}"
    store = DynamoDocumentStore(settings(moto_endpoint, table=table, create_table=False))
    with pytest.raises(StoreError, match=f"table '{table}' does not exist.*create_table"):
        await store.get("c", "k")
    await store.close()
    assert table not in _boto("dynamodb", moto_endpoint).list_tables()["TableNames"]


@pytest.mark.anyio
async def test_documents_over_dynamodbs_item_limit_are_compressed(moto_endpoint):
    store = DynamoDocumentStore(settings(moto_endpoint, table="big-docs"))
    doc = {"log": "step ok\n" * 100_000}
    await store.put("runs", "r1", doc)
    assert await store.get("runs", "r1") == doc
    assert await store.list("runs") == [("r1", doc)]
    await store.close()


@pytest.mark.anyio
async def test_keys_over_dynamodbs_sort_key_limit_are_rejected(moto_endpoint):
    store = DynamoDocumentStore(settings(moto_endpoint, table="big-docs"))
    key = "é" * 600
    with pytest.raises(StoreError, match="1024 bytes"):
        await store.put("c", key, {})
    assert await store.list("c") == []
    await store.close()


def test_secretsmanager_prefix_is_checked():
    with pytest.raises(ConfigError, match="prefix"):
        SecretsManagerStore({"prefix": "bad prefix!"})


@pytest.mark.anyio
async def test_secret_names_outside_our_rules_are_not_listed(moto_endpoint):
    prefix = f"p-{_tag()}/"
    store = SecretsManagerStore(settings(moto_endpoint, prefix=prefix))
    _boto("secretsmanager", moto_endpoint).create_secret(Name=prefix + "nested/x", SecretString="v")
    await store.set("ok_name", "v")
    assert await store.list() == ["ok_name"]
    await store.close()


def test_ecr_repository_prefix_is_checked():
    with pytest.raises(ConfigError, match="repository_prefix"):
        EcrImageStore({"repository_prefix": "Upper/Case"})


@pytest.fixture
def no_aws_environment(monkeypatch, tmp_path):
    for var in (
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.anyio
async def test_no_region_is_a_config_error(no_aws_environment):
    store = DynamoDocumentStore({})
    with pytest.raises(ConfigError, match="no AWS region.*AWS_REGION"):
        await store.get("c", "k")


@pytest.mark.anyio
async def test_no_credentials_is_a_config_error_naming_the_settings(no_aws_environment):
    store = S3ObjectStore({"bucket": "b", "region": "us-east-1"})
    with pytest.raises(ConfigError, match=r"no AWS credentials.*access_key_id.*\[stores.s3\]"):
        await store.get("k")


@pytest.mark.anyio
async def test_an_unknown_profile_is_a_config_error(no_aws_environment):
    store = SecretsManagerStore({"profile": "nope", "region": "us-east-1"})
    with pytest.raises(ConfigError, match="profile"):
        await store.get("x")


@pytest.mark.anyio
async def test_an_unreachable_endpoint_is_a_store_error():
    store = DynamoDocumentStore(settings("http://127.0.0.1:9", timeout=2))
    with pytest.raises(StoreError, match="dynamodb store: cannot get c/k.*127.0.0.1:9"):
        await store.get("c", "k")
