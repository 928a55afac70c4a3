"""Content-addressed image builds: the tag is the sha256 of the build context, so the same
context never builds twice, and a failed build raises with its log."""

from __future__ import annotations

import fnmatch
import hashlib
import io
import os
import re
import tarfile
import threading
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, ParamSpec

from agent_env.errors import SandboxError
from agentenv_docker_sandbox.cache_kind import build_labels
from agentenv_docker_sandbox.client import get_client, run

REPOSITORY = "agentenv"
LOG_TAIL = 80
#: Version of the build archive's layout, part of every context digest.
ARCHIVE_LAYOUT = 2
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()
P = ParamSpec("P")


class ImageBuildError(SandboxError):
    """`docker build` failed; `.logs` holds the build output."""

    def __init__(self, message: str, logs: str = ""):
        self.logs = logs
        super().__init__(
            message
            + (f"\n--- build log (last {LOG_TAIL} lines) ---\n{_tail(logs)}" if logs else "")
        )


def _tail(text: str, lines: int = LOG_TAIL) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _ignore_patterns(context: Path) -> list[str]:
    path = context / ".dockerignore"
    if not path.is_file():
        return []
    patterns = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            patterns.append(line.lstrip("/"))
    return patterns


def _ignored(rel: str, patterns: list[str]) -> bool:
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pat = pattern[1:] if negate else pattern
        if (
            fnmatch.fnmatch(rel, pat)
            or fnmatch.fnmatch(rel, pat.rstrip("/") + "/*")
            or rel.startswith(pat.rstrip("/") + "/")
        ):
            ignored = not negate
    return ignored


def _entries(
    context: Path,
    dockerfile: str,
    dockerfile_text: str | None,
    extra_files: Mapping[str, Path] | None,
) -> dict[str, Path | bytes]:
    """What goes into the build: the context folder less `.dockerignore`d paths, then the
    extra files, then a generated Dockerfile (archive name -> host path or bytes)."""
    if not context.is_dir():
        raise SandboxError(f"cannot build {context}: not a folder")
    if dockerfile_text is None and not (context / dockerfile).is_file():
        raise SandboxError(f"cannot build {context}: no {dockerfile} in it")
    patterns = _ignore_patterns(context)
    entries: dict[str, Path | bytes] = {}
    for root, dirs, files in os.walk(context):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if (Path(root) / d).is_symlink()]:
            path = Path(root) / name
            rel = path.relative_to(context).as_posix()
            if rel not in (dockerfile, ".dockerignore") and _ignored(rel, patterns):
                continue
            entries[rel] = path
    for rel, path in (extra_files or {}).items():
        if not Path(path).is_file():
            raise SandboxError(f"cannot build {context}: extra file {path} does not exist")
        entries[rel.lstrip("/")] = Path(path)
    if dockerfile_text is not None:
        entries[dockerfile] = dockerfile_text.encode()
    return entries


def context_digest(
    context_dir: Path,
    *,
    dockerfile: str = "Dockerfile",
    buildargs: Mapping[str, str] | None = None,
    dockerfile_text: str | None = None,
    extra_files: Mapping[str, Path] | None = None,
) -> str:
    """sha256 over the build's file names, executable bits, link targets and bytes (less
    `.dockerignore`d paths), the Dockerfile name and the build args."""
    entries = _entries(Path(context_dir), dockerfile, dockerfile_text, extra_files)
    digest = hashlib.sha256()
    # the layout of the archive sent to the daemon: bump when it changes (file modes became
    # 0644/0755 in 2), so an image built from an older archive is not reused
    digest.update(f"archive={ARCHIVE_LAYOUT}\n".encode())
    digest.update(f"dockerfile={dockerfile}\n".encode())
    for key, value in sorted((buildargs or {}).items()):
        digest.update(f"arg {key}={value}\n".encode())
    for rel, source in sorted(entries.items()):
        if isinstance(source, bytes):
            digest.update(f"file {rel} - {len(source)}\n".encode())
            digest.update(source)
            continue
        if source.is_symlink():
            digest.update(f"link {rel} -> {os.readlink(source)}\n".encode())
            continue
        mode = "x" if os.access(source, os.X_OK) else "-"
        digest.update(f"file {rel} {mode} {source.stat().st_size}\n".encode())
        with open(source, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _readable(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """A context member as every user of the image may read it: owned by root, 0644 (0755
    when executable by anyone on the host). The host copy may be 0600 (the object store's
    blobs are), which a Dockerfile's `USER appuser` could not read."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if info.isfile():
        info.mode = 0o755 if info.mode & 0o111 else 0o644
    return info


def _context_tar(entries: Mapping[str, Path | bytes]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel, source in sorted(entries.items()):
            if isinstance(source, bytes):
                info = tarfile.TarInfo(rel)
                info.size = len(source)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(source))
            else:
                tar.add(str(source), arcname=rel, recursive=False, filter=_readable)
    buf.seek(0)
    return buf


def image_tag(name: str, digest: str) -> str:
    repo = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._") or "image"
    return f"{REPOSITORY}/{repo}:{digest}"


def build_image_sync(
    context_dir: Path,
    name: str,
    *,
    dockerfile: str = "Dockerfile",
    buildargs: Mapping[str, str] | None = None,
    dockerfile_text: str | None = None,
    extra_files: Mapping[str, Path] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> tuple[str, bool]:
    """Build `context_dir` as `agentenv/<name>:<content sha256>` unless that tag exists.
    `dockerfile_text` replaces the folder's Dockerfile; `extra_files` (archive name -> host
    file) join the context, e.g. a wheel built from the checkout. Returns `(tag, built)`."""
    import docker.errors

    client = get_client(settings)
    context = Path(context_dir)
    entries = _entries(context, dockerfile, dockerfile_text, extra_files)
    tag = image_tag(
        name,
        context_digest(
            context,
            dockerfile=dockerfile,
            buildargs=buildargs,
            dockerfile_text=dockerfile_text,
            extra_files=extra_files,
        ),
    )
    with _locks_guard:
        lock = _locks.setdefault(tag, threading.Lock())
    with lock:
        try:
            client.images.get(tag)
            return tag, False
        except docker.errors.ImageNotFound:
            pass
        lines: list[str] = []
        try:
            for chunk in client.api.build(
                fileobj=_context_tar(entries),
                custom_context=True,
                tag=tag,
                dockerfile=dockerfile,
                buildargs=dict(buildargs or {}),
                rm=True,
                forcerm=True,
                decode=True,
                labels=build_labels(tag.rsplit(":", 1)[1]),
            ):
                if "stream" in chunk:
                    lines.append(chunk["stream"])
                if "error" in chunk or "errorDetail" in chunk:
                    message = chunk.get("error") or chunk["errorDetail"].get("message", "")
                    lines.append(message + "\n")
                    raise ImageBuildError(
                        f"building image {name!r} from {context_dir} failed: {message.strip()}",
                        "".join(lines),
                    )
        except docker.errors.APIError as e:
            raise ImageBuildError(
                f"building image {name!r} from {context_dir} failed: {e.explanation or e}",
                "".join(lines),
            ) from e
        try:
            client.images.get(tag)
        except docker.errors.ImageNotFound:
            raise ImageBuildError(
                f"building image {name!r} produced no image {tag}", "".join(lines)
            ) from None
        return tag, True


def _tag_in_thread(
    build: Callable[P, tuple[str, bool]],
) -> Callable[P, Coroutine[Any, Any, str]]:
    async def build_image(*args: P.args, **kwargs: P.kwargs) -> str:
        """Build (or reuse) the content-addressed image of `context_dir` in a worker thread;
        returns its tag. Takes what `build_image_sync` takes."""
        tag, _ = await run(build, *args, **kwargs)
        return tag

    return build_image


build_image = _tag_in_thread(build_image_sync)
