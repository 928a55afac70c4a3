"""What a trial is as plain data (`TrialTicket`) and which bundle content it runs
(`bundle_digest`): shared by the engine's trials and `agent_env.engine.remote`."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class TrialTicket:
    """One trial to run: its slot (the first attempt's instance id), task, index and attempt."""

    slot: str
    task: str
    index: int
    attempt: int = 0

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> TrialTicket:
        return cls(**dict(doc))


def bundle_files(root: Path) -> Iterator[tuple[str, Path]]:
    """The files that make a bundle's content, sorted: hidden files and caches left out (what
    `bundle_digest` hashes and `publish_bundle` packs)."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(p.startswith(".") or p == "__pycache__" for p in rel.parts) or not path.is_file():
            continue
        yield rel.as_posix(), path


def bundle_digest(root: Path) -> str | None:
    """sha256 over a bundle folder's files (relative path and content); None if not a folder."""
    if not root.is_dir():
        return None
    h = hashlib.sha256()
    for rel, path in bundle_files(root):
        h.update(rel.encode() + b"\0")
        with open(path, "rb") as f:
            h.update(hashlib.file_digest(f, "sha256").digest())
    return "sha256:" + h.hexdigest()
