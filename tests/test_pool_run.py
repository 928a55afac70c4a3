"""`agent-env run --trials N --pool M` (issue 31): trials of a task run on warm instances that
are reset between them instead of redeployed, each trial still its own task instance recorded
through the one pipeline (its record's `reused` names the warm instance); `bundle.toml`'s
`reuse = "redeploy"` opts a bundle out, and a bad `reuse` or `--pool` is refused up front."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "examples" / "notes-local"


def agent_env(home: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("agent-env")
    return subprocess.run(
        [str(exe), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "AGENT_ENV_HOME": str(home)},
    )


def records(home: Path) -> list[dict[str, Any]]:
    """Every task instance record in the home's document store, oldest first."""
    with sqlite3.connect(home / "documents.sqlite3") as db:
        rows = db.execute(
            "select doc from documents where collection = 'task_instances' order by key"
        ).fetchall()
    return [json.loads(doc) for (doc,) in rows]


def bundle_with(tmp_path: Path, toml: str) -> Path:
    folder = tmp_path / "notes"
    shutil.copytree(NOTES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "bundle.toml").write_text(toml)
    return folder


def test_trials_reuse_one_warm_instance_each_with_its_own_record(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = agent_env(home, "run", str(NOTES), "--trials", "3", "--pool", "1", "--concurrency", "1")
    assert done.returncode == 0, done.stderr
    recs = records(home)
    assert len(recs) == 3 and len({r["id"] for r in recs}) == 3
    assert all(r["status"] == "passed" for r in recs), [r["outcome"] for r in recs]
    reused = [r["reused"] for r in recs]
    assert len({r["instance"] for r in reused}) == 1, reused  # one warm instance served all
    assert sorted(r["episode"] for r in reused) == [1, 2, 3]
    for r in recs:  # the deploy step was reused, the rest ran in the trial
        assert r["steps"]["deploy"]["status"] == "reused"
        assert r["steps"]["reset"]["status"] == "completed"
        assert r["verifiers"]["notes-work"]["score"] == 1.0  # the env was clean every time


def test_a_bundle_that_says_redeploy_deploys_every_trial(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = bundle_with(tmp_path, 'reuse = "redeploy"\n')
    done = agent_env(home, "run", str(folder), "--trials", "2", "--pool", "2")
    assert done.returncode == 0, done.stderr
    assert "deploys its own envs each episode: its bundle says reuse = 'redeploy'" in done.stderr
    recs = records(home)
    assert len(recs) == 2 and all(r.get("reused") is None for r in recs)
    assert all(r["steps"]["deploy"]["status"] == "completed" for r in recs)


def test_a_bad_reuse_or_pool_is_refused_before_anything_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = bundle_with(tmp_path, 'reuse = "resett"\n')
    done = agent_env(home, "run", str(folder), "--pool", "1")
    assert done.returncode == 2, done.stderr
    assert "bundle.toml" in done.stderr and "reuse: 'resett'" in done.stderr
    assert "did you mean 'reset'" in done.stderr
    bad = agent_env(home, "run", str(NOTES), "--pool", "-1")
    assert bad.returncode == 2 and "--pool" in bad.stderr
    assert not (home / "documents.sqlite3").exists() or records(home) == []


DOCKERFILE = """FROM python:3.11-slim
WORKDIR /app
COPY agentenv-wheels/ /tmp/agentenv-wheels/
RUN pip install --no-cache-dir --disable-pip-version-check /tmp/agentenv-wheels/*.whl
COPY server.py .
ENV MCP_HOST=0.0.0.0 MCP_PORT=18765 PYTHONUNBUFFERED=1
EXPOSE 18765
CMD ["python", "server.py"]
"""


@pytest.mark.docker
def test_trials_reuse_a_warm_docker_env_and_leave_no_container(tmp_path: Path) -> None:
    from agentenv_docker_sandbox.testing import require_docker

    require_docker("python:3.11-slim")
    import docker

    home = tmp_path / "home"
    folder = bundle_with(tmp_path, "")
    (folder / "envs" / "notes" / "Dockerfile").write_text(DOCKERFILE)
    done = agent_env(
        home, "run", str(folder), "--sandbox", "docker", "--trials", "3", "--pool", "1",
        "--concurrency", "1", timeout=900,  # the first build of the env's image takes minutes
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    recs = records(home)
    assert len(recs) == 3 and all(r["status"] == "passed" for r in recs), done.stderr
    assert len({r["reused"]["instance"] for r in recs}) == 1
    assert all(r["verifiers"]["notes-work"]["score"] == 1.0 for r in recs)
    warm = recs[0]["reused"]["instance"]
    client = docker.from_env()
    try:
        left = [
            c.name
            for c in client.containers.list(all=True, filters={"label": "io.agentenv.managed"})
            if c.labels.get("io.agentenv.run") == recs[0]["run_id"]
            or c.labels.get("io.agentenv.task_instance") == warm
        ]
    finally:
        client.close()
    assert left == []  # the warm instance's container went when the run ended
