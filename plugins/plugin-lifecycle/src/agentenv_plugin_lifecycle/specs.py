"""What a `plugin add` SPEC names (a requirement, a wheel file or a project folder), read
without installing it; agent-env's own distributions are refused here."""

from __future__ import annotations

import zipfile
from pathlib import Path

import attrs

from agent_env.entrypoints import normalize_dist as normalize
from agent_env.errors import PluginError
from agent_env.plugins.installer import OWN_DISTRIBUTIONS

__all__ = ["OWN_DISTRIBUTIONS", "Spec", "normalize", "own_distributions", "parse_spec"]


def plugin_entry_points(by_group: dict[str, list[str]]) -> tuple[str, ...]:
    """A distribution's plugin entry points, from its entry-point names by group: those of the
    `agent_env` group, plus (when agentenv-legacy is installed, which runs them) those in the
    existing product's groups as `group:name`."""
    try:
        from agentenv_legacy.groups import plugin_entry_points as with_legacy
    except ImportError:
        return tuple(sorted(by_group.get("agent_env", ())))
    return with_legacy(by_group)


@attrs.frozen(kw_only=True)
class Spec:
    """One SPEC: what to pass to the installer and the distribution it names."""

    text: str
    install: str
    name: str
    #: Its plugin entry points when readable before installing (wheel, folder): names under
    #: `agent_env`, `group:name` in the existing product's groups (`plugin_entry_points`).
    entry_points: tuple[str, ...] | None = None


def _wheel_entry_points(path: Path) -> tuple[str, ...]:
    import configparser

    try:
        with zipfile.ZipFile(path) as wheel:
            found = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
            text = wheel.read(found[0]).decode("utf-8") if found else ""
    except (OSError, zipfile.BadZipFile, KeyError) as exc:
        raise PluginError(f"{path}: not a readable wheel ({exc})") from None
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    parser.read_string(text)
    return plugin_entry_points({group: list(parser[group]) for group in parser.sections()})


def _folder(path: Path) -> tuple[str, tuple[str, ...]]:
    import tomllib

    try:
        data = tomllib.loads((path / "pyproject.toml").read_text(encoding="utf-8"))
        name = data["project"]["name"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise PluginError(
            f"{path / 'pyproject.toml'}: cannot read [project] name ({exc})"
        ) from None
    return name, plugin_entry_points(data["project"].get("entry-points", {}))


def parse_spec(text: str) -> Spec:
    """Read SPEC: a wheel file, a project folder, or a requirement (`name`, `name>=1`, `name @ url`)."""
    path = Path(text).expanduser()
    if text.endswith(".whl"):
        if not path.is_file():
            raise PluginError(f"wheel {text!r} does not exist")
        name = path.name.split("-")[0]
        return Spec(
            text=text,
            install=str(path.resolve()),
            name=normalize(name),
            entry_points=_wheel_entry_points(path),
        )
    if path.is_dir():
        if not (path / "pyproject.toml").is_file():
            raise PluginError(f"{text!r} is a folder without pyproject.toml, not a Python project")
        name, eps = _folder(path)
        return Spec(text=text, install=str(path.resolve()), name=normalize(name), entry_points=eps)
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise PluginError(
            f"{text!r} is not a requirement (name, name>=1.2, name @ URL), a wheel file or a "
            f"project folder: {exc}"
        ) from None
    return Spec(text=text, install=text, name=normalize(req.name))


def own_distributions(specs: list[Spec]) -> list[str]:
    """The specs naming agent-env itself."""
    return [s.name for s in specs if s.name in OWN_DISTRIBUTIONS]
