"""The local sandbox's path mapping: sandbox paths under `/app` to host paths in its work
folder, and `/app` rewritten in command text. Pure functions (no I/O)."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from agent_env.errors import SandboxError

_APP = re.compile(r"(?<![\w./~$}-])/app(?![\w.-])")


def host_path(folder: Path, sandbox_id: str, path: str) -> Path:
    """The host path of sandbox path `path` in work folder `folder`; SandboxError outside
    `/app` or when `..` escapes it."""
    p = PurePosixPath(path)
    if p.is_absolute():
        parts = p.parts
        if len(parts) < 2 or parts[1] != "app":
            raise SandboxError(
                f"local sandbox {sandbox_id}: {path!r} is outside /app, the only sandbox "
                "path the local provider maps (into its work folder)"
            )
        rel = PurePosixPath(*parts[2:]) if len(parts) > 2 else PurePosixPath()
    else:
        rel = p
    if ".." in rel.parts:
        resolved = os.path.normpath(folder / rel)
        if resolved != str(folder) and not resolved.startswith(str(folder) + "/"):
            raise SandboxError(f"local sandbox {sandbox_id}: {path!r} escapes /app")
    return folder.joinpath(*rel.parts) if rel.parts else folder


def rewrite(folder: Path, text: str) -> str:
    """`text` with every standalone `/app` replaced by `folder`."""
    replacement = str(folder)
    return _APP.sub(lambda _m: replacement, text)
