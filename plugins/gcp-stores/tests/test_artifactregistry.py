"""The Artifact Registry image store passes the image contract, with the local OCI registry
from scripts/services.sh standing in for `<location>-docker.pkg.dev`."""

from __future__ import annotations

import functools

import pytest

from agent_env.errors import ConfigError
from agentenv_docker_sandbox.testing import REGISTRY, registry_test_image
from agentenv_gcp_stores.artifactregistry import ArtifactRegistryImageStore
from agentenv_gcp_stores.testing import PROJECT
from agentenv_testing.contracts import ImageStoreContract


@pytest.fixture(scope="session")
def local_tiny_image():
    return registry_test_image()


def ar_settings(**extra):
    return {
        "project": PROJECT,
        "registry": REGISTRY,
        "anonymous": True,
        "insecure_registry": True,
        **extra,
    }


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


class FakeArtifactRegistryApi:
    """`dockerImages.list` as Artifact Registry answers it, two images per page."""

    def __init__(self, images: list[dict]):
        self.images = images
        self.paths: list[str] = []

    def serve(self):
        import json
        import threading
        import urllib.parse
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                api.paths.append(url.path)
                start = int(urllib.parse.parse_qs(url.query).get("pageToken", ["0"])[0])
                page = {"dockerImages": api.images[start : start + 2]}
                if start + 2 < len(api.images):
                    page["nextPageToken"] = str(start + 2)
                body = json.dumps(page).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        return httpd


@pytest.mark.anyio
async def test_listing_artifact_registry_uses_its_api():
    host = "europe-west4-docker.pkg.dev/p1/agentenv"
    api = FakeArtifactRegistryApi(
        [
            {"uri": f"{host}/tools/app@sha256:aa", "tags": ["v1", "latest"]},
            {"uri": f"{host}/tools/untagged@sha256:bb"},
            {"uri": f"{host}/envs/echo@sha256:cc", "tags": ["v2"]},
        ]
    )
    httpd = api.serve()
    try:
        store = ArtifactRegistryImageStore(
            {
                "project": "p1",
                "location": "europe-west4",
                "anonymous": True,
                "endpoint_url": f"http://127.0.0.1:{httpd.server_address[1]}",
            }
        )
        assert await store.list() == [
            f"{host}/envs/echo:v2",
            f"{host}/tools/app:latest",
            f"{host}/tools/app:v1",
        ]
        assert await store.list("envs/") == [f"{host}/envs/echo:v2"]
        assert set(api.paths) == {
            "/v1/projects/p1/locations/europe-west4/repositories/agentenv/dockerImages"
        }
    finally:
        httpd.shutdown()
        httpd.server_close()
