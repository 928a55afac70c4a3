"""`agent-env cache list|prune` over a real folder cache (`agent_env.caches.FolderCache`) under
a temporary cache dir: what prune removes, keeps (a held lock, a recent entry) and reports,
and that bad input changes nothing."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

import pytest

from agent_env import hookimpl
from agent_env.caches import FolderCache, LiveUse
from agentenv_caches import hooks
from agentenv_caches.pruning import age, human_size, parse_age, prune

DAY = 86400.0


class Downloads(FolderCache):
    type = "test-downloads"
    description = "files a test plugin downloaded"
    folders = ("test-downloads",)


class Broken(FolderCache):
    type = "test-broken"
    description = "a cache whose daemon is down"

    def entries(self):
        raise ConnectionError("daemon is down")


class Kinds:
    @hookimpl
    def agentenv_register_cache_kinds(self, registry):
        registry.add(Downloads)
        registry.add(Broken)


@pytest.fixture
def cache_root(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = Downloads().roots()[0]
    root.mkdir(parents=True)
    now = time.time()
    for name, size, days_old in (("old.bin", 2048, 10), ("new.bin", 10, 0), ("held.bin", 5, 10)):
        (root / name).write_bytes(b"x" * size)
        os.utime(root / name, (now - days_old * DAY, now - days_old * DAY))
    return root


@pytest.fixture
def cli(cli_runner, register_plugin, cache_root):
    register_plugin(hooks, "caches")
    register_plugin(Kinds(), "test-kinds")
    return cli_runner


def test_parse_age_takes_each_unit_and_refuses_the_rest():
    assert [parse_age(t) for t in ("30s", "15m", "12h", "7d", "2w")] == [
        30,
        900,
        43200,
        604800,
        1209600,
    ]
    for bad in ("7", "d", "-1d", "7y", ""):
        with pytest.raises(ValueError, match="is not an age; use a number and a unit"):
            parse_age(bad)


def test_sizes_and_ages_as_printed():
    assert [human_size(n) for n in (512, 1536, 5 * 1024**2, 3 * 1024**4)] == [
        "512 B",
        "1.5 KB",
        "5.0 MB",
        "3072.0 GB",
    ]
    assert [age(1000 - s, now=1000) for s in (5, 120, 7200, 3 * 86400)] == [
        "5s ago",
        "2m ago",
        "2h ago",
        "3d ago",
    ]


def test_prune_removes_old_entries_keeps_a_locked_one_and_reports_a_broken_kind(cache_root):
    lock = os.open(cache_root / "held.bin.lock", os.O_CREAT | os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        rows = prune([Downloads(), Broken()], LiveUse(), older_than=DAY)
    finally:
        os.close(lock)
    assert [(r["kind"], r["name"], r["action"]) for r in rows] == [
        ("test-downloads", "held.bin", "kept"),
        ("test-downloads", "old.bin", "removed"),
        ("test-broken", "*", "failed"),
    ]
    assert rows[2]["reason"] == "cannot list: ConnectionError: daemon is down"
    assert sorted(p.name for p in cache_root.iterdir()) == ["held.bin", "held.bin.lock", "new.bin"]


def test_cache_list_json_and_a_dry_run_that_removes_nothing(cli, cache_root):
    listed = cli.invoke(["cache", "list", "--kind", "test-downloads", "--json"])
    assert listed.exit_code == 0, listed.output
    (kind,) = json.loads(listed.stdout)["kinds"]
    assert [(e["name"], e["size"], e["in_use"]) for e in kind["entries"]] == [
        ("held.bin", 5, False),
        ("new.bin", 10, False),
        ("old.bin", 2048, False),
    ]
    dry = cli.invoke(
        ["cache", "prune", "--kind", "test-downloads", "--older-than", "1d", "--dry-run"]
    )
    assert dry.exit_code == 0
    assert dry.stdout.splitlines() == [
        "would remove test-downloads: held.bin 5 B",
        "would remove test-downloads: old.bin 2.0 KB",
    ]
    assert "would free 2.0 KB in 2 entries" in dry.stderr
    assert sorted(p.name for p in cache_root.iterdir()) == ["held.bin", "new.bin", "old.bin"]


def test_bad_input_changes_nothing(cli, cache_root):
    bad_age = cli.invoke(["cache", "prune", "--older-than", "7y"])
    assert bad_age.exit_code == 2
    assert "Invalid value for --older-than: '7y' is not an age" in bad_age.stderr
    typo = cli.invoke(["cache", "prune", "--kind", "test-download"])
    assert typo.exit_code != 0
    assert "test-downloads" in typo.stderr  # the did-you-mean
    assert sorted(p.name for p in cache_root.iterdir()) == ["held.bin", "new.bin", "old.bin"]


def test_a_kind_that_cannot_be_listed_says_why_and_prune_exits_1(cli):
    listed = cli.invoke(["cache", "list", "--kind", "test-broken"])
    assert listed.exit_code == 0
    assert listed.stdout == "test-broken: cannot list (ConnectionError: daemon is down)\n"
    pruned = cli.invoke(["cache", "prune", "--kind", "test-broken"])
    assert pruned.exit_code == 1
