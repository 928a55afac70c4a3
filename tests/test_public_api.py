"""Layering: plugins reach the kernel only through its public API, and each other only as declared.

A plugin that imports a kernel mechanism (`agent_env.engine`, `agent_env.sandboxes.local`, ...)
or a private name breaks when the kernel moves things; a plugin that imports another plugin
without declaring it breaks a minimal install. Third-party plugins get the same API as ours.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The modules a plugin author may import (docs/plugins.md lists what they hold).
PUBLIC_MODULES = {
    "agent_env",
    "agent_env.agents",
    "agent_env.aio",
    "agent_env.bundles",
    "agent_env.caches",
    "agent_env.cli.toolkit",
    "agent_env.config",
    "agent_env.context",
    "agent_env.engine.snapshot",
    "agent_env.entities.kinds",
    "agent_env.entrypoints",
    "agent_env.envs",
    "agent_env.errors",
    "agent_env.costs",
    "agent_env.exports",
    "agent_env.fsutil",
    "agent_env.hookspecs",
    "agent_env.models",
    "agent_env.net",
    "agent_env.openenv",
    "agent_env.openenv.host",
    "agent_env.paths",
    "agent_env.plugins",
    "agent_env.plugins.installer",
    "agent_env.redact",
    "agent_env.scoring",
    "agent_env.registry",
    "agent_env.resources",
    "agent_env.runners",
    "agent_env.runs.service",
    "agent_env.results",
    "agent_env.sandbox",
    "agent_env.sandboxes.leases",
    "agent_env.sandboxes.procs",
    "agent_env.stores",
    "agent_env.stores.base",
    "agent_env.stores.client",
    "agent_env.stores.names",
    "agent_env.stores.support",
    "agent_env.suggest",
    "agent_env.task_step",
}
PUBLIC_PREFIXES = ("agent_env.testing",)


def _plugins() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml"))


#: The third-party plugin fixture (tests/test_thirdparty.py) is held to the same rule.
THIRD_PARTY = ROOT / "tests" / "fixtures" / "thirdparty-plugin"


def _import_name(dist: str) -> str:
    return {"agentenv-kernel": "agent_env", "agentenv-framework-protocol": "agentenv_protocol"}.get(
        dist, dist.replace("-", "_")
    )


def _declared(pyproject: Path) -> set[str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    deps = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        deps += extra
    return {_import_name(re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0]) for d in deps}


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []


IN_TREE = {
    _import_name(tomllib.loads((p / "pyproject.toml").read_text())["project"]["name"])
    for p in _plugins()
}


@pytest.mark.parametrize("plugin", [*_plugins(), THIRD_PARTY], ids=lambda p: p.name)
def test_plugins_import_only_public_kernel_names_and_declared_plugins(plugin: Path) -> None:
    own = _import_name(tomllib.loads((plugin / "pyproject.toml").read_text())["project"]["name"])
    declared = _declared(plugin / "pyproject.toml")
    problems = []
    for path in sorted((plugin / "src").rglob("*.py")):
        where = path.relative_to(ROOT)
        for line, module, names in _imports(path):
            top = module.split(".")[0]
            if top == "agent_env":
                # `from agent_env.sandboxes import procs` names a public submodule.
                targets = (
                    [module]
                    if module in PUBLIC_MODULES or not names
                    else [f"{module}.{n}" for n in names]
                )
                public = all(t in PUBLIC_MODULES or t.startswith(PUBLIC_PREFIXES) for t in targets)
                if not public:
                    problems.append(f"{where}:{line}: imports kernel internals {module}")
                private = [n for n in names if n.startswith("_") and not n.startswith("__")]
                if private:
                    problems.append(f"{where}:{line}: imports private {module}.{private[0]}")
            elif top in IN_TREE and top != own and top not in declared:
                problems.append(f"{where}:{line}: imports {top} without declaring it")
    assert not problems, "\n".join(problems)


def test_the_public_module_list_names_modules_that_exist() -> None:
    src = ROOT / "kernel" / "src"
    missing = [
        m
        for m in PUBLIC_MODULES
        if not (src / m.replace(".", "/")).with_suffix(".py").exists()
        and not (src / m.replace(".", "/") / "__init__.py").exists()
    ]
    assert not missing
