"""Lease files on disk: written atomically, the folder made on the first write."""

from __future__ import annotations

import json
import os

from agent_env.sandboxes import leases


def test_write_creates_the_missing_folder_and_leaves_no_temp(tmp_path):
    lease_dir = tmp_path / "home" / "leases"
    path = lease_dir / "sb-1.json"
    leases.write(path, {"sandbox_id": "sb-1", "describe": {"root": "/x"}})
    leases.write(path, {"sandbox_id": "sb-1", "describe": {"root": "/y"}})
    assert os.listdir(lease_dir) == ["sb-1.json"]
    assert leases.read(path) == {"sandbox_id": "sb-1", "describe": {"root": "/y"}}
    assert json.loads(path.read_text())["describe"] == {"root": "/y"}


def test_pending_lease_in_a_fresh_home(tmp_path):
    pending = leases.write_pending(tmp_path / "leases", {"provider": "local", **leases.me()})
    assert pending.name.startswith(leases.PENDING)
    assert leases.read(pending) == {"provider": "local", **leases.me(), "pending": True}
    assert leases.has_leases(tmp_path)


def test_a_lease_file_that_is_not_a_json_object_reads_as_none(tmp_path):
    """Like an unreadable one: callers read fields of what `read` returns."""
    for name, text in [("list.json", "[1, 2]"), ("number.json", "3"), ("torn.json", '{"sand')]:
        (tmp_path / name).write_text(text)
        assert leases.read(tmp_path / name) is None, name
    assert leases.read(tmp_path / "absent.json") is None
