"""Where bundles sit in a repo's file list, which one a spec selects, and which files it needs."""

from __future__ import annotations

from pathlib import PurePosixPath
from urllib.parse import quote

import attrs

from agent_env.errors import BundleError

KIND_FOLDERS = ("tasks", "evals", "envs", "agents", "artifacts", "skills")
ROOT_FILES = ("README.md", "bundle.toml", "aliases.toml", "seeds.toml")
CARD = "README.md"


@attrs.frozen(kw_only=True)
class Selected:
    """The chosen bundle: `path` is None for the repo root; `name` is the repo's name there."""

    name: str
    path: str | None

    def files(self, siblings: list[str]) -> list[str]:
        if self.path is None:
            return [f for f in siblings if f in ROOT_FILES or f.split("/")[0] in KIND_FOLDERS]
        return [f for f in siblings if f.startswith(self.path + "/")]


def unsafe_paths(siblings: list[str]) -> list[str]:
    """Repo file names that would land outside the cache folder (or are not plain relative paths)."""
    bad = []
    for name in siblings:
        parts = name.split("/")
        if (
            not name
            or name.startswith("/")
            or "\\" in name
            or "\0" in name
            or ":" in parts[0]
            or any(p in ("", ".", "..") for p in parts)
        ):
            bad.append(name)
    return bad


def is_bundle(folder: str | None, siblings: list[str]) -> bool:
    """A folder is a bundle when it holds a kind folder (`tasks/`, `envs/`, ...) or a bundle.toml."""
    prefix = f"{folder}/" if folder else ""
    for name in siblings:
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix) :].split("/")
        if rest == ["bundle.toml"] or (len(rest) > 1 and rest[0] in KIND_FOLDERS):
            return True
    return False


def bundles_folder(siblings: list[str]) -> dict[str, str]:
    """The bundles under `bundles/`, name -> path."""
    names = sorted(
        {n.split("/")[1] for n in siblings if n.startswith("bundles/") and n.count("/") >= 2}
    )
    return {name: f"bundles/{name}" for name in names if is_bundle(f"bundles/{name}", siblings)}


def _listing(spec, found: dict[str, str], root: bool) -> list[str]:
    base = f"hf://{spec.repo_id}" + (f"@{quote(spec.revision, safe='')}" if spec.revision else "")
    lines = [f"{name} ({base}/{path})" for name, path in found.items()]
    if root:
        lines.append(f"{spec.repo} (the repo root: {base})")
    return lines or [
        "no bundles: no folder under bundles/ and no kind folder (tasks/, envs/, ...) at the root"
    ]


def select(spec, siblings: list[str], card) -> Selected:
    """Pick the bundle: the spec's path; else the only one under bundles/; else the card's default; else the root."""
    found = bundles_folder(siblings)
    root = is_bundle(None, siblings)
    if spec.path is not None:
        if not any(n.startswith(spec.path + "/") for n in siblings):
            from agent_env.suggest import did_you_mean

            folders = sorted(
                {str(p) for n in siblings for p in PurePosixPath(n).parents if str(p) != "."}
            )
            raise BundleError(
                f"{spec.spec}: no folder {spec.path!r} in {spec.repo_id} at {spec.rev}"
                + did_you_mean(spec.path, folders),
                ["bundles found: " + "; ".join(_listing(spec, found, root))],
            )
        if not is_bundle(spec.path, siblings):
            raise BundleError(
                f"{spec.spec}: folder {spec.path!r} is not a bundle (it has no kind folder such as "
                "tasks/ or envs/, and no bundle.toml)",
                ["bundles found: " + "; ".join(_listing(spec, found, root))],
            )
        return Selected(name=PurePosixPath(spec.path).name, path=spec.path)
    if len(found) == 1:
        name, path = next(iter(found.items()))
        return Selected(name=name, path=path)
    if found and card.default:
        if card.default in found:
            return Selected(name=card.default, path=found[card.default])
        if card.default == spec.repo and root:
            return Selected(name=spec.repo, path=None)
        from agent_env.suggest import did_you_mean

        raise BundleError(
            f"{spec.spec}: the dataset card's default bundle {card.default!r} is not in the repo"
            + did_you_mean(card.default, found),
            ["bundles found: " + "; ".join(_listing(spec, found, root))],
        )
    if root:
        return Selected(name=spec.repo, path=None)
    if found:
        raise BundleError(
            f"{spec.spec}: {spec.repo_id} has several bundles and its dataset card names no default "
            "(`agentenv: default: <name>`); add the bundle's path to the spec",
            ["bundles found: " + "; ".join(_listing(spec, found, root))],
        )
    raise BundleError(
        f"{spec.spec}: {spec.repo_id} at {spec.rev} holds no bundle", _listing(spec, found, root)
    )
