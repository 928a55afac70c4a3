"""Run records stored by an older agent-env (commit 208aff9, before the record models) still
load: `runs list/show/export` read them unchanged and `run --resume` finishes such a run.

The fixture holds the documents `agent-env run hello --trials 2` and `agent-env run hello`
stored at 208aff9 (owner without a start time, records before `TaskInstanceRecord`), with the
owner host renamed so no live process here can be taken for their owner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_env.plugins import PluginManager
from agent_env.stores import open_stores

FIXTURE = Path(__file__).parent / "fixtures" / "records-208aff9.json"
TRIALS_RUN = "run-20261203132119-16b72a"
SINGLE_RUN = "run-20261203132121-7de617"
NEVER_STARTED = "ti-20261203132119-16b72a-00001"
AGENT_ENV = Path(sys.executable).with_name("agent-env")


def _put_all(home: Path, docs: dict[str, dict[str, Any]]) -> None:
    async def go() -> None:
        stores = open_stores({}, PluginManager(autoload=False), home=home)
        try:
            for collection, items in docs.items():
                for key, doc in items.items():
                    await stores.documents.put(collection, key, doc)
        finally:
            await stores.close()

    anyio.run(go)


def _get(home: Path, collection: str, key: str) -> Any:
    async def go() -> Any:
        stores = open_stores({}, PluginManager(autoload=False), home=home)
        try:
            return await stores.documents.get(collection, key)
        finally:
            await stores.close()

    return anyio.run(go)


@pytest.fixture
def old_home(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A home holding the old documents, the second trial of the trials run never started."""
    docs = json.loads(FIXTURE.read_text())
    del docs["task_instances"][NEVER_STARTED]
    docs["journal"] = {k: v for k, v in docs["journal"].items() if not k.startswith(NEVER_STARTED)}
    home = tmp_path / "home"
    _put_all(home, docs)
    return home, docs


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENT_ENV_CONFIG"}
    env["AGENT_ENV_HOME"] = str(home)
    return subprocess.run(
        [str(AGENT_ENV), *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_old_records_show_list_and_export_unchanged(old_home):
    home, docs = old_home
    listed = json.loads(cli(home, "runs", "list", "--json").stdout)
    assert {r["id"]: (r["instances"], r["passed"], r["unfinished"]) for r in listed} == {
        TRIALS_RUN: (2, 1, 1),
        SINGLE_RUN: (1, 1, 0),
    }
    shown = json.loads(cli(home, "runs", "show", SINGLE_RUN, "--json").stdout)
    # the stored documents come back exactly as they were written
    assert shown["run"] == docs["runs"][SINGLE_RUN]
    [instance] = shown["instances"]
    assert instance == docs["task_instances"][instance["id"]]
    text = cli(home, "runs", "show", instance["id"]).stdout
    assert "outcome: passed (hello: 1)" in text

    export = cli(home, "runs", "export", TRIALS_RUN)
    assert export.returncode == 0, export.stderr
    [row] = [json.loads(line) for line in export.stdout.splitlines()]
    assert (row["task"], row["trial"], row["attempt"], row["passed"]) == ("hello", 0, 0, True)
    assert (row["score"], row["failure_class"], row["seed_values"]) == (
        1.0,
        None,
        {"seed": 0, "trial": 0},
    )


def test_resume_an_old_run_keeps_its_finished_trial_and_runs_the_other(old_home):
    home, docs = old_home
    kept = docs["task_instances"][f"{TRIALS_RUN.replace('run-', 'ti-')}-00000"]
    result = cli(home, "run", "--resume", TRIALS_RUN)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 trial(s) finished and kept, 1 to run" in result.stderr
    assert _get(home, "task_instances", kept["id"]) == kept
    new = _get(home, "task_instances", NEVER_STARTED)
    assert (new["status"], new["trial"], new["seed_values"]) == (
        "passed",
        1,
        {"seed": 1, "trial": 1},
    )
    # plus `cost`, which records gained with issue 32 (older ones have none)
    assert set(kept) | {"cost"} == set(new), "a new record has the keys the old one has"
    rows = [json.loads(x) for x in cli(home, "runs", "export", TRIALS_RUN).stdout.splitlines()]
    assert [(r["trial"], r["passed"]) for r in rows] == [(0, True), (1, True)]
    run = _get(home, "runs", TRIALS_RUN)
    assert {k: v for k, v in run.items() if k != "owner"} == {
        k: v for k, v in docs["runs"][TRIALS_RUN].items() if k != "owner"
    }
    assert run["owner"]["pid"] != docs["runs"][TRIALS_RUN]["owner"]["pid"]


def test_keys_a_record_model_does_not_know_survive_a_load(old_home, tmp_path):
    home, docs = old_home
    record = dict(docs["task_instances"][f"{SINGLE_RUN.replace('run-', 'ti-')}-00000"])
    record["written_by_a_newer_version"] = {"x": 1}
    del record["failure_class"]  # records from before failure classes
    _put_all(home, {"task_instances": {record["id"]: record}})
    shown = json.loads(cli(home, "runs", "show", SINGLE_RUN, "--json").stdout)
    [instance] = shown["instances"]
    # the unknown key is kept as it was; the missing field is shown with its default
    assert instance == {**record, "failure_class": None}


def test_a_malformed_stored_record_is_named_and_nothing_changes(old_home):
    home, docs = old_home
    record = dict(docs["task_instances"][f"{SINGLE_RUN.replace('run-', 'ti-')}-00000"])
    record["status"] = "pased"
    record["trial"] = "0"
    _put_all(home, {"task_instances": {record["id"]: record}})
    result = cli(home, "runs", "export", SINGLE_RUN)
    assert result.returncode != 0
    assert f"task instance record {record['id']!r}" in result.stderr
    assert "trial: expected an integer, got '0'" in result.stderr
    assert _get(home, "task_instances", record["id"]) == record
    record["trial"] = 0
    _put_all(home, {"task_instances": {record["id"]: record}})
    result = cli(home, "runs", "show", SINGLE_RUN)
    assert result.returncode != 0
    assert "got 'pased' (did you mean 'passed'?)" in result.stderr
