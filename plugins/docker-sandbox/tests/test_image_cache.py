"""`agent-env cache prune --kind images` on a daemon two homes (and someone else) share: a home
removes the images it built and nothing else."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import docker
import pytest

from agentenv_docker_sandbox.cache_kind import HOME_LABEL, LABEL
from agentenv_docker_sandbox.images import build_image_sync
from agentenv_docker_sandbox.testing import tiny_image

AGENT_ENV = Path(sys.executable).with_name("agent-env")


def cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env["AGENT_ENV_HOME"] = str(home)
    return subprocess.run([AGENT_ENV, *args], env=env, capture_output=True, text=True, timeout=120)


def build_in(home: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """What a run in `home` builds: the content-addressed image of a one-file context."""
    folder.mkdir()
    (folder / "Dockerfile").write_text(f"FROM {tiny_image()}\nCOPY marker /marker\n")
    (folder / "marker").write_text(uuid.uuid4().hex)
    monkeypatch.setenv("AGENT_ENV_HOME", str(home))
    tag, built = build_image_sync(folder, "cache-test")
    assert built
    return tag


def test_prune_removes_this_homes_images_only(docker_client, tmp_path, monkeypatch):
    home_a, home_b = tmp_path / "home-a", tmp_path / "home-b"
    mine = build_in(home_a, tmp_path / "a", monkeypatch)
    theirs = build_in(home_b, tmp_path / "b", monkeypatch)
    # an image with our context label and no home (another user's agent-env, an older one)
    stranger = f"agentenv-test/stranger:{uuid.uuid4().hex[:12]}"
    docker_client.images.build(
        fileobj=io.BytesIO(f"FROM {tiny_image()}\n".encode()),
        tag=stranger,
        labels={LABEL: "0" * 64},
    )
    try:
        a_id, b_id = (home / "home-id" for home in (home_a, home_b))
        assert a_id.read_text() != b_id.read_text()
        labels = docker_client.images.get(mine).labels
        assert labels[HOME_LABEL] == a_id.read_text().strip()

        listed = cli(home_b, "cache", "list", "--kind", "images", "--json")
        assert listed.returncode == 0, listed.stderr
        assert theirs in listed.stdout and mine not in listed.stdout

        pruned = cli(home_a, "cache", "prune", "--kind", "images", "--json")
        assert pruned.returncode == 0, pruned.stderr
        rows = json.loads(pruned.stdout)["entries"]
        assert [(r["name"], r["action"]) for r in rows] == [(mine, "removed")]
        with pytest.raises(docker.errors.ImageNotFound):
            docker_client.images.get(mine)
        docker_client.images.get(theirs)
        docker_client.images.get(stranger)
    finally:
        for tag in (mine, theirs, stranger):
            try:
                docker_client.images.remove(tag, force=True)
            except docker.errors.ImageNotFound:
                pass
