"""The write half of the local Hub (`testing.LocalHub`): what `huggingface_hub` calls to create
a repo, a branch and a commit (`HfApi.create_repo`, `create_branch`, `upload_folder` /
`create_commit`). Every file is taken as a regular git blob (`preupload` answers `regular`),
so no LFS or Xet transfer is needed; an `lfsFile` line in a commit is refused.
"""

from __future__ import annotations

import base64
import json
from typing import Any

INITIAL_FILES = {".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"}


class WriteRefused(Exception):
    """A write the Hub would refuse: `status`, `code` (the `X-Error-Code`) and the message."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code = status, code


def created_repo_id(body: bytes) -> str:
    """The repo id a `POST /api/repos/create` asks for (`{name, organization, type}`)."""
    payload = json_body(body)
    if payload.get("type") != "dataset":
        raise WriteRefused(400, "BadRequest", "the local Hub holds dataset repos only")
    name, org = payload.get("name"), payload.get("organization")
    if not isinstance(name, str) or not name:
        raise WriteRefused(400, "BadRequest", "name: required")
    return f"{org}/{name}" if org else name


def preupload_answer(body: bytes) -> dict[str, Any]:
    """Every file of a preupload request goes as a regular blob, none ignored."""
    files = json_body(body).get("files") or []
    return {
        "files": [
            {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files
        ]
    }


def apply_commit(tree: dict[str, bytes], body: bytes) -> tuple[dict[str, bytes], str]:
    """The tree after a commit's NDJSON operations (header, file, deletedFile, deletedFolder),
    and its summary line."""
    new, summary = dict(tree), ""
    for line in body.splitlines():
        if not line.strip():
            continue
        item = json_body(line)
        key, value = item.get("key"), item.get("value") or {}
        path = str(value.get("path", "")).strip("/")
        if key == "header":
            summary = str(value.get("summary") or "")
        elif key == "file":
            if value.get("encoding") != "base64":
                raise WriteRefused(400, "BadRequest", f"{path}: only base64 content is accepted")
            new[path] = base64.b64decode(value.get("content") or "")
        elif key == "deletedFile":
            if new.pop(path, None) is None:
                raise WriteRefused(404, "EntryNotFound", f"{path}: no such file to delete")
        elif key == "deletedFolder":
            for name in [p for p in new if p.startswith(path + "/")]:
                del new[name]
        else:
            raise WriteRefused(400, "BadRequest", f"commit operation {key!r} is not supported")
    return new, summary


def json_body(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        raise WriteRefused(400, "BadRequest", "the body is not JSON") from None
    if not isinstance(value, dict):
        raise WriteRefused(400, "BadRequest", "the body is not a JSON object")
    return value
