"""The issue's done-when on AWS: `agent-env run hello` passes twice with every store kind on
an AWS backend (moto server; the local OCI registry behind ECR), the second run finding the
entities unchanged, and the data lands in DynamoDB and S3, not in the home folder."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from agentenv_aws_stores.dynamodb import DynamoDocumentStore
from agentenv_aws_stores.s3 import S3ObjectStore
from agentenv_aws_stores.secretsmanager import SecretsManagerStore
from agentenv_aws_stores.testing import settings
from agentenv_docker_sandbox.testing import REGISTRY

AGENT_ENV = Path(sys.executable).with_name("agent-env")


def run(home: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AGENT_ENV_", "AWS_"))}
    env.update(AGENT_ENV_HOME=str(home), AGENT_ENV_CONFIG=str(config),
               E2E_AWS_KEY="testing", E2E_AWS_SECRET="testing")
    return subprocess.run([str(AGENT_ENV), *args], env=env, cwd=home.parent,
                          capture_output=True, text=True, timeout=180)


def write_config(path: Path, endpoint: str, tag: str) -> dict[str, dict]:
    tables = {
        "dynamodb": {"table": f"e2e-{tag}", "access_key_id": "secret:e2e_aws_key_id"},
        "s3": {"bucket": f"e2e-{tag}", "create_bucket": True},
        "secretsmanager": {"prefix": f"e2e-{tag}/"},
        "ecr": {"registry": REGISTRY, "insecure_registry": True},
    }
    lines = ['[stores]', 'document = "dynamodb"', 'object = "s3"',
             'secret = "secretsmanager"', 'image = "ecr"']
    for name, extra in tables.items():
        values = {"endpoint_url": endpoint, "region": "us-east-1",
                  "access_key_id": "env:E2E_AWS_KEY", "secret_access_key": "env:E2E_AWS_SECRET",
                  **extra}
        lines.append(f"\n[stores.{name}]")
        for key, value in values.items():
            lines.append(f"{key} = {'true' if value is True else repr(value).replace(chr(39), chr(34))}")
    path.write_text("\n".join(lines) + "\n")
    return tables


def test_run_hello_twice_on_aws_backends(tmp_path, moto_endpoint):
    tag = uuid.uuid4().hex[:10]
    config = tmp_path / "config.toml"
    tables = write_config(config, moto_endpoint, tag)
    home = tmp_path / "home"

    async def seed() -> None:
        secrets = SecretsManagerStore(settings(moto_endpoint, **tables["secretsmanager"]))
        await secrets.set("e2e_aws_key_id", "testing")
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
        docs = DynamoDocumentStore(settings(moto_endpoint, table=tables["dynamodb"]["table"]))
        objects = S3ObjectStore(settings(moto_endpoint, bucket=tables["s3"]["bucket"]))
        try:
            return await docs.list("entities-task"), await objects.list()
        finally:
            await docs.close()
            await objects.close()

    tasks, objects = anyio.run(stored)
    assert [key.rpartition("@")[2] for key, _ in tasks] == ["00000001"]
    assert [key.rpartition("/")[0] for key in objects] == ["blobs/sha256"]
    assert objects, "no artifact blob reached S3"
    assert not (home / "documents.sqlite3").exists()
    assert not (home / "objects").exists()


def test_a_missing_secret_reference_fails_naming_it(tmp_path, moto_endpoint):
    tag = uuid.uuid4().hex[:10]
    config = tmp_path / "config.toml"
    write_config(config, moto_endpoint, tag)
    proc = run(tmp_path / "home", config, "run", "hello")
    assert proc.returncode != 0
    assert "e2e_aws_key_id" in proc.stderr and "not found" in proc.stderr


@pytest.mark.parametrize("kind,name", [("document", "dynamodb"), ("image", "ecr")])
def test_config_show_lists_the_aws_settings(tmp_path, moto_endpoint, kind, name):
    config = tmp_path / "config.toml"
    config.write_text(f'[stores]\n{kind} = "{name}"\n[stores.{name}]\nregion = "eu-west-1"\n')
    proc = run(tmp_path / "home", config, "config", "show")
    assert proc.returncode == 0, proc.stderr
    assert f"stores.{name}" in proc.stdout and "eu-west-1" in proc.stdout
