"""The issue's done-when on Google Cloud: `agent-env run hello` passes twice with every store
kind on a GCP backend (Firestore emulator, Cloud Storage emulator, the Secret Manager test
server; the local OCI registry behind Artifact Registry), the second run finding the
entities unchanged, and the data lands in Firestore and Cloud Storage."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import anyio

from agentenv_docker_sandbox.testing import REGISTRY
from agentenv_gcp_stores.firestore import FirestoreDocumentStore
from agentenv_gcp_stores.gcs import GcsObjectStore
from agentenv_gcp_stores.secretmanager import SecretManagerStore
from agentenv_gcp_stores.testing import PROJECT, settings

AGENT_ENV = Path(sys.executable).with_name("agent-env")


def run(home: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AGENT_ENV_", "GOOGLE_", "FIRESTORE_", "STORAGE_EMULATOR"))}
    env.update(AGENT_ENV_HOME=str(home), AGENT_ENV_CONFIG=str(config), E2E_GCP_PROJECT=PROJECT)
    return subprocess.run([str(AGENT_ENV), *args], env=env, cwd=home.parent,
                          capture_output=True, text=True, timeout=180)


def toml_value(value) -> str:
    return "true" if value is True else '"' + str(value) + '"'


def write_config(path: Path, endpoints: dict[str, str], tag: str) -> dict[str, dict]:
    tables = {
        "firestore": {"endpoint_url": endpoints["firestore"], "collection_prefix": f"e2e-{tag}",
                      "project": "secret:e2e_gcp_project"},
        "gcs": {"endpoint_url": endpoints["gcs"], "bucket": f"e2e-{tag}", "create_bucket": True},
        "secretmanager": {"endpoint_url": endpoints["secretmanager"], "prefix": f"e2e-{tag}-"},
        "artifactregistry": {"registry": REGISTRY, "insecure_registry": True},
    }
    lines = ['[stores]', 'document = "firestore"', 'object = "gcs"',
             'secret = "secretmanager"', 'image = "artifactregistry"']
    for name, extra in tables.items():
        values = {"project": "env:E2E_GCP_PROJECT", "anonymous": True, **extra}
        lines.append(f"\n[stores.{name}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in values.items()]
    path.write_text("\n".join(lines) + "\n")
    return tables


def test_run_hello_twice_on_gcp_backends(
    tmp_path, gcs_endpoint, firestore_endpoint, secretmanager_server
):
    tag = uuid.uuid4().hex[:10]
    endpoints = {"gcs": gcs_endpoint, "firestore": firestore_endpoint,
                 "secretmanager": secretmanager_server.url}
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

    first = run(home, config, "run", "hello")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("hello  passed (hello: 1)")
    assert "(new)" in first.stderr

    second = run(home, config, "run", "hello")
    assert second.returncode == 0, second.stderr
    assert "passed (hello: 1)" in second.stdout
    assert "(new)" not in second.stderr and "unchanged" in second.stderr

    async def stored() -> tuple[list, list]:
        docs = FirestoreDocumentStore(
            settings(firestore_endpoint, collection_prefix=f"e2e-{tag}")
        )
        objects = GcsObjectStore(settings(gcs_endpoint, bucket=tables["gcs"]["bucket"]))
        try:
            return await docs.list("entities-task"), await objects.list()
        finally:
            await docs.close()
            await objects.close()

    tasks, objects = anyio.run(stored)
    assert [key.rpartition("@")[2] for key, _ in tasks] == ["00000001"]
    assert [key.rpartition("/")[0] for key in objects] == ["blobs/sha256"]
    assert not (home / "documents.sqlite3").exists()
    assert not (home / "objects").exists()


def test_a_missing_secret_reference_fails_naming_it(
    tmp_path, gcs_endpoint, firestore_endpoint, secretmanager_server
):
    endpoints = {"gcs": gcs_endpoint, "firestore": firestore_endpoint,
                 "secretmanager": secretmanager_server.url}
    config = tmp_path / "config.toml"
    write_config(config, endpoints, uuid.uuid4().hex[:10])
    proc = run(tmp_path / "home", config, "run", "hello")
    assert proc.returncode != 0
    assert "e2e_gcp_project" in proc.stderr and "not found" in proc.stderr
