"""`agent-env run` in-process: outcomes, exit codes, progress lines, dry run, evals, JSON."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import anyio
import pytest

FIXTURES = Path(__file__).parents[1] / "kernel" / "tests" / "engine" / "fixture_steps"


def load_steps_module():
    spec = importlib.util.spec_from_file_location(
        "engine_test_steps", FIXTURES / "engine_test_steps.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("engine_test_steps", module)
    spec.loader.exec_module(module)
    return (
        sys.modules["engine_test_steps"]
        if sys.modules["engine_test_steps"] is not module
        else module
    )


def write_bundle(root: Path, tasks: dict, evals: dict | None = None) -> Path:
    (root / "tasks").mkdir(parents=True)
    for name, steps in tasks.items():
        (root / "tasks" / f"{name}.json").write_text(json.dumps(steps, indent=1))
    for name, names in (evals or {}).items():
        (root / "evals").mkdir(exist_ok=True)
        (root / "evals" / f"{name}.toml").write_text(f"tasks = {json.dumps(names)}\n")
    return root


def box_task(text: str = "hi", expect: str = "hi", trace: str = "") -> list:
    return [
        {"id": "box", "type": "t_box", "trace": trace},
        {"id": "write", "type": "t_write", "path": "/app/out.txt", "text": text, "trace": trace},
        {
            "id": "check",
            "type": "t_check",
            "verifier_id": "check",
            "path": "/app/out.txt",
            "text": expect,
            "trace": trace,
        },
    ]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stored(home: Path, collection: str) -> list[dict]:
    from agent_env.plugins import PluginManager
    from agent_env.stores import open_stores

    async def read():
        stores = open_stores({}, PluginManager(autoload=False), home=home)
        try:
            return [doc for _, doc in await stores.documents.list(collection)]
        finally:
            await stores.close()

    return anyio.run(read)


def nothing_left(home: Path) -> None:
    sandboxes = home / "sandboxes"
    assert not sandboxes.exists() or not [
        p for p in sandboxes.iterdir() if not p.name.startswith(".")
    ]
    leases = home / "leases"
    assert not leases.exists() or not list(leases.iterdir())


@pytest.fixture
def run_cli(cli_runner, register_plugin, agent_env_home):
    register_plugin(load_steps_module(), "engine-test-steps")
    return cli_runner


def test_passing_task_prints_outcome_and_leaves_nothing(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(tmp_path / "b", {"t": box_task()})
    result = run_cli.invoke(["run", str(bundle)])
    assert result.exit_code == 0, result.output
    line = result.stdout.strip().splitlines()[-1]
    assert line.startswith("t  passed (check: 1)  ") and " ti-" in line
    assert "[t] box: ok" in result.stderr and "[t] check: ok" in result.stderr
    [record] = stored(agent_env_home, "task_instances")
    assert record["status"] == "passed" and record["outcome"] == "passed (check: 1)"
    assert [s["status"] for s in record["steps"].values()] == ["completed"] * 3
    assert not alive(record["outputs"]["box"]["pid"])
    nothing_left(agent_env_home)


def test_scored_below_exits_1(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(tmp_path / "b", {"t": box_task(text="no")})
    result = run_cli.invoke(["-v", "run", str(bundle)])
    assert result.exit_code == 1, result.stderr
    assert "scored below 1 (check: 0)" in result.stdout, result.stderr


def test_failed_step_exits_1_and_tears_down(run_cli, agent_env_home, tmp_path):
    steps = box_task()
    steps[1] = {"id": "write", "type": "t_write", "sandbox": "nobox", "path": "/app/x", "text": "x"}
    bundle = write_bundle(tmp_path / "b", {"t": steps})
    result = run_cli.invoke(["run", str(bundle)])
    assert result.exit_code == 1
    assert "failed at step 'write': unknown sandbox 'nobox'" in result.stdout
    [record] = stored(agent_env_home, "task_instances")
    assert record["steps"]["check"]["status"] == "skipped"
    assert not alive(record["outputs"]["box"]["pid"])
    nothing_left(agent_env_home)


def test_unknown_task_is_a_usage_error_and_runs_nothing(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(tmp_path / "b", {"hello": box_task()})
    result = run_cli.invoke(["run", str(bundle), "--task", "helo"])
    assert result.exit_code == 2
    assert "did you mean 'hello'" in result.stderr
    assert list(agent_env_home.iterdir()) == []  # nothing materialized, no store opened


def test_resume_and_spec_together_is_a_usage_error(run_cli, tmp_path):
    result = run_cli.invoke(["run", str(tmp_path), "--resume", "ti-x"])
    assert result.exit_code == 2


def test_dry_run_writes_nothing_and_shows_the_plan(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(tmp_path / "b", {"t": box_task()})
    result = run_cli.invoke(["run", str(bundle), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "would run task t (3 steps)" in result.stdout
    assert "write (t_write) after: box" in result.stdout
    assert stored(agent_env_home, "task_instances") == []
    assert stored(agent_env_home, "journal") == []
    assert not (agent_env_home / "sandboxes").exists() or not list(
        (agent_env_home / "sandboxes").iterdir()
    )


def test_eval_summary_and_json(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(
        tmp_path / "b", {"good": box_task(), "bad": box_task(text="x")}, {"smoke": ["good", "bad"]}
    )
    result = run_cli.invoke(["run", str(bundle), "--eval", "smoke"])
    assert result.exit_code == 1
    assert "eval smoke: 1 of 2 passed" in result.stdout
    result = run_cli.invoke(["run", str(bundle), "--task", "good", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["exit_code"] == 0 and data["tasks"][0]["outcome"] == "passed (check: 1)"


def test_resume_of_a_finished_instance_changes_nothing(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(tmp_path / "b", {"t": box_task()})
    first = run_cli.invoke(["run", str(bundle), "--json"])
    instance = json.loads(first.stdout)["tasks"][0]["id"]
    result = run_cli.invoke(["run", "--resume", instance])
    assert result.exit_code == 0
    assert "already finished: passed (check: 1)" in result.stderr
    assert len(stored(agent_env_home, "journal")) == 3


def test_resume_of_an_unknown_instance_suggests_one(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(tmp_path / "b", {"t": box_task()})
    instance = json.loads(run_cli.invoke(["run", str(bundle), "--json"]).stdout)["tasks"][0]["id"]
    result = run_cli.invoke(["run", "--resume", instance[:-1] + "z"])
    assert result.exit_code == 1
    assert f"did you mean {instance!r}" in result.stderr


def test_no_spec_lists_installed_bundles(run_cli):
    result = run_cli.invoke(["run", "--json"])
    assert result.exit_code == 0
    assert isinstance(json.loads(result.stdout), list)


def test_unknown_sandbox_provider_is_a_usage_error(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(tmp_path / "b", {"t": box_task()})
    result = run_cli.invoke(["run", str(bundle), "--sandbox", "locl"])
    assert result.exit_code == 2
    assert "did you mean 'local'" in result.stderr
    assert stored(agent_env_home, "task_instances") == []


def test_resume_refuses_an_instance_whose_owner_is_alive(run_cli, agent_env_home, tmp_path):
    import socket
    import subprocess

    bundle = write_bundle(tmp_path / "b", {"t": box_task()})
    instance = json.loads(run_cli.invoke(["run", str(bundle), "--json"]).stdout)["tasks"][0]

    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        from agent_env.plugins import PluginManager
        from agent_env.stores import open_stores

        async def mark_running():
            stores = open_stores({}, PluginManager(autoload=False), home=agent_env_home)
            doc = await stores.documents.get("task_instances", instance["id"])
            doc.update(status="running", owner={"pid": sleeper.pid, "host": socket.gethostname()})
            await stores.documents.put("task_instances", instance["id"], doc)
            await stores.close()

        anyio.run(mark_running)
        result = run_cli.invoke(["run", "--resume", instance["id"]])
        assert result.exit_code == 1
        assert f"is still running in process {sleeper.pid}" in result.stderr
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_secret_in_an_error_reaches_neither_terminal_nor_store(
    run_cli, agent_env_home, tmp_path, monkeypatch
):
    monkeypatch.setenv("AGENT_ENV_SECRET_DEPLOY_KEY", "s3cr3t-value-42")
    steps = [
        {"id": "box", "type": "t_box"},
        {
            "id": "write",
            "type": "t_write",
            "sandbox": "s3cr3t-value-42",
            "path": "/app/x",
            "text": "x",
        },
    ]
    bundle = write_bundle(tmp_path / "b", {"t": steps})
    result = run_cli.invoke(["run", str(bundle), "--json"])
    assert result.exit_code == 1
    assert "unknown sandbox '[redacted]'" in result.stdout
    assert "s3cr3t-value-42" not in result.stdout + result.stderr
    assert "s3cr3t-value-42" not in json.dumps(stored(agent_env_home, "task_instances"))
    assert "s3cr3t-value-42" not in json.dumps(stored(agent_env_home, "journal"))


def test_resume_refuses_when_the_task_changed(run_cli, agent_env_home, tmp_path):
    steps = box_task()
    steps[1] = {"id": "write", "type": "t_write", "sandbox": "nobox", "path": "/app/x", "text": "x"}
    bundle = write_bundle(tmp_path / "b", {"t": steps})
    first = json.loads(run_cli.invoke(["run", str(bundle), "--json"]).stdout)["tasks"][0]
    assert first["status"] == "failed"
    (bundle / "tasks" / "t.json").write_text(json.dumps(box_task()))
    result = run_cli.invoke(["run", "--resume", first["id"]])
    assert result.exit_code == 2
    assert "task 't' changed since the run started (v1 then, v2 now)" in result.stderr


def test_resume_reruns_a_failed_step_after_the_cause_is_fixed(run_cli, agent_env_home, tmp_path):
    marker = tmp_path / "ready"
    steps = [
        {"id": "wait", "type": "t_wait", "release": str(marker), "timeout": 0.01},
        {"id": "box", "type": "t_box"},
    ]
    bundle = write_bundle(tmp_path / "b", {"t": steps})
    first = json.loads(run_cli.invoke(["run", str(bundle), "--json"]).stdout)["tasks"][0]
    assert first["outcome"].startswith("failed at step 'wait'")
    marker.touch()
    result = run_cli.invoke(["run", "--resume", first["id"], "--json"])
    assert result.exit_code == 0, result.stderr
    again = json.loads(result.stdout)["tasks"][0]
    assert again["id"] == first["id"] and again["status"] == "unscored"
    assert (
        again["steps"]["wait"]["attempts"] == 2 and again["steps"]["box"]["status"] == "completed"
    )


def test_the_configured_runner_runs_the_instances(
    run_cli, register_plugin, agent_env_home, tmp_path, monkeypatch
):
    from agent_env import hookimpl
    from agent_env.engine.runner import LocalRunner

    used = []

    class CountingRunner(LocalRunner):
        type = "counting"

        async def run(self, instances):
            used.append((self.concurrency, [i.task_name for i in instances]))
            return await super().run(instances)

    class Plugin:
        @hookimpl
        def agentenv_register_runners(self, registry):
            registry.add(CountingRunner)

    register_plugin(Plugin(), "counting-runner")
    monkeypatch.setenv("AGENT_ENV_RUN_RUNNER", "counting")
    monkeypatch.setenv("AGENT_ENV_RUN_CONCURRENCY", "3")
    bundle = write_bundle(tmp_path / "b", {"t": box_task()})
    result = run_cli.invoke(["run", str(bundle)])
    assert result.exit_code == 0, result.stderr
    assert used == [(3, ["t"])]


def test_an_invalid_bundle_exits_2_and_writes_nothing(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(
        tmp_path / "b",
        {"t": [{"id": "box", "type": "t_bx"}, {"id": "w", "type": "t_write", "depends_on": ["z"]}]},
    )
    result = run_cli.invoke(["run", str(bundle)])
    assert result.exit_code == 2
    assert "t_bx" in result.stderr and "did you mean 't_box'" in result.stderr
    assert "tasks/t.json: step 'w': depends_on: unknown step 'z'" in result.stderr
    assert list(agent_env_home.iterdir()) == []


def test_no_spec_lists_hello(run_cli):
    result = run_cli.invoke(["run"])
    assert result.exit_code == 0
    assert "hello" in result.stdout and "agentenv-kernel" in result.stdout
