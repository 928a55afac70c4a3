"""The entry-point index: the same answers as a scan with `importlib.metadata`, kept in the
cache folder, and scanned again whenever what is installed on `sys.path` changes."""

from __future__ import annotations

import json
import os
from importlib.metadata import entry_points

import pytest

from agent_env import entrypoints


def _rows(found):
    return sorted((ep.group, ep.name, ep.value, ep.dist) for ep in found)


def _dist(root, name, body, version="1.0"):
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(body)
    return info


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


@pytest.fixture
def scans(monkeypatch):
    """How many times the index had to scan."""
    count = [0]
    real = entrypoints._scan

    def counted():
        count[0] += 1
        return real()

    monkeypatch.setattr(entrypoints, "_scan", counted)
    return count


def _index_files(tmp_path):
    return list((tmp_path / "cache" / "agentenv" / "entry-points").glob("*.json"))


def test_the_index_answers_as_importlib_metadata_does(site, scans, tmp_path):
    _dist(site, "demo-dist", "[agent_env]\ndemo = demo_mod:hooks\n[agent_env.bundles]\nb = pkg\n")
    expected = [
        (ep.group, ep.name, ep.value, ep.dist.metadata["Name"])
        for group in ("agent_env", "agent_env.bundles", "agent_env.task_steps")
        for ep in entry_points(group=group)
    ]
    assert _rows(entrypoints.installed()) == sorted(expected)
    assert _rows(entrypoints.installed()) == sorted(expected)  # now from the index
    assert scans[0] == 1
    assert len(_index_files(tmp_path)) == 1
    demo = [ep for ep in entrypoints.installed("agent_env") if ep.name == "demo"]
    assert [(ep.dist, ep.version) for ep in demo] == [("demo-dist", "1.0")]
    assert [
        ep.name for ep in entrypoints.installed("agent_env.bundles") if ep.dist == "demo-dist"
    ] == ["b"]


def test_a_new_distribution_is_seen_at_once(site, scans):
    before = _rows(entrypoints.installed())
    _dist(site, "late-dist", "[agent_env]\nlate = late_mod\n")
    after = _rows(entrypoints.installed())
    assert set(after) - set(before) == {("agent_env", "late", "late_mod", "late-dist")}
    assert scans[0] == 2


def test_a_removed_distribution_is_gone_at_once(site, scans):
    info = _dist(site, "gone-dist", "[agent_env]\ngone = gone_mod\n")
    assert any(ep.name == "gone" for ep in entrypoints.installed())
    for child in info.iterdir():
        child.unlink()
    info.rmdir()
    assert not any(ep.name == "gone" for ep in entrypoints.installed())


def test_an_edited_entry_points_file_is_read_again(site, scans):
    info = _dist(site, "edit-dist", "[agent_env]\nfirst = one_mod\n")
    assert any(ep.name == "first" for ep in entrypoints.installed())
    (info / "entry_points.txt").write_text("[agent_env]\nsecond = two_mod\n")
    names = {ep.name for ep in entrypoints.installed() if ep.dist == "edit-dist"}
    assert names == {"second"}


def test_a_changed_sys_path_is_scanned_again(site, scans, tmp_path, monkeypatch):
    entrypoints.installed()
    other = tmp_path / "other"
    _dist(other, "other-dist", "[agent_env]\nother = other_mod\n")
    assert not any(ep.name == "other" for ep in entrypoints.installed())
    monkeypatch.syspath_prepend(str(other))
    assert any(ep.name == "other" for ep in entrypoints.installed())


def test_two_sys_paths_of_one_installation_keep_an_index_each(site, scans, tmp_path):
    """`agent-env` and `python -c` see different first `sys.path` entries: alternating between
    them scans once each, not at every switch."""
    import sys

    entrypoints.installed()
    first = list(sys.path)
    sys.path.insert(0, str(tmp_path / "elsewhere"))
    try:
        entrypoints.installed()
        second = list(sys.path)
    finally:
        sys.path[:] = first
    for path in (first, second, first, second):
        sys.path[:] = path
        entrypoints.installed()
    sys.path[:] = first
    assert scans[0] == 2
    assert len(_index_files(tmp_path)) == 2


@pytest.mark.parametrize("content", [b"{not json", b"[]", b'{"format": 1}', b"\xff\xfe"])
def test_a_damaged_index_is_a_scan_and_is_written_anew(site, scans, tmp_path, content):
    _dist(site, "demo-dist", "[agent_env]\ndemo = demo_mod\n")
    expected = _rows(entrypoints.installed())
    (index,) = _index_files(tmp_path)
    index.write_bytes(content)
    assert _rows(entrypoints.installed()) == expected
    assert json.loads(index.read_bytes())["format"] == entrypoints.INDEX_FORMAT
    assert _rows(entrypoints.installed()) == expected
    assert scans[0] == 2


def test_an_index_that_cannot_be_written_changes_nothing(site, scans, tmp_path):
    _dist(site, "demo-dist", "[agent_env]\ndemo = demo_mod\n")
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    assert any(ep.name == "demo" for ep in entrypoints.installed())
    assert any(ep.name == "demo" for ep in entrypoints.installed())
    assert scans[0] == 2


def test_only_agent_env_groups_are_kept(site):
    with pytest.raises(ValueError, match="console_scripts"):
        entrypoints.installed("console_scripts")


def test_load_imports_what_the_value_names(site):
    (site / "ep_target_mod.py").write_text("class Outer:\n    class Inner:\n        x = 1\n")
    ep = entrypoints.InstalledEntryPoint("agent_env", "t", "ep_target_mod:Outer.Inner", "d", "1")
    assert ep.load().x == 1
    module = entrypoints.InstalledEntryPoint("agent_env", "t", "ep_target_mod [extra]", "d", "1")
    assert module.load().__name__ == "ep_target_mod"


def test_the_index_is_private_to_the_user(site, tmp_path):
    entrypoints.installed()
    (index,) = _index_files(tmp_path)
    assert os.stat(index).st_mode & 0o077 == 0


def test_indexes_of_installations_that_are_gone_are_dropped(site, tmp_path):
    entrypoints.installed()
    (index,) = _index_files(tmp_path)
    gone = index.with_name("00000000.json")
    gone.write_text(json.dumps({"prefix": str(tmp_path / "deleted-venv"), "format": 1}))
    live = index.with_name("11111111.json")
    live.write_text(json.dumps({"prefix": str(tmp_path), "format": 1}))
    damaged = index.with_name("22222222.json")
    damaged.write_bytes(b"{not json")
    index.unlink()  # the next call writes, and tidies up
    entrypoints.installed()
    assert sorted(p.name for p in _index_files(tmp_path)) == sorted([index.name, live.name])


def _settle(folder):
    """Make `folder` look last modified an hour ago (settled, `SETTLE_NS`)."""
    old = os.stat(folder).st_mtime - 3600
    os.utime(folder, (old, old))


@pytest.fixture
def listings(monkeypatch):
    """The folders the fingerprint had to list (the others it took from the index)."""
    listed = []
    real = entrypoints._metadata_folders

    def counted(folder):
        listed.append(folder)
        return real(folder)

    monkeypatch.setattr(entrypoints, "_metadata_folders", counted)
    return listed


def test_a_settled_folder_is_not_listed_again(site, scans, listings):
    _dist(site, "calm-dist", "[agent_env]\ncalm = calm_mod\n")
    _settle(site)
    first = _rows(entrypoints.installed())
    assert str(site) in listings
    listings.clear()
    assert _rows(entrypoints.installed()) == first
    assert str(site) not in listings
    assert scans[0] == 1


def test_a_folder_changed_just_before_the_index_is_listed_until_it_settles(site, scans, listings):
    _dist(site, "fresh-dist", "[agent_env]\nfresh = fresh_mod\n")
    entrypoints.installed()
    listings.clear()
    entrypoints.installed()
    assert str(site) in listings, "a folder changed within SETTLE_NS must be listed again"
    assert scans[0] == 1


def test_a_new_distribution_in_a_settled_folder_is_seen_at_once(site, scans, listings):
    _dist(site, "calm-dist", "[agent_env]\ncalm = calm_mod\n")
    _settle(site)
    entrypoints.installed()
    entrypoints.installed()
    _dist(site, "late-dist", "[agent_env]\nlate = late_mod\n")  # the folder's mtime moves
    assert any(ep.name == "late" for ep in entrypoints.installed())
    assert scans[0] == 2


def test_an_edited_entry_points_file_in_a_settled_folder_is_read_again(site, scans):
    info = _dist(site, "edit-dist", "[agent_env]\nfirst = one_mod\n")
    _settle(site)
    assert any(ep.name == "first" for ep in entrypoints.installed())
    (info / "entry_points.txt").write_text("[agent_env]\nsecond = two_mod\n")
    _settle(site)  # an edit in place leaves the folder's mtime alone
    names = {ep.name for ep in entrypoints.installed() if ep.dist == "edit-dist"}
    assert names == {"second"}
