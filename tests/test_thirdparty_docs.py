"""docs/plugins.md stays true: its examples are the acme fixture plugin's real files, every
extension point has one, and its table of public modules is the one the lint test enforces."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import re
import tomllib
from pathlib import Path

import pytest

from agent_env import hookspecs

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "plugins.md"
FIXTURE = "tests/fixtures/thirdparty-plugin/"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
SOURCE = re.compile(r"^# (\S+)( \(excerpt\))?\n")


def _blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(text)]


def _public_modules() -> set[str]:
    spec = importlib.util.spec_from_file_location("_public_api", ROOT / "tests/test_public_api.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return set(module.PUBLIC_MODULES) | {p.rstrip(".") for p in module.PUBLIC_PREFIXES}


def test_python_blocks_compile_and_toml_and_json_blocks_parse():
    blocks = _blocks(DOC.read_text())
    assert len([b for b in blocks if b[0] == "python"]) >= 15
    for lang, body in blocks:
        if lang == "python":
            compile(body, str(DOC), "exec")
        elif lang == "toml":
            tomllib.loads(body)
        elif lang == "json":
            fixture_json = [json.loads(p.read_text()) for p in (ROOT / FIXTURE).rglob("*.json")]
            assert json.loads(body) in fixture_json, "a JSON block that is no fixture file"


def test_blocks_that_name_a_file_are_verbatim_parts_of_it():
    named = 0
    for _lang, body in _blocks(DOC.read_text()):
        source = SOURCE.match(body)
        if not source:
            continue
        named += 1
        path, excerpt = ROOT / source.group(1), source.group(2)
        assert path.is_file(), f"docs/plugins.md quotes {source.group(1)}, which does not exist"
        text, quoted = path.read_text(), body[source.end() :]
        if excerpt:
            assert quoted in text, f"the excerpt of {source.group(1)} no longer matches it"
        else:
            assert text.endswith(quoted), f"the copy of {source.group(1)} no longer matches it"
            head = ast.parse(text[: len(text) - len(quoted)]).body  # at most the docstring
            assert all(isinstance(n, ast.Expr) for n in head), source.group(1)
    assert named >= 20


@pytest.mark.parametrize("hook", sorted(n for n in dir(hookspecs) if n.startswith("agentenv_")))
def test_every_extension_point_has_an_example_from_the_fixture(hook):
    text = DOC.read_text()
    start = text.index(f"### `{hook}(")
    end = min(i for i in (text.find("\n## ", start), text.find("\n### ", start + 1)) if i > 0)
    assert f"# {FIXTURE}" in text[start:end], f"no fixture example under {hook}"


def test_the_api_table_lists_the_public_modules_with_names_that_exist():
    rows = re.findall(r"^\| `(agent_env(?:\.\w+)*)` \| (.*) \|$", DOC.read_text(), re.M)
    assert {module for module, _ in rows} == _public_modules()
    missing = [
        f"{module}.{name}"
        for module, names in rows
        for name in re.findall(r"`([A-Za-z_]\w*)`", names)
        if not hasattr(importlib.import_module(module), name)
    ]
    assert not missing, f"docs/plugins.md names what does not exist: {missing}"


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_into_plugins_md_name_headings_it_has():
    anchors = {_slug(h) for h in re.findall(r"^#+ (.*)$", DOC.read_text(), re.M)}
    links = {
        (page.name, anchor)
        for page in DOC.parent.rglob("*.md")
        for anchor in re.findall(r"plugins\.md#([\w-]+)", page.read_text())
    }
    links |= {("plugins.md", a) for a in re.findall(r"\]\(#([\w-]+)\)", DOC.read_text())}
    assert links, "expected links into docs/plugins.md"
    assert not [link for link in links if link[1] not in anchors]
