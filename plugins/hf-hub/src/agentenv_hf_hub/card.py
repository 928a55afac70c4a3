"""The dataset card's `agentenv:` front matter: the default bundle, per-bundle plugins and setup."""

from __future__ import annotations

from typing import Any

import attrs

from agent_env.bundles import read_model
from agent_env.errors import BundleError


@attrs.frozen(kw_only=True)
class BundleMeta:
    """What the card says about one bundle: plugin requirements and the setup hint."""

    plugins: tuple[str, ...] = ()
    setup: str | None = None


@attrs.frozen(kw_only=True)
class CardConfig:
    default: str | None = None
    bundles: dict[str, BundleMeta] = attrs.field(factory=dict)

    def meta(self, name: str) -> BundleMeta:
        return self.bundles.get(name, BundleMeta())


def _front_matter(text: str) -> str | None:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return "\n".join(lines[1:i])
    return None


def parse_card(text: str | None, *, where: str) -> CardConfig:
    """Read the `agentenv` table of a README's YAML front matter; a card without one is empty."""
    if not text:
        return CardConfig()
    raw = _front_matter(text)
    if raw is None:
        return CardConfig()
    import yaml

    try:
        data = yaml.safe_load(raw) or {}
    except yaml.YAMLError as exc:
        raise BundleError(
            f"{where}: the dataset card's front matter is not valid YAML: {exc}"
        ) from None
    if not isinstance(data, dict) or data.get("agentenv") is None:
        return CardConfig()
    section = data["agentenv"]
    if not isinstance(section, dict):
        raise BundleError(f"{where}: the card's 'agentenv' must be a mapping")
    model, problems = read_model(_normalized(section), CardConfig)
    if problems:
        raise BundleError(
            f"{where}: the dataset card's agentenv front matter is invalid",
            [_under_agentenv(p) for p in problems],
        )
    return model


def _under_agentenv(problem: str) -> str:
    """A converter message about the `agentenv` table, its field path made whole."""
    if problem.startswith("unknown "):  # a key of the table itself: no field path
        return f"agentenv: {problem}"
    return f"agentenv.{problem}"


def _normalized(section: dict[str, Any]) -> dict[str, Any]:
    """The shorthands a card may use, spelled out for `CardConfig`: no `bundles` or an empty
    entry, `plugins` as one string, a bundle name YAML read as a number."""
    out = dict(section)
    bundles = out.get("bundles")
    if bundles is None:
        out.pop("bundles", None)
    elif isinstance(bundles, dict):
        entries = {}
        for name, entry in bundles.items():
            entry = {} if entry is None else entry
            if isinstance(entry, dict):
                entry = dict(entry)
                if entry.get("plugins") is None:
                    entry.pop("plugins", None)
                elif isinstance(entry["plugins"], str):
                    entry["plugins"] = [entry["plugins"]]
            entries[str(name)] = entry
        out["bundles"] = entries
    return out
