"""The Artifact Registry image store passes the image contract, with the local OCI registry
from scripts/services.sh standing in for `<location>-docker.pkg.dev`."""

from __future__ import annotations

import functools
import io
import tarfile

import pytest

from agent_env.errors import ConfigError
from agent_env.testing.contracts import ImageStoreContract
from agentenv_docker_sandbox.testing import REGISTRY, require_docker, require_registry
from agentenv_gcp_stores.artifactregistry import ArtifactRegistryImageStore
from agentenv_gcp_stores.testing import PROJECT

TINY = "agentenv-test/tiny:1"


def tiny_image() -> str:
    """A one-file image made locally (no registry involved); pushes take milliseconds."""
    import docker

    client = docker.from_env(timeout=60)
    try:
        client.images.get(TINY)
        return TINY
    except docker.errors.ImageNotFound:
        pass
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = b"agent-env tiny test image\n"
        info = tarfile.TarInfo("hello.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    repo, tag = TINY.split(":")
    client.api.import_image_from_data(buf.getvalue(), repository=repo, tag=tag)
    return TINY


@pytest.fixture(scope="session")
def local_tiny_image():
    require_docker(None)
    require_registry()
    return tiny_image()


def ar_settings(**extra):
    return {"project": PROJECT, "registry": REGISTRY, "anonymous": True,
            "insecure_registry": True, **extra}


class TestArtifactRegistryImages(ImageStoreContract):
    @pytest.fixture
    def store_factory(self, local_tiny_image):
        return functools.partial(ArtifactRegistryImageStore, ar_settings())

    @pytest.fixture
    def local_image(self, local_tiny_image):
        return local_tiny_image


@pytest.mark.anyio
async def test_references_name_project_and_repository(local_tiny_image):
    store = ArtifactRegistryImageStore(ar_settings(repository="team-a"))
    ref = await store.push(local_tiny_image, "tools/app:v3")
    assert ref == f"{REGISTRY}/{PROJECT}/team-a/tools/app:v3"
    assert ref in await store.list("tools/")
    assert await store.list("nothing-like-this/") == []
    other = ArtifactRegistryImageStore(ar_settings(repository="team-b"))
    assert ref not in await other.list()


def test_default_host_is_the_locations_docker_registry():
    store = ArtifactRegistryImageStore({"project": "p1", "location": "europe-west4"})
    assert store.full("app:v1") == "europe-west4-docker.pkg.dev/p1/agentenv/app:v1"


@pytest.mark.parametrize("key,value", [("repository", "Team A"), ("location", "EU/1")])
def test_bad_repository_or_location_is_a_config_error(key, value):
    with pytest.raises(ConfigError, match=key):
        ArtifactRegistryImageStore({"project": "p1", key: value})
