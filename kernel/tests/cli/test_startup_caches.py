"""What the console script does for its own start-up: the generated-code cache gives the code
a fresh `compile` gives, field for field, across processes whose `hash()` salts differ; the
garbage collector is paused while a command starts and runs again once it does its work;
a process that embeds the CLI (`main`) keeps its collector and compiles as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: Builds attrs classes (frozen ones have a salted `__hash__`) and structures one
#: with the cache installed, checking every compile against a fresh one.
PROBE = textwrap.dedent(
    """
    import builtins, json, sys
    from agent_env.cli import codecache
    from agent_env.convert import structure  # the kernel's own classes are not the probe's

    checked = {"mismatches": 0, "salted_hits": 0, "compiles": 0, "eval_compiles": 0}
    lookup = codecache.lookup
    FIELDS = ("co_code", "co_filename", "co_name", "co_qualname", "co_names", "co_varnames",
              "co_freevars", "co_cellvars", "co_flags", "co_firstlineno", "co_linetable",
              "co_exceptiontable", "co_argcount", "co_kwonlyargcount", "co_stacksize")

    def shape(code, columns=True):
        # everything a code object is made of (marshal's bytes also differ by which equal
        # objects it shares, so the fields are compared); without `columns`, the lines only
        consts = tuple(
            shape(c, columns) if hasattr(c, "co_code") else (type(c), c) for c in code.co_consts
        )
        where = tuple(code.co_positions()) if columns else tuple(code.co_lines())
        fields = [f for f in FIELDS if columns or f != "co_linetable"]
        return tuple(getattr(code, f) for f in fields) + (consts, where)

    def checking(source, filename, flags, mode="exec"):
        before = codecache.stats()["hits"]
        code = lookup(source, filename, flags, mode)
        fresh = builtins.compile(source, filename, mode, flags, True)
        checked["compiles"] += 1
        checked["eval_compiles"] += mode == "eval"  # typing's string annotations
        # a salted literal's own column span is the placeholder's (a constant cannot raise)
        columns = not codecache.salted_literal(source, filename)
        if shape(code, columns) != shape(fresh, columns):
            checked["mismatches"] += 1
        if codecache.stats()["hits"] > before and codecache.salted_literal(source, filename):
            checked["salted_hits"] += 1
        return code

    codecache.lookup = checking
    codecache.install()
    sys.path.insert(0, sys.argv[1])
    import probe_models as pm

    point = pm.Point(x=1, y="a")
    structured_ok = structure({"x": 2, "y": "b"}, pm.Point) == pm.Point(x=2, y="b")
    salt = hash("<attrs generated hash probe_models.Point>")
    print(json.dumps({
        **checked,
        **codecache.stats(),
        "hash_ok": hash(point) == hash((salt, 1, "a"))
        and hash(pm.Empty()) == hash((hash("<attrs generated hash probe_models.Empty>"),)),
        "eq_ok": point == pm.Point(x=1, y="a") and point != pm.Point(x=1, y="b"),
        "structured_ok": structured_ok,
        "repr": repr(point),
        "dataclass_ok": pm.Pair(1) == pm.Pair(1, []) and repr(pm.Pair(2)) == "Pair(left=2, right=[])",
    }))
    codecache.save()
    """
)

MODELS = textwrap.dedent(
    """
    from __future__ import annotations

    import dataclasses

    import attrs


    @attrs.frozen(kw_only=True)
    class Point:
        x: int
        y: str = attrs.field(validator=attrs.validators.instance_of(str))


    @attrs.frozen
    class Empty:
        # no fields: its __hash__ hashes a constant tuple the compiler folds
        pass


    @attrs.define
    class Box:
        items: list[Point] = attrs.Factory(list)


    @dataclasses.dataclass(frozen=True)
    class Pair:
        left: int
        right: list = dataclasses.field(default_factory=list)

    """
)


def _probe(tmp_path: Path, seed: int) -> dict:
    (tmp_path / "mods").mkdir(exist_ok=True)
    (tmp_path / "mods" / "probe_models.py").write_text(MODELS)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "mods")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_cached_code_is_what_compile_gives_across_hash_salts(tmp_path):
    runs = [_probe(tmp_path, seed) for seed in range(6)]
    first, later = runs[0], runs[1:]
    assert first["hits"] == 0 and first["misses"] == first["compiles"] > 0
    assert first["eval_compiles"] > 0  # structuring resolved the models' string annotations
    for run in runs:
        assert run["mismatches"] == 0
        assert run["hash_ok"] and run["eq_ok"] and run["structured_ok"]
        assert run["repr"] == "Point(x=1, y='a')" and run["dataclass_ok"]
    # every run after the first takes all its code from the cache, salted or not
    assert all(run["misses"] == 0 and run["hits"] == run["compiles"] for run in later)
    assert all(run["salted_hits"] > 0 for run in later)
    assert (tmp_path / "cache" / "agentenv" / "generated-code").is_dir()


def test_a_corrupt_cache_file_means_compiling(tmp_path):
    target = tmp_path / "cache" / "agentenv" / "generated-code"
    target.mkdir(parents=True)
    tag = sys.implementation.cache_tag
    (target / f"{tag}-root.marshal").write_bytes(b"\x00not marshal")
    run = _probe(tmp_path, 1)
    assert run["hits"] == 0 and run["mismatches"] == 0 and run["hash_ok"]
    assert _probe(tmp_path, 1)["misses"] == 0  # rewritten whole at the first run's exit


LINE_PROBE = textwrap.dedent(
    """
    import json, sys
    from agent_env.cli import codecache

    codecache.install(sys.argv[2], sys.argv[3:])
    sys.path.insert(0, sys.argv[1])
    import probe_models as pm

    pm.Point(x=1, y="a")
    import attr  # its own classes were built as it was imported, through the cache too

    salt = hash("<attrs generated hash attr._make.Factory>")  # salted per process
    factory_ok = hash(attr.Factory(list)) == hash((salt, list, False))
    print(json.dumps({**codecache.stats(), "file": codecache.path().name, "ok": factory_ok}))
    codecache.save()
    """
)


def _line(tmp_path: Path, *words: str) -> dict:
    """Build the probe's classes with the cache installed for the command line `words`."""
    (tmp_path / "mods").mkdir(exist_ok=True)
    (tmp_path / "mods" / "probe_models.py").write_text(MODELS)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", LINE_PROBE, str(tmp_path / "mods"), *words],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["ok"], "attrs' own Factory hashes as a fresh compile would"
    return got


def test_each_command_line_loads_only_what_it_built_and_old_files_go(tmp_path):
    hello = _line(tmp_path, "run", "hello")
    assert hello["misses"] > 0 and hello["file"].endswith("-run-3610a686.marshal")
    assert _line(tmp_path, "run", "hello")["misses"] == 0
    # another bundle's run has a file of its own: it compiles once, leaves hello's alone
    other = _line(tmp_path, "run", "./other")
    assert other["misses"] > 0 and other["file"] != hello["file"]
    assert _line(tmp_path, "run", "hello")["misses"] == 0
    folder = tmp_path / "cache" / "agentenv" / "generated-code"
    assert sorted(p.name for p in folder.iterdir()) == sorted([hello["file"], other["file"]])
    # past MAX_FILES, a write drops the files loaded or written least recently
    from agent_env.cli.cachefiles import MAX_FILES

    for n in range(MAX_FILES + 3):
        (folder / f"stale-{n}.marshal").write_bytes(b"")
        os.utime(folder / f"stale-{n}.marshal", ns=(n, n))
    assert _line(tmp_path, "run", "hello")["misses"] == 0  # loaded: the newest now
    _line(tmp_path, "run", "third")
    kept = {p.name for p in folder.iterdir()}
    assert len(kept) == MAX_FILES
    assert {hello["file"], other["file"]} <= kept and "stale-0.marshal" not in kept


GC_PROBE = textwrap.dedent(
    """
    import atexit, gc, sys
    from agent_env.cli import main as cli_main

    def report():
        print(f"gc enabled={gc.isenabled()} frozen={gc.get_freeze_count() > 0}", file=sys.stderr)

    atexit.register(report)
    sys.argv = ["agent-env", *sys.argv[1:]]
    if "{entry}" == "main":
        try:
            cli_main.main()
        except SystemExit:
            pass
    else:
        cli_main.console()
    """
)


@pytest.mark.parametrize(
    ("entry", "args", "expected"),
    [
        # a command: start-up paused the collector, the callback runs with it
        ("console", ["config", "show"], "gc enabled=True frozen=True"),
        # run: resumed as the trials start
        ("console", ["run", "hello"], "gc enabled=True frozen=True"),
        # an embedding process keeps its collector as it was
        ("main", ["config", "show"], "gc enabled=True frozen=False"),
    ],
)
def test_collector_pauses_only_for_start_up(tmp_path, entry, args, expected):
    done = subprocess.run(
        [sys.executable, "-c", GC_PROBE.replace("{entry}", entry), *args],
        env={**os.environ, "AGENT_ENV_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == expected
