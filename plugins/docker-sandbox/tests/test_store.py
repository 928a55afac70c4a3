"""The image stores pass the shared ImageStoreContract: the local daemon and the local OCI
registry (`docker-registry` on 127.0.0.1:5000, started by scripts/services.sh)."""

from __future__ import annotations

import uuid

import docker.errors
import pytest

from agent_env.errors import StoreError
from agentenv_docker_sandbox.store import DockerImageStore, RegistryImageStore, split_ref
from agentenv_docker_sandbox.testing import BASE_IMAGE
from agentenv_testing.contracts import ImageStoreContract


class TestDockerImageStore(ImageStoreContract):
    @pytest.fixture
    def store_factory(self, docker_client, tmp_path):
        return lambda: DockerImageStore({}, home=tmp_path)

    @pytest.fixture
    def local_image(self, docker_client):
        return BASE_IMAGE

    @pytest.fixture(autouse=True)
    def _untag(self, docker_client):
        yield
        for image in docker_client.images.list():
            for tag in image.tags:
                if tag.startswith("agentenv-contract/"):
                    docker_client.images.remove(tag, noprune=True)


class TestRegistryImageStore(ImageStoreContract):
    @pytest.fixture
    def store_factory(self, registry, tmp_path):
        return lambda: RegistryImageStore({"address": registry}, home=tmp_path)

    @pytest.fixture
    def local_image(self, docker_client):
        return BASE_IMAGE


@pytest.mark.anyio
async def test_registry_push_then_pull_after_the_local_copy_is_gone(
    registry, docker_client, tmp_path
):
    store = RegistryImageStore({"address": registry, "namespace": "tests"}, home=tmp_path)
    name = f"roundtrip-{uuid.uuid4().hex[:8]}:v1"
    ref = await store.push(BASE_IMAGE, name)
    assert ref == f"{registry}/tests/{name}"
    assert await store.exists(name) and await store.exists(ref)
    assert ref in await store.list(f"{registry}/tests/roundtrip-")
    with pytest.raises(docker.errors.ImageNotFound):
        docker_client.images.get(ref)  # push leaves no extra local tag behind
    local = await store.pull(name)
    try:
        assert docker_client.images.get(local).id == docker_client.images.get(BASE_IMAGE).id
    finally:
        docker_client.images.remove(local, noprune=True)


@pytest.mark.anyio
async def test_registry_without_address_is_a_clear_error(tmp_path):
    store = RegistryImageStore({}, home=tmp_path)
    with pytest.raises(StoreError, match=r"\[stores.registry\] needs `address`"):
        await store.exists("x:1")


@pytest.mark.anyio
async def test_unreachable_registry_is_a_store_error(docker_client, tmp_path):
    store = RegistryImageStore({"address": "127.0.0.1:9"}, home=tmp_path)
    with pytest.raises(StoreError, match="unreachable"):
        await store.exists("x:1")


def test_split_ref_keeps_registry_ports():
    assert split_ref("127.0.0.1:5000/a/b:v1") == ("127.0.0.1:5000/a/b", "v1")
    assert split_ref("127.0.0.1:5000/a/b") == ("127.0.0.1:5000/a/b", "latest")
    assert split_ref("name") == ("name", "latest")
