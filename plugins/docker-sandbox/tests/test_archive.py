"""Archives from a container are untrusted: members that would land outside the target are
refused and nothing is written."""

from __future__ import annotations

import io
import tarfile

import pytest

from agent_env.errors import SandboxError
from agent_env.sandbox import SandboxSpec
from agentenv_docker_sandbox import archive
from agentenv_docker_sandbox.testing import BASE_IMAGE


def make_tar(*members: tuple[str, str, str]) -> bytes:
    """members: (name, kind, payload) with kind "file" (payload = content), "dir", "sym" or
    "lnk" (payload = link target)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                data = payload.encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "lnk": tarfile.LNKTYPE}[
                kind
            ]
            info.mode = 0o755 if kind == "dir" else 0o777
            info.linkname = payload
            tar.addfile(info)
    return buf.getvalue()


@pytest.mark.parametrize(
    "members",
    [
        [("out", "dir", ""), ("out/../../evil.txt", "file", "x")],
        [("out", "dir", ""), ("/etc/evil.txt", "file", "x")],
        [("out", "dir", ""), ("out/link", "sym", "/etc/passwd")],
        [("out", "dir", ""), ("out/link", "sym", "../../../etc")],
        [("out", "dir", ""), ("out/hard", "lnk", "../etc/passwd")],
    ],
    ids=["dotdot", "absolute", "abs-symlink", "escaping-symlink", "escaping-hardlink"],
)
def test_escaping_members_are_rejected_and_nothing_is_written(tmp_path, members):
    target = tmp_path / "dest" / "out"
    with pytest.raises(SandboxError, match="outside the target|escapes the target"):
        archive.extract(make_tar(*members, ("out/ok.txt", "file", "fine")), target)
    assert not target.exists()
    assert not (tmp_path / "evil.txt").exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == []


def test_safe_archives_extract_with_links_inside(tmp_path):
    data = make_tar(
        ("out", "dir", ""),
        ("out/a.txt", "file", "A"),
        ("out/sub", "dir", ""),
        ("out/sub/rel", "sym", "../a.txt"),
    )
    archive.extract(data, tmp_path / "copy")
    assert (tmp_path / "copy" / "a.txt").read_text() == "A"
    assert (tmp_path / "copy" / "sub" / "rel").read_text() == "A"


def test_devices_are_refused(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("out")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        dev = tarfile.TarInfo("out/null")
        dev.type = tarfile.CHRTYPE
        tar.addfile(dev)
    with pytest.raises(SandboxError, match="device"):
        archive.extract(buf.getvalue(), tmp_path / "x")
    assert not (tmp_path / "x").exists()


@pytest.mark.anyio
async def test_copy_out_of_a_folder_whose_symlink_escapes_is_refused(provider, tmp_path):
    box = await provider.create(SandboxSpec(image=BASE_IMAGE))
    try:
        await box.exec(
            "mkdir -p /app/out && echo hi > /app/out/a.txt && ln -s /etc/passwd /app/out/pw",
            timeout=30,
        )
        with pytest.raises(SandboxError, match="outside the target"):
            await box.copy_out("/app/out", tmp_path / "out")
        assert not (tmp_path / "out").exists()
        assert not any(p.name.startswith(".out") for p in tmp_path.iterdir())
        # Reading through a link in the sandbox resolves it inside the sandbox.
        await box.exec("ln -s /app/out/a.txt /app/alias", timeout=30)
        assert await box.read_file("/app/alias") == b"hi\n"
    finally:
        await box.teardown()
