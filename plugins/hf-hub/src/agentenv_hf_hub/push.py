"""`agent-env bundle push FOLDER hf://<org>/<repo>[@<branch>][/<path>]`: publish a validated
bundle folder to a Hub dataset repo with the real `huggingface_hub` client (create the repo and
the branch when missing, then one commit through `upload_folder`).

The commit makes the pushed place hold exactly the bundle: files of an earlier push that the
folder no longer has are deleted there (under `<path>/`, or, for the repo root, in the kind
folders and the root bundle files but the card only, so the card and other content stay).
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
#: What an earlier push to the repo root may have left that this one deletes: never the card.
_ROOT_OWNED = [*(f"{k}/*" for k in KIND_FOLDERS), *(f for f in ROOT_FILES if f != CARD)]


def push(folder: Path, destination: str, *, message: str | None = None) -> dict[str, Any]:
    """Upload `folder` to `destination`; where it went: `{destination, repo, revision, path,
    commit, url}`. `BundleError` naming the destination and what to do when it cannot."""
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
    hub = Hub(spec)
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
            commit_message=message or f"agent-env bundle push {Path(folder).name}",
            ignore_patterns=IGNORED,
            delete_patterns="*" if spec.path else _ROOT_OWNED,
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
