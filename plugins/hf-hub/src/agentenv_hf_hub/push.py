"""`agent-env bundle push FOLDER hf://<org>/<repo>[@<branch>][/<path>]`: publish a validated
bundle folder to a Hub dataset repo with the real `huggingface_hub` client (create the repo and
the branch when missing, then one commit through `upload_folder`); `runs export RUN --to
hf://...` pushes a dataset folder (card + `data/`) the same way.

The commit makes the pushed place hold exactly the bundle: files of an earlier push that the
folder no longer has are deleted there (under `<path>/`, or, for the repo root, in the kind
folders and the root bundle files but the card only, so the card and other content stay; a
dataset push deletes the earlier `data/` files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_env.errors import BundleError
from agentenv_hf_hub.hub import LOGIN_HINT, Hub, has_token, offline
from agentenv_hf_hub.layout import CARD, KIND_FOLDERS, ROOT_FILES
from agentenv_hf_hub.spec import parse_spec

#: Never uploaded: version control, caches, virtualenvs.
IGNORED = [".git/*", "**/.git/*", "**/__pycache__/*", "*.pyc", ".venv/*", "**/.venv/*"]
#: Where a dataset export keeps its data files (an export replaces what an earlier one left).
DATA_FOLDER = "data"
#: What an earlier push to the repo root may have left that this one deletes: never the card.
_ROOT_OWNED = [*(f"{k}/*" for k in KIND_FOLDERS), *(f for f in ROOT_FILES if f != CARD)]


def _writable(destination: str) -> tuple[Any, Hub]:
    """The spec and client of a destination that can be pushed to; `BundleError` naming it
    and what to do otherwise (a pinned commit, offline, no token)."""
    spec = parse_spec(destination)
    if spec.pinned:
        raise BundleError(
            f"{destination}: a commit sha cannot be pushed to; name a branch (hf://org/repo@branch)"
        )
    if offline():
        raise BundleError(f"{destination}: cannot push with HF_HUB_OFFLINE set")
    if not has_token():
        raise BundleError(
            f"{destination}: pushing to the Hub needs a token with write access; {LOGIN_HINT}"
        )
    return spec, Hub(spec)


def push(folder: Path, destination: str, *, message: str | None = None) -> dict[str, Any]:
    """Upload `folder` to `destination`; where it went: `{destination, repo, revision, path,
    commit, url}`. `BundleError` naming the destination and what to do when it cannot."""
    return _upload(
        folder,
        destination,
        message=message or f"agent-env bundle push {Path(folder).name}",
        root_owned=_ROOT_OWNED,
    )


def push_dataset(folder: Path, destination: str, *, message: str | None = None) -> dict[str, Any]:
    """Upload the dataset folder `runs export --to` wrote (README.md card + `data/`) to
    `destination`, replacing the data files of an earlier export there; as `push` answers."""
    return _upload(
        folder,
        destination,
        message=message or "agent-env runs export",
        root_owned=[f"{DATA_FOLDER}/*"],
    )


def _upload(
    folder: Path, destination: str, *, message: str, root_owned: list[str]
) -> dict[str, Any]:
    spec, hub = _writable(destination)
    api = hub.api
    try:
        api.create_repo(spec.repo_id, repo_type="dataset", exist_ok=True)
        if spec.revision is not None:
            api.create_branch(spec.repo_id, branch=spec.rev, repo_type="dataset", exist_ok=True)
        info = api.upload_folder(
            folder_path=folder,
            repo_id=spec.repo_id,
            repo_type="dataset",
            revision=spec.rev,
            path_in_repo=spec.path or "",
            commit_message=message,
            ignore_patterns=IGNORED,
            delete_patterns="*" if spec.path else root_owned,
        )
    except Exception as exc:
        raise hub.translate(exc) from exc
    return {
        "destination": destination,
        "repo": spec.repo_id,
        "revision": spec.rev,
        "path": spec.path,
        "commit": info.oid,
        "url": info.commit_url,
    }
