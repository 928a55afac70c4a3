"""The on-disk cache of Hub bundles: `<cache>/hf/<org>/<repo>/<commit>/` plus small JSON manifests.

Beside each commit folder sits `<commit>.json` (the commit's file list, and which bundle paths are
complete) and `refs.json` (the last commit each revision resolved to, for offline runs). Files are
downloaded into a staging folder and moved into place, so a file present is a complete file.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from agent_env.fsutil import atomic_write
from agent_env.paths import cache_dir


def _write_json(path: Path, data: dict) -> None:
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True), prefix=".tmp-")


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@attrs.frozen
class RepoCache:
    """One repo's cache folder."""

    root: Path

    @classmethod
    def for_repo(cls, org: str, repo: str) -> RepoCache:
        return cls(cache_dir() / "hf" / org / repo)

    def commit_dir(self, commit: str) -> Path:
        return self.root / commit

    def manifest(self, commit: str) -> dict | None:
        data = _read_json(self.root / f"{commit}.json")
        if data is None or not isinstance(data.get("siblings"), list):
            return None
        return data

    def write_manifest(self, commit: str, data: dict) -> None:
        _write_json(self.root / f"{commit}.json", data)

    def cached_commit(self, revision: str) -> str | None:
        return (_read_json(self.root / "refs.json") or {}).get(revision)

    def remember(self, revision: str, commit: str) -> None:
        refs = _read_json(self.root / "refs.json") or {}
        if refs.get(revision) != commit:
            refs[revision] = commit
            _write_json(self.root / "refs.json", refs)

    def lock(self, timeout: float = 300.0):
        """A cross-process lock held while files are added to this repo's cache."""
        from filelock import FileLock

        self.root.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.root / ".lock"), timeout=timeout)

    def has(self, commit: str, files: list[str]) -> bool:
        folder = self.commit_dir(commit)
        return all((folder / f).is_file() for f in files)

    def inside(self, commit: str, name: str) -> bool:
        """True when repo file `name` lands inside the commit folder once resolved."""
        folder = self.commit_dir(commit).resolve()
        target = (folder / name).resolve()
        return target != folder and folder in target.parents
