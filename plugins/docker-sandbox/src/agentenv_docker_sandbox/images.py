"""Content-addressed image builds: the tag is the sha256 of the build context, so the same
context never builds twice, and a failed build raises with its log."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_env.errors import SandboxError
from agentenv_docker_sandbox.client import get_client, run

REPOSITORY = "agentenv"
LOG_TAIL = 80
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


class ImageBuildError(SandboxError):
    """`docker build` failed; `.logs` holds the build output."""

    def __init__(self, message: str, logs: str = ""):
        self.logs = logs
        super().__init__(message + (f"\n--- build log (last {LOG_TAIL} lines) ---\n{_tail(logs)}" if logs else ""))


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
        if fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(rel, pat.rstrip("/") + "/*") or rel.startswith(
            pat.rstrip("/") + "/"
        ):
            ignored = not negate
    return ignored


def context_digest(context_dir: Path, *, dockerfile: str = "Dockerfile",
                   buildargs: Mapping[str, str] | None = None) -> str:
    """sha256 over the context's file names, executable bits, link targets and bytes (less
    `.dockerignore`d paths), the Dockerfile name and the build args."""
    context = Path(context_dir)
    if not (context / dockerfile).is_file():
        raise SandboxError(f"cannot build {context}: no {dockerfile} in it")
    patterns = _ignore_patterns(context)
    digest = hashlib.sha256()
    digest.update(f"dockerfile={dockerfile}\n".encode())
    for key, value in sorted((buildargs or {}).items()):
        digest.update(f"arg {key}={value}\n".encode())
    entries = []
    for root, dirs, files in os.walk(context):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if (Path(root) / d).is_symlink()]:
            path = Path(root) / name
            rel = path.relative_to(context).as_posix()
            if rel != dockerfile and rel != ".dockerignore" and _ignored(rel, patterns):
                continue
            entries.append((rel, path))
    for rel, path in sorted(entries):
        if path.is_symlink():
            digest.update(f"link {rel} -> {os.readlink(path)}\n".encode())
            continue
        mode = "x" if os.access(path, os.X_OK) else "-"
        digest.update(f"file {rel} {mode} {path.stat().st_size}\n".encode())
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def image_tag(name: str, digest: str) -> str:
    repo = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._") or "image"
    return f"{REPOSITORY}/{repo}:{digest}"


def build_image_sync(context_dir: Path, name: str, *, dockerfile: str = "Dockerfile",
                     buildargs: Mapping[str, str] | None = None,
                     settings: Mapping[str, Any] | None = None) -> tuple[str, bool]:
    """Build `context_dir` as `agentenv/<name>:<context sha256>` unless that tag exists.
    Returns `(tag, built)`."""
    import docker.errors

    client = get_client(settings)
    tag = image_tag(name, context_digest(Path(context_dir), dockerfile=dockerfile, buildargs=buildargs))
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
                path=str(context_dir), tag=tag, dockerfile=dockerfile, buildargs=dict(buildargs or {}),
                rm=True, forcerm=True, decode=True, labels={"io.agentenv.context": tag.rsplit(":", 1)[1]},
            ):
                if "stream" in chunk:
                    lines.append(chunk["stream"])
                if "error" in chunk or "errorDetail" in chunk:
                    message = chunk.get("error") or chunk["errorDetail"].get("message", "")
                    lines.append(message + "\n")
                    raise ImageBuildError(f"building image {name!r} from {context_dir} failed: {message.strip()}",
                                          "".join(lines))
        except docker.errors.APIError as e:
            raise ImageBuildError(f"building image {name!r} from {context_dir} failed: {e.explanation or e}",
                                  "".join(lines)) from e
        try:
            client.images.get(tag)
        except docker.errors.ImageNotFound:
            raise ImageBuildError(f"building image {name!r} produced no image {tag}", "".join(lines)) from None
        return tag, True


async def build_image(context_dir: Path, name: str, *, dockerfile: str = "Dockerfile",
                      buildargs: Mapping[str, str] | None = None,
                      settings: Mapping[str, Any] | None = None) -> str:
    """Build (or reuse) the content-addressed image of `context_dir`; returns its tag."""
    tag, _ = await run(build_image_sync, Path(context_dir), name, dockerfile=dockerfile,
                       buildargs=buildargs, settings=settings)
    return tag
