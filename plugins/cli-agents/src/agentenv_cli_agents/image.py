"""A CLI agent in a container sandbox: an image made from the sandbox's base image, Node.js
(the one installed beside the CLI, else the image's own, else installed with the image's
`apt-get` from its Debian mirror) and the
CLI's npm tree from the host's install cache, copied in. The provider builds it
content-addressed, so the second trial (or run) reuses the image; the build context is kept
in the install cache next to the install (hard links, no second copy on disk).

The copied tree carries the host's native parts (Codex's and OpenCode's binaries), so the
container must have the host's OS and CPU; the build runs `<cli> --version` in the image, and
a mismatch (or a Node.js older than the CLI needs) fails the build with its log.
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
LAYOUT = 1

NODE_FROM_APT = """\
RUN command -v node >/dev/null 2>&1 || ( \\
    apt-get update -qq \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs \\
    && rm -rf /var/lib/apt/lists/* )
"""
DOCKERFILE = """\
FROM {base}
{node_from_apt}COPY cli/ {root}/
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
RUN {node} --version && {node} {root}/node_modules/.bin/{binary} --version
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
    node = bundled_node(install)
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
                node=image_path(node, install) if node else "node",
                node_from_apt="" if node else NODE_FROM_APT,
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
