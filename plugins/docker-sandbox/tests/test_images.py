"""Content-addressed builds: the same context builds once, any change gives a new tag, and a
failed build raises with its log."""

from __future__ import annotations

import time

import pytest

from agent_env.errors import SandboxError
from agentenv_docker_sandbox.images import (
    ImageBuildError,
    build_image,
    build_image_sync,
    context_digest,
)
from agentenv_docker_sandbox.testing import BASE_IMAGE


def context(tmp_path, name="ctx", run="echo built > /built.txt", extra=""):
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\nCOPY app.py /app/app.py\nRUN {run}\n{extra}"
    )
    (folder / "app.py").write_text("print('hi')\n")
    return folder


@pytest.fixture
def cleanup(docker_client):
    tags: list[str] = []
    yield tags
    for tag in tags:
        try:
            docker_client.images.remove(tag, force=True)
        except Exception:  # noqa: BLE001
            pass


def test_same_context_builds_once_and_changes_give_new_tags(docker_client, tmp_path, cleanup):
    folder = context(tmp_path)
    tag, built = build_image_sync(folder, "Echo Env")
    cleanup.append(tag)
    assert built and tag == f"agentenv/echo-env:{context_digest(folder)}"
    assert len(tag.rsplit(":", 1)[1]) == 64
    out = docker_client.containers.run(tag, ["cat", "/built.txt", "/app/app.py"], remove=True)
    assert out == b"built\nprint('hi')\n"
    started = time.monotonic()
    again, built_again = build_image_sync(folder, "Echo Env")
    assert (again, built_again) == (tag, False)
    assert time.monotonic() - started < 2
    (folder / "app.py").write_text("print('changed')\n")
    changed, built_changed = build_image_sync(folder, "Echo Env")
    cleanup.append(changed)
    assert built_changed and changed != tag


def test_digest_ignores_dockerignored_files_but_not_modes(tmp_path):
    folder = context(tmp_path)
    (folder / ".dockerignore").write_text("*.log\n")
    before = context_digest(folder)
    (folder / "noise.log").write_text("x")
    assert context_digest(folder) == before
    (folder / "app.py").chmod(0o755)
    assert context_digest(folder) != before
    assert context_digest(folder, buildargs={"A": "1"}) != context_digest(folder)


@pytest.mark.anyio
async def test_failed_build_raises_with_the_build_log(docker_client, tmp_path):
    folder = context(tmp_path, run="echo about-to-fail && exit 7")
    with pytest.raises(ImageBuildError) as info:
        await build_image(folder, "broken")
    message = str(info.value)
    assert "about-to-fail" in message and "build log" in message
    assert "about-to-fail" in info.value.logs


def test_missing_dockerfile_is_a_clear_error(tmp_path):
    with pytest.raises(SandboxError, match="no Dockerfile"):
        context_digest(tmp_path)


def test_generated_dockerfile_and_extra_files_join_the_context_and_the_digest(
    docker_client, tmp_path, cleanup
):
    folder = tmp_path / "envonly"
    folder.mkdir()
    (folder / "server.py").write_text("print('env')\n")
    wheel = tmp_path / "dist" / "pkg-1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"not really a wheel")
    text = f"FROM {BASE_IMAGE}\nCOPY server.py wheels/ /app/\n"
    tag, built = build_image_sync(
        folder, "envonly", dockerfile_text=text, extra_files={"wheels/" + wheel.name: wheel}
    )
    cleanup.append(tag)
    assert built and not (folder / "Dockerfile").exists() and not (folder / "wheels").exists()
    out = docker_client.containers.run(tag, ["ls", "/app"], remove=True)
    assert out.split() == [b"pkg-1.0-py3-none-any.whl", b"server.py"]
    wheel.write_bytes(b"another build of the wheel")
    assert (
        context_digest(folder, dockerfile_text=text, extra_files={"wheels/" + wheel.name: wheel})
        != tag.rsplit(":", 1)[1]
    )


def test_a_non_root_user_reads_context_files_written_0600(docker_client, tmp_path, cleanup):
    """The object store's blobs are 0600; an env Dockerfile with `USER appuser` (the pattern
    of the existing product's example envs) must still read what it copied, and run what was
    executable on the host."""
    folder = tmp_path / "ctx"
    (folder / "pkg").mkdir(parents=True)
    (folder / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\nWORKDIR /app\nCOPY . /app\n"
        "RUN useradd --create-home --uid 10001 appuser\nUSER appuser\n"
    )
    (folder / "server.py").write_text("print('served')\n")
    (folder / "pkg" / "data.txt").write_text("data\n")
    (folder / "run.sh").write_text("#!/bin/sh\necho ran\n")
    for path, mode in [("server.py", 0o600), ("pkg/data.txt", 0o600), ("run.sh", 0o700)]:
        (folder / path).chmod(mode)
    (folder / "pkg").chmod(0o700)
    tag, built = build_image_sync(folder, "user-ctx")
    cleanup.append(tag)
    assert built
    out = docker_client.containers.run(
        tag,
        ["sh", "-c", "id -u; python server.py; cat pkg/data.txt; ./run.sh; stat -c %a server.py"],
        remove=True,
    )
    assert out.decode().split() == ["10001", "served", "data", "ran", "644"]
