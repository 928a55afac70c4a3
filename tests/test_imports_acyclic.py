"""The import graph between source files has no cycles (issue 13's done-criterion).

The graph covers the kernel, the protocol and every in-tree plugin, built with `ast` from the
source files (nothing is imported). An edge A -> B means module A imports module B: `import
a.b` and `from a.b import c` give `a.b`, or `a.b.c` when that is a module of its own. Imports
under `if TYPE_CHECKING:` are not edges (they never run).

Two rules:
- module-level imports (what runs when a module is first imported) form no cycle: such a
  cycle makes the result depend on which module is imported first;
- function-level (lazy) imports may close no cycle either: a lazy import that goes back into a
  module which imports the caller at module level is the same tangle, only hidden (the run <->
  run_resume and export <-> trials cycles were of this kind).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[1]


def _source_roots() -> list[Path]:
    roots = [ROOT / "kernel" / "src", ROOT / "protocol" / "src"]
    roots += sorted(p for p in (ROOT / "plugins").glob("*/src") if p.is_dir())
    return roots


def _modules(roots: list[Path]) -> dict[str, Path]:
    """Dotted module name -> its source file, for every module under `roots`."""
    found: dict[str, Path] = {}
    for root in roots:
        for path in root.rglob("*.py"):
            rel = path.relative_to(root).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            if "templates" in parts:  # the scaffold's template files are not importable code
                continue
            found[".".join(parts)] = path
    return found


@attrs.frozen
class Edge:
    source: str
    target: str
    line: int
    lazy: bool


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement with whether it is lazy (inside a function); skips TYPE_CHECKING."""

    def walk(node: ast.AST, lazy: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    yield from walk(other, lazy)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, lazy
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from walk(child, inner)

    yield from walk(tree, False)


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _edges(modules: dict[str, Path]) -> list[Edge]:
    edges: list[Edge] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, lazy in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:  # relative imports are banned by ruff, but resolve them anyway
                    package = _package_of(module, path).split(".")
                    package = package[: len(package) - node.level + 1]
                    base = ".".join([*package, base] if base else package)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                if target in modules and target != module:
                    edges.append(Edge(module, target, node.lineno, lazy))
    return edges


def _cycles(edges: list[Edge]) -> list[list[Edge]]:
    """One shortest cycle through each strongly connected component that has one."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)
    components = _strongly_connected(graph)
    cycles = []
    for component in components:
        start = min(component)
        cycles.append(_shortest_cycle(graph, start, component))
    return cycles


def _strongly_connected(graph: dict[str, list[Edge]]) -> list[set[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for edge in graph.get(node, ()):
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def _shortest_cycle(graph: dict[str, list[Edge]], start: str, within: set[str]) -> list[Edge]:
    paths: dict[str, list[Edge]] = {start: []}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in graph.get(node, ()):
                if edge.target not in within:
                    continue
                if edge.target == start:
                    return [*paths[node], edge]
                if edge.target not in paths:
                    paths[edge.target] = [*paths[node], edge]
                    following.append(edge.target)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover - SCCs have one


def _describe(cycle: list[Edge], modules: dict[str, Path]) -> str:
    hops = []
    for edge in cycle:
        path = modules[edge.source]
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        kind = "lazy import" if edge.lazy else "import"
        hops.append(f"  {where}:{edge.line}: {edge.source} --{kind}--> {edge.target}")
    return "\n".join(hops)


def _failures(roots: list[Path], *, lazy: bool) -> str:
    modules = _modules(roots)
    edges = [e for e in _edges(modules) if lazy or not e.lazy]
    cycles = _cycles(edges)
    if lazy:  # the module-level test reports those; here only cycles that need a lazy import
        cycles = [c for c in cycles if any(e.lazy for e in c)]
    return "\n\n".join(_describe(c, modules) for c in cycles)


def test_the_graph_sees_the_sources():
    modules = _modules(_source_roots())
    assert {"agent_env.plugins.manager", "agentenv_protocol", "agentenv_core_steps.hooks"} <= set(
        modules
    )
    edges = {(e.source, e.target, e.lazy) for e in _edges(modules)}
    assert ("agent_env.plugins", "agent_env.plugins.manager", False) in edges
    assert ("agentenv_core_steps.hooks", "agent_env", False) in edges
    assert len(edges) > 500


def _tree(root: Path, files: dict[str, str]) -> list[Path]:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return [root]


def test_a_module_level_cycle_is_listed_hop_by_hop(tmp_path):
    roots = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "import os\nfrom pkg.c import thing\n",
            "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.b\n"
            "import pkg.a\n",
        },
    )
    failures = _failures(roots, lazy=False)
    assert "pkg/a.py:1: pkg.a --import--> pkg.b" in failures
    assert "pkg/b.py:2: pkg.b --import--> pkg.c" in failures
    assert "pkg/c.py:4: pkg.c --import--> pkg.a" in failures
    assert _failures(roots, lazy=True) == ""  # reported once, by the module-level rule


def test_a_lazy_import_that_closes_a_cycle_is_listed_and_type_checking_is_not(tmp_path):
    roots = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/run.py": "def go():\n    from pkg.resume import again\n",
            "pkg/resume.py": "from pkg.run import go\n",
            "pkg/x.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.y\n",
            "pkg/y.py": "import pkg.x\n",
        },
    )
    assert _failures(roots, lazy=False) == ""
    failures = _failures(roots, lazy=True)
    assert "pkg/run.py:2: pkg.run --lazy import--> pkg.resume" in failures
    assert "pkg.x" not in failures


def test_the_cycle_finder_returns_one_shortest_cycle_per_tangle():
    edges = [Edge("a", "b", 1, False), Edge("b", "c", 2, True), Edge("c", "a", 3, False)]
    edges += [Edge("c", "d", 4, False), Edge("a", "c", 5, False)]
    (cycle,) = _cycles(edges)
    assert [(e.source, e.target) for e in cycle] == [("a", "c"), ("c", "a")]
    assert _cycles([Edge("a", "b", 1, False), Edge("b", "c", 1, False)]) == []


def test_no_cycles_between_files_at_import_time():
    failures = _failures(_source_roots(), lazy=False)
    assert not failures, "module-level import cycles:\n" + failures


def test_no_lazy_import_closes_a_cycle():
    failures = _failures(_source_roots(), lazy=True)
    assert not failures, "cycles closed by a function-level import:\n" + failures
