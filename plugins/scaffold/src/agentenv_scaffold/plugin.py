"""`agent-env plugin new NAME`: a plugin package that follows docs/plugins.md ("Writing a
plugin") and whose own tests pass before anything is changed. Files come from
`templates/plugin/`."""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from agent_env import PLUGIN_API_VERSION, __version__
from agent_env.errors import PluginError
from agent_env.plugins.installer import OWN_DISTRIBUTIONS

TEMPLATE = Path(__file__).parent / "templates" / "plugin"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)*")
#: Template file -> path in the package (`MODULE` is the import name).
FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "src/__init__.py.tmpl": "src/MODULE/__init__.py",
    "src/hooks.py.tmpl": "src/MODULE/hooks.py",
    "src/steps.py.tmpl": "src/MODULE/steps.py",
    "tests/test_steps.py.tmpl": "tests/test_steps.py",
}


@attrs.frozen(kw_only=True)
class Scaffolded:
    root: Path
    files: list[Path]


def names(name: str) -> dict[str, str]:
    """Template values for distribution NAME: `agentenv-greet` -> module `agentenv_greet`,
    plugin (entry point) `greet`, step type `greet`, class `Greet`."""
    if not _NAME.fullmatch(name):
        raise PluginError(
            f"{name!r} is not a distribution name: use letters, digits and '-', starting with a "
            "letter (e.g. agentenv-greet)"
        )
    dist = re.sub(r"[-_.]+", "-", name).lower()
    if dist in OWN_DISTRIBUTIONS:
        raise PluginError(f"{dist} is agent-env's own distribution; pick another name")
    plugin = dist.removeprefix("agentenv-") or dist
    step = plugin.replace("-", "_")
    major = int(PLUGIN_API_VERSION.split(".")[0])
    kernel = ".".join(__version__.split(".")[:2])
    return {
        "dist": dist,
        "module": dist.replace("-", "_"),
        "plugin": plugin,
        "step": step,
        "Step": "".join(part.capitalize() for part in step.split("_")),
        "api": PLUGIN_API_VERSION,
        "api_next": str(major + 1),
        "kernel_min": kernel,
    }


def render(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], text)


def scaffold(name: str, parent: Path) -> Scaffolded:
    """Write the package `parent/<name>`; refuses a folder that exists and is not empty."""
    values = names(name)
    root = Path(parent).resolve() / values["dist"]
    if root.exists() and any(root.iterdir()):
        raise PluginError(f"{root} already exists and is not empty; pick another name or --dir")
    written = []
    for source, target in FILES.items():
        path = root / target.replace("MODULE", values["module"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            render((TEMPLATE / source).read_text(encoding="utf-8"), values), encoding="utf-8"
        )
        written.append(path)
    return Scaffolded(root=root, files=written)
