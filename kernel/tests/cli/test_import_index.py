"""The console script's import index (`agent_env.cli.importcache`): a second process imports
the same modules from the same files with the same specs as `PathFinder` gives; a module
added, removed or shadowed since is seen at once; a changed `sys.path`, a relative entry, a
folder changed moments ago or a corrupt index mean finding modules as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

#: Imports the modules named in argv[1] with the index installed (argv[2]: a folder put in
#: front of sys.path after installing) and prints what each became.
PROBE = textwrap.dedent(
    """
    import importlib, json, os, sys
    from agent_env.cli import importcache

    line = os.environ.get("IX_LINE", "").split()  # the command line it stands for
    importcache.install(line[0] if line else "", line[1:])
    if len(sys.argv) > 2:
        sys.path.insert(0, sys.argv[2])
    out = {}
    for name in filter(None, sys.argv[1].split(",")):
        try:
            module = importlib.import_module(name)
        except ImportError as e:
            out[name] = {"error": type(e).__name__}
            continue
        spec = module.__spec__
        out[name] = {
            "file": module.__file__,
            "origin": spec.origin,
            "cached": spec.cached,
            "parent": spec.parent,
            "locations": spec.submodule_search_locations,
            "path": list(getattr(module, "__path__", []) or []) or None,
            "loader": type(spec.loader).__name__,
            "has_location": spec.has_location,
            "value": getattr(module, "VALUE", None),
        }
    importcache.save()
    print(json.dumps({"modules": out, **importcache.stats()}))
    """
)

#: A package with a submodule, a plain module, and an extension module of the stdlib.
NAMES = "ixpkg,ixpkg.sub,ixmod,_bz2,xml.dom.minidom"
AN_HOUR_AGO = time.time() - 3600


def settle(*folders: Path) -> None:
    """Give folders an old mtime, as a checkout's folders have (a fresh one is not trusted)."""
    for folder in folders:
        os.utime(folder, (AN_HOUR_AGO, AN_HOUR_AGO))


def make_tree(tmp_path: Path) -> Path:
    lib = tmp_path / "lib"
    (lib / "ixpkg").mkdir(parents=True)
    (lib / "ixpkg" / "__init__.py").write_text("VALUE = 'pkg'\n")
    (lib / "ixpkg" / "sub.py").write_text("VALUE = 'sub'\n")
    (lib / "ixmod.py").write_text("VALUE = 'mod'\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "probe.py").write_text(PROBE)
    settle(lib / "ixpkg", lib, tmp_path / "bin")
    return lib


def probe(
    tmp_path: Path,
    names: str = NAMES,
    *extra: str,
    pythonpath: str | None = None,
    inline: bool = False,
    line: str = "",
) -> dict:
    """Run the probe as a script (`python -c` with `inline`: sys.path[0] is then '')."""
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": pythonpath if pythonpath is not None else str(tmp_path / "lib"),
        "PYTHONDONTWRITEBYTECODE": "1",  # no __pycache__ folder changes a listing here
        "IX_LINE": line,
    }
    done = subprocess.run(
        [sys.executable, *(["-c", PROBE] if inline else [str(tmp_path / "bin" / "probe.py")])]
        + [names, *extra],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def index_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "agentenv" / "imports").glob("*.marshal"))


def test_a_second_process_imports_the_same_files_with_the_same_specs(tmp_path):
    make_tree(tmp_path)
    first = probe(tmp_path)
    assert first["hits"] == 0 and first["misses"] >= 5
    assert len(index_files(tmp_path)) == 1
    second = probe(tmp_path)
    assert second["misses"] == 0 and second["hits"] >= 5
    assert second["modules"] == first["modules"]
    mods = second["modules"]
    assert mods["ixpkg"]["locations"] == [str(tmp_path / "lib" / "ixpkg")]
    assert mods["ixpkg.sub"]["value"] == "sub" and mods["ixpkg.sub"]["parent"] == "ixpkg"
    assert mods["_bz2"]["loader"] == "ExtensionFileLoader"
    assert mods["ixmod"]["loader"] == "SourceFileLoader" and mods["ixmod"]["has_location"]


def test_modules_added_removed_or_shadowed_since_are_seen(tmp_path):
    lib = make_tree(tmp_path)
    probe(tmp_path)
    (lib / "ixpkg" / "sub.py").unlink()
    (lib / "ixpkg" / "new.py").write_text("VALUE = 'new'\n")
    after = probe(tmp_path, "ixpkg.sub,ixpkg.new,ixmod")["modules"]
    assert after["ixpkg.sub"] == {"error": "ModuleNotFoundError"}
    assert after["ixpkg.new"]["value"] == "new"
    assert after["ixmod"]["value"] == "mod"
    # a module of the same name in an earlier sys.path folder wins, as without the index
    front = tmp_path / "front"
    front.mkdir()
    (front / "ixmod.py").write_text("VALUE = 'front'\n")
    settle(front, lib / "ixpkg")
    path = os.pathsep.join([str(front), str(lib)])
    assert probe(tmp_path, "ixmod", pythonpath=path)["modules"]["ixmod"]["value"] == "front"
    (front / "ixmod.py").unlink()
    (front / "ixmod").mkdir()
    (front / "ixmod" / "__init__.py").write_text("VALUE = 'package'\n")
    assert probe(tmp_path, "ixmod", pythonpath=path)["modules"]["ixmod"]["value"] == "package"


def test_a_sys_path_changed_after_start_is_not_answered_from_the_index(tmp_path):
    make_tree(tmp_path)
    probe(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "ixmod.py").write_text("VALUE = 'other'\n")
    got = probe(tmp_path, "ixmod", str(other))
    assert got["modules"]["ixmod"]["value"] == "other"
    assert got["hits"] == 0


def test_a_relative_path_entry_or_a_fresh_folder_writes_no_index(tmp_path):
    lib = make_tree(tmp_path)
    assert probe(tmp_path, inline=True)["hits"] == 0  # '' (the working folder) on sys.path
    assert index_files(tmp_path) == []
    (lib / "ixpkg" / "fresh.py").write_text("VALUE = 'fresh'\n")  # ixpkg changed just now
    got = probe(tmp_path)
    assert got["modules"]["ixmod"]["value"] == "mod"
    assert index_files(tmp_path) == []


def test_a_corrupt_index_means_finding_modules_as_before(tmp_path):
    make_tree(tmp_path)
    probe(tmp_path)
    (index,) = index_files(tmp_path)
    index.write_bytes(b"\x00not marshal")
    again = probe(tmp_path)
    assert again["hits"] == 0 and again["modules"]["ixpkg.sub"]["value"] == "sub"
    assert probe(tmp_path)["hits"] >= 5  # rewritten


def test_each_command_line_keeps_an_index_of_its_own_imports(tmp_path):
    """A command loads and checks only what such a command line imported: one index per
    command line, not one that every command run with this `sys.path` adds to."""
    make_tree(tmp_path)
    assert probe(tmp_path, "ixmod", line="run hello")["misses"] >= 1
    assert probe(tmp_path, "ixpkg,ixpkg.sub", line="serve")["misses"] >= 2
    names = sorted(p.name for p in index_files(tmp_path))
    assert (
        len(names) == 2 and any("-run-" in n for n in names) and any("-serve" in n for n in names)
    )
    again = probe(tmp_path, "ixmod,ixpkg", line="run hello")
    assert again["hits"] >= 1 and again["misses"] == 1  # ixpkg: only the other line had it
    assert probe(tmp_path, "ixpkg,ixpkg.sub", line="serve")["misses"] == 0
