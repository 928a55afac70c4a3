"""Skills given to the proxy: written once each to `<skills dir>/<name>/`, inline (`skill_md`)
or as a bundle of objects to download; a skill whose files can't all be had leaves no folder."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentenv_protocol.agent.server import SKILL_NAME
from agentenv_protocol.transfers import ReadObject

Download = Callable[[ReadObject, Path], Awaitable[Any]]


class SkillExists(Exception):
    """A skill of that name was already written."""


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1)
    object: ReadObject


class _Bundle(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_total_bytes: int = Field(gt=0)
    files: list[_File] = Field(min_length=1)


def _relative(path: str) -> PurePosixPath:
    parts = PurePosixPath(path)
    if parts.is_absolute() or ".." in parts.parts or "\\" in path:
        raise ValueError(f"skill file path {path!r} must be relative, without '..'")
    return parts


async def write_skill(body: dict[str, Any], skills_dir: Path, download: Download) -> dict[str, str]:
    """Write the skill `body` describes; `{name, description, path}`. ValueError naming the bad
    field, SkillExists, or the download's own error (nothing is left behind)."""
    name, description = body.get("name"), body.get("description")
    if not isinstance(name, str) or not SKILL_NAME.match(name):
        raise ValueError(f"'name' {name!r} must match {SKILL_NAME.pattern}")
    if not isinstance(description, str):
        raise ValueError("'description' must be a string")
    if ("skill_md" in body) == ("skill_bundle" in body):
        raise ValueError("a skill carries exactly one of 'skill_md' and 'skill_bundle'")
    extra = set(body) - {"name", "description", "skill_md", "skill_bundle"}
    if extra:
        raise ValueError(f"unknown skill field {sorted(extra)[0]!r}")
    target = skills_dir / name
    if target.exists():
        raise SkillExists(name)
    files: list[_File] = []
    bundle: _Bundle | None = None
    if "skill_bundle" in body:
        try:
            bundle = _Bundle.model_validate(body["skill_bundle"])
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"'skill_bundle.{where}': {first['msg']}") from None
        files = bundle.files
        paths = [_relative(f.path) for f in files]
        if PurePosixPath("SKILL.md") not in paths:
            raise ValueError("a skill bundle must hold a SKILL.md")
    elif not isinstance(body["skill_md"], str):
        raise ValueError("'skill_md' must be a string")
    skills_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=skills_dir))
    try:
        if bundle is None:
            (staging / "SKILL.md").write_text(body["skill_md"], encoding="utf-8")
        else:
            for file in files:
                destination = staging / _relative(file.path)
                destination.parent.mkdir(parents=True, exist_ok=True)
                await download(file.object, destination)
            total = sum(p.stat().st_size for p in staging.rglob("*") if p.is_file())
            if total > bundle.max_total_bytes:
                raise ValueError(
                    f"the skill's files are {total} bytes, over its max_total_bytes "
                    f"{bundle.max_total_bytes}"
                )
        try:
            staging.rename(target)
        except OSError:
            if target.exists():  # written meanwhile by another request
                raise SkillExists(name) from None
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {"name": name, "description": description, "path": str(target)}
