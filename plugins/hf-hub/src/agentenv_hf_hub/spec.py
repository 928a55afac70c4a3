"""Parsing `hf://<org>/<repo>[@<rev>][/<path>]` specs; a revision holding `/` is percent-encoded."""

from __future__ import annotations

import re
from urllib.parse import unquote

import attrs

from agent_env.errors import BundleError

SCHEME = "hf://"
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?$")
COMMIT_SHA = re.compile(r"^[0-9a-f]{40}$")
EXAMPLE = "hf://<org>/<repo>[@<revision>][/<path>]"


@attrs.frozen(kw_only=True)
class HubSpec:
    """A parsed `hf://` spec: `revision` is None when the spec names none (the main branch)."""

    spec: str
    org: str
    repo: str
    revision: str | None = None
    path: str | None = None

    @property
    def repo_id(self) -> str:
        return f"{self.org}/{self.repo}"

    @property
    def rev(self) -> str:
        return self.revision or "main"

    @property
    def pinned(self) -> bool:
        """True when the revision is a full commit sha, which never moves."""
        return bool(self.revision and COMMIT_SHA.match(self.revision))


def clean_path(path: str, *, spec: str) -> str | None:
    """Normalize a bundle path inside a repo; reject paths that leave it."""
    path = path.strip("/")
    if path in ("", "."):
        return None
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts) or "\\" in path:
        raise BundleError(
            f"{spec}: bundle path {path!r} must be a plain folder path inside the repo"
        )
    return path


def parse_spec(spec: str) -> HubSpec:
    """Split a spec into org, repo, revision and path, with an error naming what is wrong."""
    if not spec.startswith(SCHEME):
        raise BundleError(f"{spec!r} is not an hf:// spec (expected {EXAMPLE})")
    rest = spec[len(SCHEME) :]
    org, _, rest = rest.partition("/")
    match = re.match(r"^([^/@]*)(@[^/]*)?(?:/(.*))?$", rest)
    repo = match.group(1) if match else ""
    if match is None or not _NAME.match(org) or not _NAME.match(repo) or ".." in org + repo:
        raise BundleError(f"{spec!r}: expected {EXAMPLE} with an org and a repo name")
    revision = None
    if match.group(2):
        revision = unquote(match.group(2)[1:])
        if not revision:
            raise BundleError(f"{spec!r}: empty revision after '@' (expected {EXAMPLE})")
    path = clean_path(unquote(match.group(3) or ""), spec=spec)
    return HubSpec(spec=spec, org=org, repo=repo, revision=revision, path=path)
