"""`runs export` and `runs compare` refuse what they cannot do, by name, and change nothing:
a task instance where a run id belongs, an unknown id, an unknown format or destination, a
binary format to a terminal, both `-o` and `--to`. Driven through the real CLI against one
recorded `agent-env run hello`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

AGENT_ENV = str(Path(sys.executable).parent / "agent-env")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(cli, run id, task instance id) of one recorded `run hello`."""
    root = tmp_path_factory.mktemp("reporting")
    (root / ".agentenv").mkdir()
    (root / ".agentenv" / "config.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env["AGENT_ENV_HOME"] = str(root / "home")

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [AGENT_ENV, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
        )

    done = cli("run", "hello", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    return cli, data["run_id"], data["tasks"][0]["id"], root


def test_export_writes_the_rows_of_the_run(recorded):
    cli, run_id, instance, _ = recorded
    done = cli("runs", "export", run_id)
    assert done.returncode == 0, done.stderr
    [row] = [json.loads(line) for line in done.stdout.splitlines()]
    assert (row["run_id"], row["instance_id"], row["status"]) == (run_id, instance, "passed")


def test_a_task_instance_is_not_a_run(recorded):
    cli, run_id, instance, _ = recorded
    for args in (("export", instance), ("compare", run_id, instance)):
        done = cli("runs", *args)
        assert done.returncode == 2, done.stderr
        assert f"{instance!r} is a task instance" in done.stderr
        assert "takes run ids (run-...)" in done.stderr


def test_an_unknown_run_suggests_the_recorded_one(recorded):
    cli, run_id, _, _ = recorded
    typo = run_id[:-1] + ("0" if run_id[-1] != "0" else "1")
    done = cli("runs", "compare", run_id, typo)
    assert done.returncode == 1
    assert f"no task instance or run {typo!r}" in done.stderr
    assert run_id in done.stderr  # the did-you-mean


def test_a_bad_format_or_destination_leaves_the_output_file_as_it_was(recorded):
    cli, run_id, _, root = recorded
    target = root / "out.jsonl"
    target.write_text("kept\n")
    done = cli("runs", "export", run_id, "-f", "rowz", "-o", str(target))
    assert done.returncode == 2
    assert "--format" in done.stderr and "rows" in done.stderr  # names the known ones
    both = cli("runs", "export", run_id, "-o", str(target), "--to", "hf://org/repo")
    assert both.returncode == 2
    assert "give -o/--output or --to, not both" in both.stderr
    assert target.read_text() == "kept\n"
    assert not list(root.glob("out.jsonl.partial"))


def test_a_destination_no_plugin_pushes_to_is_named(recorded):
    cli, run_id, _, _ = recorded
    done = cli("runs", "export", run_id, "--to", "ftp://host/data")
    assert done.returncode == 1
    assert "--to ftp://host/data: no installed plugin pushes datasets there" in done.stderr
