"""run_code on local sandboxes through the real engine."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio

DEPLOY = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
SCRIPT = """
import os
def run(input):
    return {"sum": input["args"]["a"] + input["args"]["b"], "earlier": input["results"],
            "cwd_is_app": os.getcwd() == os.environ["APP_DIR"]}
"""


async def test_result_is_stored_and_fed_to_later_scripts(runner):
    record = await runner.run(
        [
            DEPLOY,
            {
                "id": "first",
                "type": "run_code",
                "sandbox_name": "box",
                "script_artifact_id": "adder",
                "args": {"a": 2, "b": 3},
            },
            {
                "id": "second",
                "type": "run_code",
                "sandbox_name": "box",
                "script_artifact_id": "adder",
                "args": {"a": 1, "b": 1},
                "result_id": "again",
            },
        ],
        {"artifacts/adder/adder.py": SCRIPT},
    )
    assert record["failure"] is None, record["failure"]
    results = runner.state["script_results"]
    assert results["first"] == {"sum": 5, "earlier": {}, "cwd_is_app": True}
    assert results["again"]["earlier"] == {"first": results["first"]}
    assert runner.leftovers() == []


async def test_fileset_entry_imports_its_siblings_and_staging_is_removed(runner):
    files = {
        "artifacts/pkg/run.py": "from helper import twice\ndef go(input):\n    return twice(input['args']['n'])\n",
        "artifacts/pkg/helper.py": "def twice(n):\n    return n * 2\n",
        "artifacts/pkg/notes.txt": "not staged",
    }
    await runner.run(
        [
            DEPLOY,
            {
                "id": "calc",
                "type": "run_code",
                "sandbox_name": "box",
                "script_artifact_id": "pkg",
                "entrypoint": "go",
                "args": {"n": 21},
            },
            {
                "id": "verify",
                "type": "verify_sandbox",
                "sandbox_name": "box",
                "verifier_id": "clean",
                "criteria": [{"type": "bash_cmd_succeeds", "bash_cmd": 'test -z "$(ls -A /app)"'}],
            },
        ],
        files,
    )
    assert runner.state["script_results"]["calc"] == 42
    assert runner.state["verifiers"]["clean"]["score"] == 1.0


async def test_without_a_sandbox_it_runs_in_a_throwaway_one(runner):
    record = await runner.run(
        [
            {
                "id": "calc",
                "type": "run_code",
                "script_artifact_id": "adder",
                "args": {"a": 1, "b": 2},
            }
        ],
        {"artifacts/adder/adder.py": SCRIPT},
    )
    assert record["failure"] is None, record["failure"]
    assert runner.state["script_results"]["calc"]["sum"] == 3
    assert "run_code:calc" not in (runner.state.get("sandboxes") or {})
    assert runner.leftovers() == []


async def test_a_crashing_script_fails_the_step_with_its_stderr(runner):
    record = await runner.run(
        [
            DEPLOY,
            {"id": "calc", "type": "run_code", "sandbox_name": "box", "script_artifact_id": "bad"},
        ],
        {"artifacts/bad/bad.py": "def run(input):\n    raise RuntimeError('boom here')\n"},
    )
    assert record["failure"]["step"] == "calc"
    assert "boom here" in record["failure"]["message"]


async def test_a_slow_script_times_out(runner):
    record = await runner.run(
        [
            DEPLOY,
            {
                "id": "calc",
                "type": "run_code",
                "sandbox_name": "box",
                "script_artifact_id": "slow",
                "timeout_seconds": 1,
            },
        ],
        {"artifacts/slow/slow.py": "import time\ndef run(input):\n    time.sleep(30)\n"},
    )
    assert "timed out after 1s" in record["failure"]["message"]
    assert runner.leftovers() == []


async def test_a_missing_entrypoint_is_reported(runner):
    record = await runner.run(
        [
            DEPLOY,
            {
                "id": "calc",
                "type": "run_code",
                "sandbox_name": "box",
                "script_artifact_id": "adder",
                "entrypoint": "main",
            },
        ],
        {"artifacts/adder/adder.py": SCRIPT},
    )
    assert "defines no function 'main'" in record["failure"]["message"]
