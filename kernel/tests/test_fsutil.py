import os

import pytest

from agent_env.fsutil import replacing_dir


def test_replacing_dir_puts_a_new_folder_in_place_of_the_old(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "old.txt").write_text("old")
    with replacing_dir(dest) as staged:
        staged.mkdir()
        (staged / "new.txt").write_text("new")
        assert (dest / "old.txt").exists()  # untouched until the block ends
    assert [p.name for p in dest.iterdir()] == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # staging removed


def test_replacing_dir_leaves_dest_alone_and_cleans_up_on_failure(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), replacing_dir(dest) as staged:
        staged.mkdir()
        (staged / "half.txt").write_text("half")
        raise RuntimeError("boom")
    assert [p.name for p in dest.iterdir()] == ["old.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_replacing_dir_can_stage_a_file_over_a_folder(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    with replacing_dir(dest) as staged:
        staged.write_text("file")
    assert dest.read_text() == "file"


def test_mkstemp_makes_a_new_private_file_as_tempfile_does(tmp_path):
    from agent_env.fsutil import mkstemp

    made = set()
    for _ in range(50):
        fd, path = mkstemp(tmp_path, ".lease.", ".tmp")
        os.close(fd)
        assert os.path.isabs(path) and os.path.dirname(path) == str(tmp_path)
        name = os.path.basename(path)
        assert name.startswith(".lease.") and name.endswith(".tmp")
        assert os.stat(path).st_mode & 0o777 == 0o600
        made.add(path)
    assert len(made) == 50  # every call a new file, never one that exists


def test_mkstemp_never_follows_or_reuses_an_existing_name(tmp_path, monkeypatch):
    from agent_env import fsutil

    target = tmp_path / "elsewhere"
    os.symlink(target, tmp_path / "p-taken")
    names = iter(["p-taken", "p-free"])
    monkeypatch.setattr(fsutil, "_temp_name", lambda folder, p, s: str(tmp_path / next(names)))
    fd, path = fsutil.mkstemp(tmp_path, "p-")
    os.close(fd)
    assert path == str(tmp_path / "p-free")
    assert not target.exists(), "a symlink in the way was followed"


def test_mkstemp_and_mkdtemp_in_a_missing_folder_raise_file_not_found(tmp_path):
    from agent_env.fsutil import mkdtemp, mkstemp

    with pytest.raises(FileNotFoundError):
        mkstemp(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        mkdtemp(tmp_path / "missing")
    folder = mkdtemp(tmp_path, ".stage.")
    assert os.path.isdir(folder) and os.stat(folder).st_mode & 0o777 == 0o700
    assert os.path.basename(folder).startswith(".stage.")
