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
