"""The Ray runner against a real Ray head (2 CPUs) with moto-backed S3 + DynamoDB stores: every
trial's record lands once, in the shared stores, written by Ray workers; a worker killed
mid-run costs an attempt, not the trial; Ctrl-C leaves no sandbox; and local stores on a
cluster of several nodes are refused with a clear error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import anyio
import pytest

from agentenv_testing.stores import AGENT_ENV, run_agent_env, stores_toml

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def aws_config(path: Path, endpoint: str) -> dict[str, str]:
    tag = uuid.uuid4().hex[:10]
    client = {
        "endpoint_url": endpoint,
        "region": "us-east-1",
        "access_key_id": "env:RAY_E2E_AWS_KEY",
        "secret_access_key": "env:RAY_E2E_AWS_SECRET",
    }
    tables = {"dynamodb": {"table": f"ray-{tag}"}, "s3": {"bucket": f"ray-{tag}"}}
    path.write_text(
        stores_toml(
            {"document": "dynamodb", "object": "s3"},
            {
                "dynamodb": {**client, **tables["dynamodb"]},
                "s3": {**client, **tables["s3"], "create_bucket": True},
            },
        )
    )
    return {"table": tables["dynamodb"]["table"], "bucket": tables["s3"]["bucket"]}


ENV = {
    "RAY_E2E_AWS_KEY": "testing",
    "RAY_E2E_AWS_SECRET": "testing",
    "RAY_USAGE_STATS_ENABLED": "0",
}


def run(tmp_path: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return run_agent_env(
        tmp_path / "home",
        tmp_path / "config.toml",
        *args,
        env=ENV,
        drop_env=("AWS_",),
        timeout=timeout,
    )


def stored_records(endpoint: str, table: str, run_id: str) -> list[dict]:
    from agentenv_aws_stores.dynamodb import DynamoDocumentStore
    from agentenv_aws_stores.testing import settings

    async def read() -> list[dict]:
        store = DynamoDocumentStore(settings(endpoint, table=table))
        try:
            stamp = run_id.removeprefix("run-")
            return [doc for _, doc in await store.list("task_instances", prefix=f"ti-{stamp}")]
        finally:
            await store.close()

    return anyio.run(read)


def test_200_hello_and_20_notes_local_trials_land_once_in_the_shared_stores(
    tmp_path, ray_head, moto_endpoint
):
    names = aws_config(tmp_path / "config.toml", moto_endpoint)
    for spec, trials in (("hello", 200), (str(EXAMPLES / "notes-local"), 20)):
        proc = run(
            tmp_path,
            "run",
            spec,
            "--trials",
            str(trials),
            "--concurrency",
            "8",
            "--runner",
            "ray",
            "--address",
            ray_head,
            "--json",
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout)
        records = stored_records(moto_endpoint, names["table"], out["run_id"])
        assert len(records) == trials  # once each: no duplicate, no extra attempt
        assert len({r["id"] for r in records}) == trials
        assert {r["status"] for r in records} == {"passed"}
        assert sorted(r["trial"] for r in records) == list(range(trials))
        # written by the Ray workers, not by the controller
        assert os.getpid() not in {r["owner"]["pid"] for r in records}
        assert len({r["owner"]["pid"] for r in records}) >= 2
        assert out["results"]["tasks"][0]["passed"] == trials
    # nothing of the runs stayed in the home folder's local stores
    assert not (tmp_path / "home" / "agentenv.db").exists()


def test_a_ray_run_is_found_with_runs_list_and_show(tmp_path, ray_head, moto_endpoint):
    """A run whose trials Ray workers ran is recorded by the same pipeline as a local one:
    `runs list --json` and `runs show` find it, naming its runner."""
    aws_config(tmp_path / "config.toml", moto_endpoint)
    args = ("--trials", "3", "--runner", "ray", "--address", ray_head, "--json")
    proc = run(tmp_path, "run", "hello", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_id = json.loads(proc.stdout)["run_id"]
    listed = run(tmp_path, "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = [r for r in json.loads(listed.stdout) if r["id"] == run_id]
    assert (row["front_end"], row["runner"], row["bundle"]) == ("run", "ray", "hello")
    assert (row["instances"], row["passed"], row["failed"]) == (3, 3, 0)
    shown = run(tmp_path, "runs", "show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["run"]["runner"] == "ray" and data["summary"]["passed"] == 3


def _actor_pids() -> list[int]:
    out = subprocess.run(["pgrep", "-f", "ray::TrialActor"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def _lease_owner(home: Path, actors: list[int]) -> int | None:
    for path in (home / "leases").glob("*.json"):
        try:
            pid = json.loads(path.read_text()).get("owner_pid")
        except (OSError, ValueError):
            continue
        if pid in actors:
            return pid
    return None


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def _start(tmp_path: Path, *args: str) -> subprocess.Popen:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "AWS_"))}
    environ.update(
        AGENT_ENV_HOME=str(tmp_path / "home"),
        AGENT_ENV_CONFIG=str(tmp_path / "config.toml"),
        **ENV,
    )
    return subprocess.Popen(
        [str(AGENT_ENV), *args],
        env=environ,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_worker_killed_mid_run_loses_no_trial(tmp_path, ray_head, moto_endpoint):
    names = aws_config(tmp_path / "config.toml", moto_endpoint)
    spec = str(EXAMPLES / "notes-local")
    proc = _start(
        tmp_path, "run", spec, "--trials", "12", "--runner", "ray", "--address", ray_head, "--json"
    )
    try:
        actors = _wait_for(_actor_pids, 120, "the Ray actors to start")
        # a worker with a trial in flight: the owner of a live sandbox's lease
        owner = _wait_for(lambda: _lease_owner(tmp_path / "home", actors), 120, "a live sandbox")
        os.kill(owner, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = json.loads(stdout) if stdout.strip() else {}
    records = stored_records(moto_endpoint, names["table"], out["run_id"]) if out else []
    unpassed = [
        f"{r['trial']}#{r.get('attempt', 0)} {r['status']} {r.get('failure_class')}: {r['outcome']}"
        for r in records
        if r["status"] != "passed"
    ]
    assert proc.returncode == 0, "\n".join([stderr[-3000:], *unpassed])
    assert out["results"]["tasks"][0]["passed"] == 12
    lost = [r for r in records if r.get("failure_class") == "infrastructure"]
    # the killed worker's attempts were failed as infrastructure and run again
    assert lost, "killing a worker mid-run should have cost at least one attempt"
    assert all("Ray worker" in r["outcome"] for r in lost)
    assert {r["trial"] for r in records if r["status"] == "passed"} == set(range(12))


def test_ctrl_c_cancels_the_remote_trials_and_leaves_no_sandbox(tmp_path, ray_head, moto_endpoint):
    aws_config(tmp_path / "config.toml", moto_endpoint)
    spec = str(EXAMPLES / "notes-local")
    proc = _start(tmp_path, "run", spec, "--trials", "40", "--runner", "ray", "--address", ray_head)
    try:
        _wait_for(_actor_pids, 120, "the Ray actors to start")
        leases = tmp_path / "home" / "leases"
        _wait_for(lambda: leases.is_dir() and any(leases.iterdir()), 120, "a live sandbox")
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr[-3000:]
    listed = run(tmp_path, "sandbox", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == [], listed.stdout
    assert not _actor_pids()


def test_local_stores_on_a_cluster_of_several_nodes_are_refused():
    from agent_env.config import load_config
    from agent_env.errors import AgentEnvError
    from agentenv_ray_runner.runner import _check_stores

    config = load_config()
    _check_stores(config, 1, None)  # one machine: local stores are fine
    with pytest.raises(AgentEnvError, match=r"has 3 nodes.*document = 'sqlite'.*s3 \+ dynamodb"):
        _check_stores(config, 3, "10.0.0.1:6379")


def test_an_unreachable_cluster_fails_fast_naming_the_address(tmp_path):
    (tmp_path / "config.toml").write_text("")
    started = time.monotonic()
    proc = run(
        tmp_path, "run", "hello", "--trials", "2", "--runner", "ray", "--address", "127.0.0.1:1"
    )
    assert proc.returncode == 1
    assert "cannot reach the Ray cluster at '127.0.0.1:1'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - started < 30
