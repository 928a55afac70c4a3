"""The root conftest's measured lists of slow tests (`SLOW`, `SLOW_BY_CPU`) name files that
exist and, for each listed name, a test defined in that file or in a class it lists: a test
file moved or a test renamed would otherwise leave its slow test in the inner loop silently."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _root_conftest():
    spec = importlib.util.spec_from_file_location("agentenv_root_conftest", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONFTEST = _root_conftest()
LISTED = [
    (table, path, names)
    for table in ("SLOW", "SLOW_BY_CPU")
    for path, names in getattr(CONFTEST, table).items()
]


@pytest.mark.parametrize(("table", "path", "names"), LISTED, ids=[f"{t}:{p}" for t, p, _ in LISTED])
def test_each_listed_slow_test_exists(table: str, path: str, names: frozenset[str]) -> None:
    source = ROOT / path
    assert source.is_file(), f"{table} lists {path}, which does not exist (moved?)"
    if names is CONFTEST.ALL:
        return
    text = source.read_text()
    for name in names:
        *classes, test = name.split("[", 1)[0].split("::")
        # a class may inherit its tests from a contract suite: then the class must be here
        owner = classes[0] if classes else None
        defined = re.search(rf"^\s*(async )?def {re.escape(test)}\(", text, re.M)
        assert defined or (owner and re.search(rf"^class {re.escape(owner)}\b", text, re.M)), (
            f"{table}[{path!r}] lists {name!r}, which {path} does not define"
        )
