"""Tar streams between the host and a container. Archives from a container are untrusted:
every member is checked before anything is written, and one that would land outside the
target (absolute names, `..`, links pointing out, devices) rejects the whole copy."""

from __future__ import annotations

import io
import posixpath
import tarfile
import time
from pathlib import Path, PurePosixPath

from agent_env.errors import SandboxError
from agent_env.fsutil import replacing_dir


def sandbox_path(path: str, workdir: str = "/app") -> str:
    """An absolute, normalised sandbox path (relative paths are under `workdir`)."""
    if not path:
        raise SandboxError("empty sandbox path")
    joined = posixpath.normpath(posixpath.join(workdir, path))
    return "/" + joined.lstrip("/")


def file_tar(path: str, data: bytes, mode: int = 0o644) -> bytes:
    """A tar holding `data` at `path` (relative to `/`; missing parents are created on extract)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(path.lstrip("/"))
        info.size = len(data)
        info.mode = mode
        info.mtime = int(time.time())
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def tree_tar(host_path: Path, path: str) -> bytes:
    """A tar of the host file or folder `host_path` placed at sandbox `path` (relative to `/`)."""
    host_path = Path(host_path)
    if not host_path.exists():
        raise SandboxError(f"cannot copy {host_path} into the sandbox: it does not exist")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(host_path), arcname=path.lstrip("/"), recursive=True)
    return buf.getvalue()


def _relative(name: str, strip: int) -> PurePosixPath | None:
    """The member path under the target after dropping `strip` leading parts (None for the
    dropped parts themselves). Absolute names and `..` are rejected."""
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts:
        raise SandboxError(f"archive member {name!r} escapes the target folder")
    parts = [p for p in pure.parts if p not in (".", "")]
    if len(parts) <= strip:
        return None
    return PurePosixPath(*parts[strip:])


def _check(member: tarfile.TarInfo, rel: PurePosixPath, strip: int) -> None:
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise SandboxError(f"archive member {member.name!r} is a device or fifo; refusing it")
    if member.issym():
        resolved = posixpath.normpath(posixpath.join(str(rel.parent), member.linkname))
        if member.linkname.startswith("/") or resolved == ".." or resolved.startswith("../"):
            raise SandboxError(
                f"archive member {member.name!r} links to {member.linkname!r}, outside the target"
            )
    if member.islnk():
        _relative(member.linkname, strip)


def extract(data: bytes, target: Path, *, strip: int = 1) -> None:
    """Extract a tar as Docker's `get_archive` makes it (one top entry named after the source)
    to `target`, replacing it. Nothing is written unless every member is safe."""
    target = Path(target)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        members = tar.getmembers()
        if not members:
            raise SandboxError("empty archive")
        plan: list[tuple[tarfile.TarInfo, PurePosixPath]] = []
        for member in members:
            rel = _relative(member.name, strip)
            if rel is not None:
                _check(member, rel, strip)
                plan.append((member, rel))
        top = members[0]
        if not top.isdir() and (len(members) != 1 or not top.isfile()):
            raise SandboxError(f"archive entry {top.name!r} is not a regular file or folder")
        with replacing_dir(target) as produced:
            if top.isdir():
                produced.mkdir()
                for member, rel in plan:
                    tar.extract(_renamed(member, str(rel), strip), produced, filter="data")
            else:
                tar.extract(
                    top.replace(name=produced.name, deep=False), produced.parent, filter="data"
                )


def _renamed(member: tarfile.TarInfo, name: str, strip: int) -> tarfile.TarInfo:
    copy = member.replace(name=name, deep=False)
    if member.islnk():
        copy = copy.replace(linkname=str(_relative(member.linkname, strip)), deep=False)
    return copy


def single_file(data: bytes, path: str) -> tuple[tarfile.TarInfo, bytes | None]:
    """The one member of a `get_archive` tar of a file: (info, bytes or None if not a file)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        member = tar.next()
        if member is None:
            raise FileNotFoundError(path)
        if member.isfile():
            handle = tar.extractfile(member)
            return member, handle.read() if handle else b""
        return member, None
