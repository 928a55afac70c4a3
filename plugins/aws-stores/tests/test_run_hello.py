"""The issue's done-when on AWS: `agent-env run hello` passes twice with every store kind on
an AWS backend (moto server; the local OCI registry behind ECR), the second run finding the
entities unchanged, and the data lands in DynamoDB and S3, not in the home folder."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import anyio
import pytest

from agentenv_aws_stores.dynamodb import DynamoDocumentStore
from agentenv_aws_stores.s3 import S3ObjectStore
from agentenv_aws_stores.secretsmanager import SecretsManagerStore
from agentenv_aws_stores.testing import settings
from agentenv_docker_sandbox.testing import REGISTRY
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
        drop_env=("AWS_",),
        env={"E2E_AWS_KEY": "testing", "E2E_AWS_SECRET": "testing"},
    )


def write_config(path: Path, endpoint: str, tag: str) -> dict[str, dict]:
    tables = {
        "dynamodb": {"table": f"e2e-{tag}", "access_key_id": "secret:e2e_aws_key_id"},
        "s3": {"bucket": f"e2e-{tag}", "create_bucket": True},
        "secretsmanager": {"prefix": f"e2e-{tag}/"},
        "ecr": {"registry": REGISTRY, "insecure_registry": True},
    }
    client = {
        "endpoint_url": endpoint,
        "region": "us-east-1",
        "access_key_id": "env:E2E_AWS_KEY",
        "secret_access_key": "env:E2E_AWS_SECRET",
    }
    path.write_text(
        stores_toml(
            {"document": "dynamodb", "object": "s3", "secret": "secretsmanager", "image": "ecr"},
            {name: {**client, **extra} for name, extra in tables.items()},
        )
    )
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
    assert_hello_runs_twice(lambda *args: run(home, config, *args))
    anyio.run(
        assert_hello_stored,
        DynamoDocumentStore(settings(moto_endpoint, table=tables["dynamodb"]["table"])),
        S3ObjectStore(settings(moto_endpoint, bucket=tables["s3"]["bucket"])),
        home,
    )


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
