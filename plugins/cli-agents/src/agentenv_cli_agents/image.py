"""A CLI agent in a container sandbox: an image made from the sandbox's base image and the
CLI's install from the host's cache (its npm tree and the Node.js installed beside it), copied
in; nothing is downloaded in the build. The provider builds it
content-addressed, so the second trial (or run) reuses the image; the build context is kept
in the install cache next to the install (hard links, no second copy on disk).

The copied tree carries the host's native parts (Node.js, Codex's and OpenCode's binaries), so
the container must have the host's OS and CPU; the build runs `<cli> --version` in the image,
and a mismatch fails the build with its log.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

#: Where the CLI's npm tree lands in the image.
CLI_ROOT = "/opt/agentenv-cli"
#: The base image when neither the agent (`image`) nor the provider (`[sandbox.<p>] image`) names one.
DEFAULT_BASE = "python:3.11-slim"
#: Version of the context layout (part of the context folder's name).
LAYOUT = 2

DOCKERFILE = """\
FROM {base}
COPY cli/ {root}/
ENV PATH={node_bin}:$PATH NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
RUN node --version && {root}/node_modules/.bin/{binary} --version
"""


def executable(binary: str) -> str:
    """The CLI's path inside the image."""
    return f"{CLI_ROOT}/node_modules/.bin/{binary}"


def image_path(path: Path, install: Path) -> str:
    """Where `path` (a file of the host's `install`) is inside the image."""
    return f"{CLI_ROOT}/{path.relative_to(install).as_posix()}"


def _link(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system: copy
        shutil.copy2(src, dst)


def build_context(install: Path, base: str, binary: str) -> Path:
    """The build context for `install` (a cached npm install folder) on top of `base`; made
    once per (install, base image), reused afterwards."""
    from agentenv_cli_agents.install import bundled_node

    key = hashlib.sha256(f"{install.name}|{base}|{binary}|{LAYOUT}".encode()).hexdigest()[:16]
    context = install.parent / "images" / f"{install.name}-{key}"
    if (context / "Dockerfile").is_file():
        return context
    context.parent.mkdir(parents=True, exist_ok=True)
    staging = context.with_name(f".{context.name}.{time.time_ns()}")
    try:
        shutil.copytree(install, staging / "cli", symlinks=True, copy_function=_link)
        (staging / "Dockerfile").write_text(
            DOCKERFILE.format(
                base=base,
                root=CLI_ROOT,
                binary=binary,
                node_bin=image_path(bundled_node(install).parent, install),
            )
        )
        try:
            staging.rename(context)
        except OSError:
            if not (context / "Dockerfile").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return context
