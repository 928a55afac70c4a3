"""Resolving an `hf://` spec to a cached local folder: revision -> commit -> bundle -> files.

A full commit sha that is already cached costs no request; any other revision costs one cheap
revision lookup (none when offline) and downloads nothing once the commit's bundle is cached.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs

from agent_env.errors import AgentEnvError, BundleError
from agentenv_hf_hub.cache import RepoCache
from agentenv_hf_hub.card import parse_card
from agentenv_hf_hub.hub import Hub, HubUnreachable, endpoint, offline
from agentenv_hf_hub.layout import CARD, Selected, select, unsafe_paths
from agentenv_hf_hub.spec import COMMIT_SHA, HubSpec, parse_spec

DOWNLOAD_WORKERS = 8


class HubUnavailable(AgentEnvError):
    """The Hub cannot be reached and the cache cannot stand in: a network problem, so the run
    exits 1 (not 2, which says the spec or the bundle is wrong)."""


@attrs.frozen(kw_only=True)
class Fetched:
    """A Hub bundle on disk: what `agent_env.bundles.ResolvedSource` carries, plus what it cost."""

    path: Path
    provenance: dict
    id_prefix: str
    name: str
    downloaded: int = 0


@attrs.define
class _Resolver:
    spec: HubSpec
    cache: RepoCache
    hub: Hub | None = None
    offline_reason: str | None = None
    downloaded: int = 0

    def client(self) -> Hub:
        if self.hub is None:
            self.hub = Hub(self.spec)
        return self.hub

    def commit(self) -> tuple[str, list[str] | None]:
        """The commit to use and, when the Hub was asked, its file list."""
        spec = self.spec
        pinned = spec.revision if spec.pinned else None
        if pinned is not None and self.cache.manifest(pinned) is not None:
            return pinned, None
        if offline():
            self.offline_reason = "HF_HUB_OFFLINE is set"
        else:
            try:
                commit, siblings = self.client().revision()
            except HubUnreachable as exc:
                self.offline_reason = str(exc)
            else:
                if not COMMIT_SHA.match(commit):
                    raise BundleError(
                        f"{spec.spec}: the Hub answered an invalid commit id {commit!r}"
                    )
                self.cache.remember(spec.rev, commit)
                return commit, siblings
        cached = pinned or self.cache.cached_commit(spec.rev)
        if cached is None or self.cache.manifest(cached) is None:
            raise HubUnavailable(
                f"{spec.spec}: cannot reach the Hub at {endpoint()} ({self.offline_reason}) and no commit "
                f"of {spec.repo_id}@{spec.rev} is cached; run it once while online"
            )
        print(
            f"{spec.spec}: Hub unreachable ({self.offline_reason}); using cached commit {cached}",
            file=sys.stderr,
        )
        return cached, None

    def fetch(self, commit: str, files: list[str]) -> None:
        """Download the files of `commit` not yet cached; each lands complete or not at all."""
        missing = [f for f in files if not (self.cache.commit_dir(commit) / f).is_file()]
        if not missing:
            return
        if self.offline_reason:
            raise HubUnavailable(
                f"{self.spec.spec}: cannot reach the Hub at {endpoint()} ({self.offline_reason}) and "
                f"commit {commit} of {self.spec.repo_id} is cached without these files: "
                + ", ".join(missing[:5])
                + (" ..." if len(missing) > 5 else "")
            )
        folder = self.cache.commit_dir(commit)
        with self.cache.lock():
            missing = [f for f in missing if not (folder / f).is_file()]
            for stale in self.cache.root.glob(".staging-*"):
                shutil.rmtree(stale, ignore_errors=True)
            staging = Path(tempfile.mkdtemp(dir=self.cache.root, prefix=".staging-"))
            try:
                hub = self.client()
                with ThreadPoolExecutor(max_workers=min(DOWNLOAD_WORKERS, len(missing))) as pool:
                    list(pool.map(lambda name: hub.download(commit, name, staging), missing))
            except HubUnreachable as exc:
                raise BundleError(
                    f"{self.spec.spec}: downloading commit {commit} of {self.spec.repo_id} "
                    f"failed ({exc}); nothing was added to the cache"
                ) from None
            else:
                for name in missing:
                    target = folder / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(staging / name, target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        self.downloaded += len(missing)

    def run(self) -> Fetched:
        spec = self.spec
        commit, siblings = self.commit()
        manifest = self.cache.manifest(commit) or {}
        if siblings is None:
            siblings = manifest["siblings"]
        bad = unsafe_paths(siblings) or [n for n in siblings if not self.cache.inside(commit, n)]
        if bad:
            raise BundleError(
                f"{spec.spec}: {spec.repo_id} at commit {commit} has files whose paths would escape the "
                "cache folder; refusing to download it",
                [repr(n) for n in bad[:10]],
            )
        if not manifest:
            manifest = {"commit": commit, "repo": spec.repo_id, "siblings": siblings, "bundles": []}
        folder = self.cache.commit_dir(commit)
        card_text = None
        if CARD in siblings:
            self.fetch(commit, [CARD])
            card_text = (folder / CARD).read_text(encoding="utf-8", errors="replace")
        if not (self.cache.root / f"{commit}.json").exists():
            self.cache.write_manifest(commit, manifest)
        card = parse_card(card_text, where=f"{spec.spec} README.md")
        selected = select(spec, siblings, card)
        self.check_plugins(commit, selected, siblings, card)
        key = selected.path or ""
        files = selected.files(siblings)
        if key not in manifest["bundles"] or not self.cache.has(commit, files):
            self.fetch(commit, files)
            manifest = self.cache.manifest(commit) or manifest
            manifest["bundles"] = sorted({*manifest["bundles"], key})
            self.cache.write_manifest(commit, manifest)
        return self.result(commit, selected, card)

    def check_plugins(self, commit: str, selected: Selected, siblings: list[str], card) -> None:
        """The bundle's bundle.toml requirements, else the card's: checked before the bundle downloads."""
        meta = card.meta(selected.name)
        toml = f"{selected.path}/bundle.toml" if selected.path else "bundle.toml"
        from agent_env.bundles import bundle_toml_requirements, check_requirements

        if toml in siblings:
            self.fetch(commit, [toml])
            text = (self.cache.commit_dir(commit) / toml).read_text(encoding="utf-8")
            where = f"{toml} at commit {commit[:12]} of {self.spec.spec}"
            plugins = bundle_toml_requirements(text, where=where)
        else:
            plugins, where = list(meta.plugins), f"the dataset card of {self.spec.spec}"
        check_requirements(plugins, bundle=selected.name, setup=meta.setup, where=where)

    def result(self, commit: str, selected: Selected, card) -> Fetched:
        spec = self.spec
        folder = self.cache.commit_dir(commit)
        path = folder / selected.path if selected.path else folder
        id_prefix = f"@hf/{spec.repo_id}" + (f"/{selected.name}" if selected.path else "")
        meta = card.meta(selected.name)
        provenance = {
            "source": "hf",
            "spec": spec.spec,
            "endpoint": endpoint(),
            "repo": spec.repo_id,
            "revision": spec.rev,
            "commit": commit,
            "path": selected.path or "",
            "bundle": selected.name,
            "pinned_spec": f"hf://{spec.repo_id}@{commit}"
            + (f"/{selected.path}" if selected.path else ""),
            "plugins": list(meta.plugins),
            "setup": meta.setup,
            "offline": bool(self.offline_reason),
        }
        state = f"downloaded {self.downloaded} files" if self.downloaded else "cached"
        print(
            f"{spec.spec}: repo {spec.repo_id}, commit {commit}, bundle {selected.name!r} "
            f"({selected.path or 'repo root'}; {state})",
            file=sys.stderr,
        )
        return Fetched(
            path=path,
            provenance=provenance,
            id_prefix=id_prefix,
            name=selected.name,
            downloaded=self.downloaded,
        )


def fetch(spec: str) -> Fetched:
    """Resolve `spec` to a cached folder, downloading only what that commit's bundle still lacks."""
    parsed = parse_spec(spec)
    return _Resolver(spec=parsed, cache=RepoCache.for_repo(parsed.org, parsed.repo)).run()


def resolve(spec: str):
    """The `agentenv_resolve_bundle_source` answer for an `hf://` spec."""
    from agent_env.bundles import ResolvedSource

    got = fetch(spec)
    return ResolvedSource(
        path=got.path, provenance=got.provenance, id_prefix=got.id_prefix, name=got.name
    )
