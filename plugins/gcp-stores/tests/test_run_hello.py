"""The issue's done-when on Google Cloud: `agent-env run hello` passes twice with every store
kind on a GCP backend (Firestore emulator, Cloud Storage emulator, the Secret Manager test
server; the local OCI registry behind Artifact Registry), the second run finding the
entities unchanged, and the data lands in Firestore and Cloud Storage."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import anyio

from agentenv_docker_sandbox.testing import REGISTRY
from agentenv_gcp_stores.firestore import FirestoreDocumentStore
from agentenv_gcp_stores.gcs import GcsObjectStore
from agentenv_gcp_stores.secretmanager import SecretManagerStore
from agentenv_gcp_stores.testing import PROJECT, settings
from agentenv_testing.stores import (
    assert_hello_runs_twice,
    assert_hello_stored,
    run_agent_env,
    stores_toml,
)


def run(home: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    return run_agent_env(
        home,
        config,
        *args,
        env={"E2E_GCP_PROJECT": PROJECT},
        drop_env=("GOOGLE_", "FIRESTORE_", "STORAGE_EMULATOR"),
    )


def write_config(path: Path, endpoints: dict[str, str], tag: str) -> dict[str, dict]:
    tables = {
        "firestore": {
            "endpoint_url": endpoints["firestore"],
            "collection_prefix": f"e2e-{tag}",
            "project": "secret:e2e_gcp_project",
        },
        "gcs": {"endpoint_url": endpoints["gcs"], "bucket": f"e2e-{tag}", "create_bucket": True},
        "secretmanager": {"endpoint_url": endpoints["secretmanager"], "prefix": f"e2e-{tag}-"},
        "artifactregistry": {"registry": REGISTRY, "insecure_registry": True},
    }
    client = {"project": "env:E2E_GCP_PROJECT", "anonymous": True}
    path.write_text(
        stores_toml(
            {
                "document": "firestore",
                "object": "gcs",
                "secret": "secretmanager",
                "image": "artifactregistry",
            },
            {name: {**client, **extra} for name, extra in tables.items()},
        )
    )
    return tables


def test_run_hello_twice_on_gcp_backends(
    tmp_path, gcs_endpoint, firestore_endpoint, secretmanager_server
):
    tag = uuid.uuid4().hex[:10]
    endpoints = {
        "gcs": gcs_endpoint,
        "firestore": firestore_endpoint,
        "secretmanager": secretmanager_server.url,
    }
    config = tmp_path / "config.toml"
    tables = write_config(config, endpoints, tag)
    home = tmp_path / "home"

    async def seed() -> None:
        secrets = SecretManagerStore(
            settings(secretmanager_server.url, prefix=tables["secretmanager"]["prefix"])
        )
        await secrets.set("e2e_gcp_project", PROJECT)
        await secrets.close()

    anyio.run(seed)
    assert_hello_runs_twice(lambda *args: run(home, config, *args))
    anyio.run(
        assert_hello_stored,
        FirestoreDocumentStore(settings(firestore_endpoint, collection_prefix=f"e2e-{tag}")),
        GcsObjectStore(settings(gcs_endpoint, bucket=tables["gcs"]["bucket"])),
        home,
    )


def test_a_missing_secret_reference_fails_naming_it(
    tmp_path, gcs_endpoint, firestore_endpoint, secretmanager_server
):
    endpoints = {
        "gcs": gcs_endpoint,
        "firestore": firestore_endpoint,
        "secretmanager": secretmanager_server.url,
    }
    config = tmp_path / "config.toml"
    write_config(config, endpoints, uuid.uuid4().hex[:10])
    proc = run(tmp_path / "home", config, "run", "hello")
    assert proc.returncode != 0
    assert "e2e_gcp_project" in proc.stderr and "not found" in proc.stderr
