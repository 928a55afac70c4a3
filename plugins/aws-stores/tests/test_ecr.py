"""The ECR image store passes the image contract: moto serves the ECR API (repositories,
authorization tokens) and the local OCI registry from scripts/services.sh stands in for
ECR's registry endpoint."""

from __future__ import annotations

import functools
import uuid

import pytest

from agentenv_aws_stores.ecr import EcrImageStore
from agentenv_aws_stores.testing import settings
from agentenv_docker_sandbox.testing import REGISTRY, registry_test_image
from agentenv_testing.contracts import ImageStoreContract


@pytest.fixture(scope="session")
def local_tiny_image():
    return registry_test_image()


def ecr_factory(endpoint: str, **extra):
    return functools.partial(
        EcrImageStore, settings(endpoint, registry=REGISTRY, insecure_registry=True, **extra)
    )


class TestEcrImages(ImageStoreContract):
    @pytest.fixture
    def store_factory(self, moto_endpoint, local_tiny_image):
        return ecr_factory(moto_endpoint)

    @pytest.fixture
    def local_image(self, local_tiny_image):
        return local_tiny_image


@pytest.mark.anyio
async def test_push_creates_the_ecr_repository_under_the_prefix(moto_endpoint, local_tiny_image):
    import boto3

    prefix = f"team-{uuid.uuid4().hex[:8]}"
    store = ecr_factory(moto_endpoint, repository_prefix=prefix)()
    try:
        ref = await store.push(local_tiny_image, "tools/app:v2")
        assert ref == f"{REGISTRY}/{prefix}/tools/app:v2"
        ecr = boto3.client("ecr", **_boto(moto_endpoint))
        names = [r["repositoryName"] for r in ecr.describe_repositories()["repositories"]]
        assert f"{prefix}/tools/app" in names
        assert await store.list() == [ref]
        assert await store.list("tools/") == [ref]
        assert await store.list("other/") == []
    finally:
        await store.close()


@pytest.mark.anyio
async def test_bad_repository_names_fail_before_anything_is_created(
    moto_endpoint, local_tiny_image
):
    from agent_env.errors import StoreError

    store = ecr_factory(moto_endpoint)()
    try:
        with pytest.raises(StoreError, match="lowercase"):
            await store.push(local_tiny_image, "Tools/App:v1")
    finally:
        await store.close()


def _boto(endpoint: str) -> dict:
    return {
        "endpoint_url": endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }


@pytest.mark.anyio
async def test_default_registry_is_the_accounts_ecr_endpoint(moto_endpoint):
    store = EcrImageStore(settings(moto_endpoint))
    try:
        await store._ready()
        account = boto3_account(moto_endpoint)
        host = f"{account}.dkr.ecr.us-east-1.amazonaws.com"
        assert store.full("tools/app:v1") == f"{host}/agentenv/tools/app:v1"
        assert store.repository("tools/app:v1") == "agentenv/tools/app"
        assert store.settings["username"] == "AWS" and store.settings["password"]
    finally:
        await store.close()


def boto3_account(endpoint: str) -> str:
    import boto3

    return boto3.client("sts", **_boto(endpoint)).get_caller_identity()["Account"]
