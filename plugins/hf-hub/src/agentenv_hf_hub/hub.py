"""Calls to the Hub through `huggingface_hub`, with its errors turned into messages a user can act on."""

from __future__ import annotations

import os
from pathlib import Path

from agent_env.errors import BundleError
from agentenv_hf_hub.spec import HubSpec

LOGIN_HINT = "run `hf auth login` or set HF_TOKEN"


class HubUnreachable(Exception):
    """The Hub could not be reached (offline mode, network error or a server error)."""


def endpoint() -> str:
    """`HF_ENDPOINT` read now (the library reads it once at import), else the library's default."""
    value = os.environ.get("HF_ENDPOINT")
    if value:
        return value.rstrip("/")
    from huggingface_hub import constants

    return constants.ENDPOINT.rstrip("/")


def offline() -> bool:
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().upper() in ("1", "ON", "YES", "TRUE")


def has_token() -> bool:
    from huggingface_hub import get_token

    return bool(get_token())


def _network_error(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return isinstance(exc, (ConnectionError, TimeoutError)) or bool(
        names & {"TransportError", "ConnectionError", "Timeout", "OfflineModeIsEnabled"}
    )


class Hub:
    """The few Hub calls a bundle needs, for one spec."""

    def __init__(self, spec: HubSpec):
        from huggingface_hub import HfApi

        self.spec = spec
        self.endpoint = endpoint()
        self.api = HfApi(endpoint=self.endpoint)

    def translate(self, exc: Exception, *, file: str | None = None) -> Exception:
        from huggingface_hub import errors

        spec, repo = self.spec, self.spec.repo_id
        if isinstance(exc, errors.GatedRepoError):
            if has_token():
                return BundleError(
                    f"{spec.spec}: dataset {repo} is gated and your Hugging Face token has "
                    "no access to it; request access on its Hub page"
                )
            return BundleError(
                f"{spec.spec}: dataset {repo} is gated; {LOGIN_HINT} "
                "(with an account that accepted its conditions)"
            )
        if isinstance(exc, errors.RepositoryNotFoundError):
            if has_token():
                return BundleError(
                    f"{spec.spec}: dataset repo {repo} not found on {self.endpoint} "
                    "(or your Hugging Face token cannot see it)"
                )
            return BundleError(
                f"{spec.spec}: dataset repo {repo} not found on {self.endpoint}; if it is "
                f"private or gated, {LOGIN_HINT}"
            )
        if isinstance(exc, errors.RevisionNotFoundError):
            return BundleError(
                f"{spec.spec}: revision {spec.rev!r} not found in dataset {repo}"
                + self._suggest_revision()
            )
        if isinstance(exc, errors.LocalEntryNotFoundError):
            if isinstance(exc.__cause__, Exception):
                return self.translate(exc.__cause__, file=file)
            return HubUnreachable(str(exc).splitlines()[0])
        if isinstance(exc, errors.EntryNotFoundError):
            return BundleError(f"{spec.spec}: file {file!r} not found in dataset {repo}")
        if isinstance(exc, errors.HfHubHTTPError):
            status = exc.response.status_code if exc.response is not None else 0
            if status >= 500 or status == 429:
                return HubUnreachable(f"the Hub answered {status}")
            return BundleError(
                f"{spec.spec}: the Hub refused the request: {str(exc).splitlines()[0]}"
            )
        if _network_error(exc):
            return HubUnreachable(f"{type(exc).__name__}: {exc}")
        return exc

    def _suggest_revision(self) -> str:
        try:
            refs = self.api.list_repo_refs(self.spec.repo_id, repo_type="dataset")
        except Exception:
            return ""
        from agent_env.suggest import did_you_mean

        names = [r.name for r in [*refs.branches, *refs.tags]]
        hint = did_you_mean(self.spec.rev, names)
        return hint or (f" (branches and tags: {', '.join(sorted(names))})" if names else "")

    def revision(self) -> tuple[str, list[str]]:
        """The commit the spec's revision points at, and that commit's file list."""
        try:
            info = self.api.dataset_info(self.spec.repo_id, revision=self.spec.rev)
        except Exception as exc:
            raise self.translate(exc) from exc
        return info.sha or "", [s.rfilename for s in (info.siblings or [])]

    def download(self, commit: str, filename: str, into: Path) -> Path:
        """Download one file of `commit` to `into/<filename>`."""
        from huggingface_hub import hf_hub_download

        try:
            path = hf_hub_download(
                self.spec.repo_id,
                filename,
                repo_type="dataset",
                revision=commit,
                local_dir=into,
                endpoint=self.endpoint,
            )
        except Exception as exc:
            raise self.translate(exc, file=filename) from exc
        return Path(path)
