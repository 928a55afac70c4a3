"""`agent-env run --trials`: the results table, --json, --export, seeds, --retry-infra,
failure classes, the sandbox creation cap, and `runs list|show|export` of a trials run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_run_cli import load_steps_module, nothing_left, stored, write_bundle


@pytest.fixture
def run_cli(cli_runner, register_plugin, agent_env_home):
    from agentenv_reporting import hooks as reporting  # `runs export`

    register_plugin(load_steps_module(), "engine-test-steps")
    register_plugin(reporting, "reporting")
    return cli_runner


def coin_task(passing: str = "0,2", value: str = "{trial}") -> list:
    return [
        {"id": "box", "type": "t_light_box", "text": "{trial}"},
        {"id": "coin", "type": "t_coin", "value": value, "passing": passing},
    ]


def test_trials_table_json_and_export(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(
        tmp_path / "b",
        {"coin": coin_task("0,2"), "sure": coin_task("0,1,2,3")},
        evals={"all": ["coin", "sure"]},
    )
    export = tmp_path / "trials.jsonl"
    result = run_cli.invoke(
        [
            "run",
            str(bundle),
            "--trials",
            "4",
            "--concurrency",
            "3",
            "--export",
            str(export),
            "--wide",
        ]
    )
    assert result.exit_code == 1, result.stderr  # some trials scored below 1
    lines = result.stdout.splitlines()
    coin = next(ln for ln in lines if ln.startswith("coin "))
    # trials passed pass-rate [CI] mean [CI] pass@1 pass@2 pass@4
    cells = coin.replace("[", "").replace("]", "").replace(",", "").split()
    assert cells[1:4] == ["4", "2", "0.500"]
    assert cells[-3:] == ["0.500", "0.833", "1.000"]  # pass@2 = 1 - C(2,2)/C(4,2)
    assert "eval all: 6 of 8 passed" in lines
    assert "not passed: coin: verifier 2" in lines
    assert "trials 8/8 done" in result.stderr  # the last progress line
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    assert len(rows) == 8 and len({r["instance_id"] for r in rows}) == 8
    assert sorted((r["task"], r["trial"]) for r in rows) == sorted(
        (t, i) for t in ("coin", "sure") for i in range(4)
    )
    row = next(r for r in rows if r["task"] == "coin" and r["trial"] == 1)
    assert row["passed"] is False and row["failure_class"] == "verifier"
    assert row["seed"] == 1 and row["seed_values"] == {"trial": 1, "seed": 1}
    assert row["bundle_digest"].startswith("sha256:") and row["task_version"] == 1
    assert set(row["step_seconds"]) == {"box", "coin"} and row["score"] == 0.0
    nothing_left(agent_env_home)

    data = json.loads(
        run_cli.invoke(["run", str(bundle), "--trials", "4", "--task", "coin", "--json"]).stdout
    )
    [task] = data["results"]["tasks"]
    assert task["pass_at_k"] == {"1": 0.5, "2": 0.833333, "3": 1.0, "4": 1.0}
    assert task["pass_rate_ci95"] == [0.150039, 0.849961]  # Wilson, 2 of 4
    assert data["results"]["intervals"]["pass_rate"].startswith("Wilson")
    assert len(data["tasks"]) == 4 and data["exit_code"] == 1


def test_seed_file_values_reach_the_steps_and_the_records(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(tmp_path / "b", {"city": coin_task("Paris", "{city}")})
    seeds = tmp_path / "cities.toml"
    seeds.write_text('[[trial]]\nseed = 7\ncity = "Paris"\n\n[[trial]]\nseed = 8\ncity = "Rome"\n')
    result = run_cli.invoke(["run", str(bundle), "--trials", "3", "--seeds", str(seeds), "--json"])
    data = json.loads(result.stdout)
    got = sorted((r["trial"], r["seed"], r["seed_values"]["city"]) for r in data["tasks"])
    assert got == [(0, 7, "Paris"), (1, 8, "Rome"), (2, 7, "Paris")]
    assert data["results"]["tasks"][0]["passed"] == 2

    (tmp_path / "b" / "seeds.toml").write_text("seeds = [1\n")
    bad = run_cli.invoke(["run", str(bundle), "--trials", "2"])
    assert bad.exit_code == 2 and "seeds.toml" in bad.stderr


def test_retry_infra_reruns_infrastructure_failures_only(run_cli, agent_env_home, tmp_path):
    counter = str(tmp_path / "count")
    flaky = [
        {"id": "box", "type": "t_light_box"},
        {"id": "flaky", "type": "t_flaky", "counter": counter, "key": "{trial}"},
        {"id": "coin", "type": "t_coin", "value": "x", "passing": "x"},
    ]
    bundle = write_bundle(tmp_path / "b", {"flaky": flaky})
    result = run_cli.invoke(["run", str(bundle), "--trials", "3", "--retry-infra", "1", "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    [task] = data["results"]["tasks"]
    assert (task["trials"], task["passed"], task["excluded"]) == (3, 3, {})
    assert sorted(r["id"][-4:] for r in data["tasks"]) == ["0-r1", "1-r1", "2-r1"]
    records = stored(agent_env_home, "task_instances")
    first = [r for r in records if not r["id"].endswith("-r1")]
    assert {r["failure_class"] for r in first} == {"infrastructure"}
    run_id = data["run_id"]
    rows = run_cli.invoke(["runs", "export", run_id, "--attempts"]).stdout.splitlines()
    assert len(rows) == 6
    assert len(run_cli.invoke(["runs", "export", run_id]).stdout.splitlines()) == 3
    nothing_left(agent_env_home)

    no_retry = write_bundle(tmp_path / "c", {"flaky": flaky})
    (tmp_path / "count.0").unlink()
    result = run_cli.invoke(["run", str(no_retry), "--trials", "2"])
    assert result.exit_code == 1
    assert "not passed: flaky: infrastructure 1 (excluded)" in result.stdout


@pytest.mark.parametrize("cls", ["agent", "env", "timeout"])
def test_failure_classes_reach_the_record(run_cli, agent_env_home, tmp_path, cls):
    steps = [
        {
            "id": "fail",
            "type": "t_flaky",
            "counter": str(tmp_path / "c"),
            "failures": 9,
            "failure_class": cls,
        },
    ]
    bundle = write_bundle(tmp_path / "b", {"t": steps})
    data = json.loads(run_cli.invoke(["run", str(bundle), "--trials", "2", "--json"]).stdout)
    assert {r["failure_class"] for r in data["tasks"]} == {cls}
    assert data["results"]["tasks"][0]["failures"] == {cls: 2}


def test_sandbox_concurrency_caps_creations_in_flight(run_cli, register_plugin, tmp_path):
    from agent_env import hookimpl
    from agent_env.sandboxes.local import LocalProvider

    seen = {"now": 0, "max": 0}

    class SlowLocal(LocalProvider):
        type = "slow_local"

        async def create(self, spec):
            seen["now"] += 1
            seen["max"] = max(seen["max"], seen["now"])
            try:
                await anyio.sleep(0.05)
                return await super().create(spec)
            finally:
                seen["now"] -= 1

    class Plugin:
        @hookimpl
        def agentenv_register_sandbox_providers(self, registry):
            registry.add(SlowLocal)

    register_plugin(Plugin(), "slow-local")
    bundle = write_bundle(tmp_path / "b", {"t": coin_task("x", "x")})
    args = [
        "run",
        str(bundle),
        "--sandbox",
        "slow_local",
        "--trials",
        "6",
        "--concurrency",
        "6",
    ]
    result = run_cli.invoke([*args, "--sandbox-concurrency", "2"])
    assert result.exit_code == 0, result.stderr
    assert seen["max"] == 2
    seen["max"] = 0
    assert run_cli.invoke(args).exit_code == 0
    assert seen["max"] == 6  # the default cap (8) does not bind here


def test_runs_list_show_export_of_a_trials_run(run_cli, agent_env_home, tmp_path):
    bundle = write_bundle(tmp_path / "b", {"coin": coin_task("0,2")}, evals={"e": ["coin"]})
    run_id = json.loads(run_cli.invoke(["run", str(bundle), "--trials", "4", "--json"]).stdout)[
        "run_id"
    ]
    [row] = json.loads(run_cli.invoke(["runs", "list", "--json"]).stdout)
    assert (row["instances"], row["trials_per_task"], row["passed"], row["failed"]) == (
        4,
        4,
        2,
        2,
    )
    shown = run_cli.invoke(["runs", "show", run_id]).stdout
    assert "4 trials (4 per task): 2 passed, 2 failed" in shown
    assert any(ln.split()[:4] == ["coin", "4", "2", "0.500"] for ln in shown.splitlines())
    assert any(ln.split()[:5] == ["eval", "e", "4", "2", "0.500"] for ln in shown.splitlines())
    out = tmp_path / "x.jsonl"
    result = run_cli.invoke(["runs", "export", run_id, "-o", str(out)])
    assert "wrote 4 trial row(s)" in result.stderr
    assert [json.loads(ln)["trial"] for ln in out.read_text().splitlines()] == [
        0,
        1,
        2,
        3,
    ]
    bad = run_cli.invoke(["runs", "export", run_id[:-1] + "q"])
    assert bad.exit_code == 1 and f"did you mean {run_id!r}" in bad.stderr


def test_resume_takes_no_trials_or_seeds(run_cli):
    result = run_cli.invoke(["run", "--resume", "run-x", "--trials", "3"])
    assert result.exit_code == 2 and "--trials" in result.stderr
