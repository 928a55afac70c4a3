"""The dataset card's `agentenv:` front matter: the default bundle, per-bundle plugins and setup."""

from __future__ import annotations

import attrs

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
    problems: list[str] = []
    if not isinstance(section, dict):
        raise BundleError(f"{where}: the card's 'agentenv' must be a mapping")
    for key in section:
        if key not in ("default", "bundles"):
            from agent_env.suggest import did_you_mean

            problems.append(
                f"agentenv.{key}: unknown key{did_you_mean(str(key), ['default', 'bundles'])}"
            )
    default = section.get("default")
    if default is not None and not isinstance(default, str):
        problems.append("agentenv.default: must be a bundle name")
        default = None
    bundles: dict[str, BundleMeta] = {}
    raw_bundles = section.get("bundles") or {}
    if not isinstance(raw_bundles, dict):
        problems.append("agentenv.bundles: must be a mapping of bundle names")
        raw_bundles = {}
    for name, entry in raw_bundles.items():
        at = f"agentenv.bundles.{name}"
        entry = entry or {}
        if not isinstance(entry, dict):
            problems.append(f"{at}: must be a mapping with 'plugins' and 'setup'")
            continue
        for key in entry:
            if key not in ("plugins", "setup"):
                from agent_env.suggest import did_you_mean

                problems.append(
                    f"{at}.{key}: unknown key{did_you_mean(str(key), ['plugins', 'setup'])}"
                )
        plugins = entry.get("plugins") or []
        if isinstance(plugins, str):
            plugins = [plugins]
        if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
            problems.append(f"{at}.plugins: must be a list of requirement strings")
            plugins = []
        setup = entry.get("setup")
        if setup is not None and not isinstance(setup, str):
            problems.append(f"{at}.setup: must be a command string")
            setup = None
        bundles[str(name)] = BundleMeta(plugins=tuple(plugins), setup=setup)
    if problems:
        raise BundleError(f"{where}: the dataset card's agentenv front matter is invalid", problems)
    return CardConfig(default=default, bundles=bundles)
