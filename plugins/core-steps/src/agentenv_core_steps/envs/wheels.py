"""A wheel of `agentenv-framework-protocol` built from the installed (or checked-out) package.

Our distributions are not on the package index under these names (DESIGN.md §3), so an env
image or venv that needs `agentenv_protocol` installs this wheel. It is built without a
network or a build backend: the package folder plus the installed metadata, zipped with fixed
timestamps so the same sources give byte-identical wheels (and Docker build cache hits).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import os
import zipfile
from pathlib import Path

from agent_env.fsutil import replacing

DISTRIBUTION = "agentenv-framework-protocol"
PACKAGE = "agentenv_protocol"
_EPOCH = (1980, 1, 1, 0, 0, 0)
_WHEEL = (
    "Wheel-Version: 1.0\nGenerator: agentenv-core-steps\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
)


def _package_files(package_dir: Path) -> list[tuple[str, Path]]:
    out = []
    for path in sorted(package_dir.rglob("*")):
        if (
            path.is_file()
            and "__pycache__" not in path.parts
            and path.suffix not in (".pyc", ".pyo")
        ):
            out.append((f"{PACKAGE}/{path.relative_to(package_dir).as_posix()}", path))
    return out


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest},{len(data)}"


def protocol_wheel(out_dir: Path) -> Path:
    """The wheel of the importable `agentenv_protocol` in `out_dir` (reused when the sources
    are unchanged); its version is the installed distribution's."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{PACKAGE} is not importable; install {DISTRIBUTION}")
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    dist = importlib.metadata.distribution(DISTRIBUTION)
    metadata = (dist.read_text("METADATA") or "").encode()
    files = [(arc, path.read_bytes()) for arc, path in _package_files(package_dir)]
    digest = hashlib.sha256(metadata)
    for arc, data in files:
        digest.update(arc.encode() + b"\0" + hashlib.sha256(data).digest())
    stem = f"{DISTRIBUTION.replace('-', '_')}-{dist.version}"
    target = Path(out_dir) / digest.hexdigest()[:16] / f"{stem}-py3-none-any.whl"
    if target.exists():
        return target
    info = f"{stem}.dist-info"
    entries = [*files, (f"{info}/METADATA", metadata), (f"{info}/WHEEL", _WHEEL.encode())]
    record = (
        "".join(f"{arc},{_record_hash(data)}\n" for arc, data in entries) + f"{info}/RECORD,,\n"
    )
    entries.append((f"{info}/RECORD", record.encode()))
    with (
        replacing(target, suffix=".tmp") as tmp,
        zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf,
    ):
        for arc, data in entries:
            zi = zipfile.ZipInfo(arc, date_time=_EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; sandboxes may read it as another user
    return target
