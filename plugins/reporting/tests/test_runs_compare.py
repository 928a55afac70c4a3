"""`agent-env runs compare A B` on two runs the real CLI recorded: the same bundle with
different seed tables, so one task's trials pass in one run and fail in the other (a verifier
checks the seeded word), while another task passes in both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

AGENT_ENV = str(Path(sys.executable).parent / "agent-env")
BOX = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}


def _verify(verifier: str, command: str) -> dict[str, Any]:
    return {
        "id": verifier,
        "type": "verify_sandbox",
        "sandbox_name": "box",
        "verifier_id": verifier,
        "criteria": [
            {"id": "c", "type": "bash_cmd_succeeds", "criterion": command, "bash_cmd": command}
        ],
    }


def _seeds(*words: str) -> str:
    return "".join(f'[[trial]]\nword = "{w}"\n\n' for w in words)


def test_compare_two_recorded_runs(tmp_path: Path) -> None:
    (tmp_path / ".agentenv").mkdir()
    (tmp_path / ".agentenv" / "config.toml").write_text("")
    tasks = tmp_path / "fruit" / "tasks"
    tasks.mkdir(parents=True)
    word = [BOX, _verify("ready", "true"), _verify("word", "test {word} = banana")]
    (tasks / "pick.json").write_text(json.dumps(word))
    (tasks / "steady.json").write_text(json.dumps([BOX, _verify("ready", "true")]))
    (tmp_path / "a.toml").write_text(_seeds("kiwi", "banana", "kiwi"))
    (tmp_path / "b.toml").write_text(_seeds("banana", "kiwi", "banana"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env["AGENT_ENV_HOME"] = str(tmp_path / "home")

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [AGENT_ENV, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )

    ids = []
    for seeds in ("a.toml", "b.toml"):
        done = cli("run", "fruit", "--trials", "3", "--seeds", seeds, "--json")
        assert done.returncode == 1, done.stderr  # some trials score below 1
        ids.append(json.loads(done.stdout)["run_id"])

    shown = cli("runs", "compare", *ids, "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert (data["a"]["id"], data["b"]["id"]) == tuple(ids)
    assert (data["a"]["front_end"], data["a"]["runner"]) == ("run", "local")
    assert (data["a"]["passed"], data["a"]["trials"]) == (4, 6)
    assert (data["b"]["passed"], data["b"]["trials"]) == (5, 6)
    tasks_by = {t["name"]: t for t in data["tasks"]}
    pick = tasks_by["pick"]
    assert (pick["a"]["passed"], pick["b"]["passed"], pick["delta"]) == (1, 2, 0.333333)
    low, high = pick["delta_ci95"]
    assert -1 < low < 0 < 0.333333 < high < 1
    assert tasks_by["steady"]["delta"] == 0.0
    verifiers = {v["verifier"]: (v["a"]["passed"], v["b"]["passed"]) for v in data["verifiers"]}
    assert verifiers == {"word": (1, 2), "ready": (6, 6)}
    fixed = [
        (f["task"], f["trial"], f["a"]["status"], f["b"]["status"])
        for f in data["flipped"]["fixed"]
    ]
    broken = [(f["task"], f["trial"]) for f in data["flipped"]["broken"]]
    assert fixed == [("pick", 0, "scored_below", "passed"), ("pick", 2, "scored_below", "passed")]
    assert broken == [("pick", 1)]

    text = cli("runs", "compare", *ids)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith(f"A {ids[0]}") and "run · local runner" in lines[0]
    assert "A 4/6 66.7%, B 5/6 83.3%, change +16.7 pts [" in lines[2]
    [pick_line] = [line for line in lines if line.startswith("pick ")]
    assert "1/3 33.3% [" in pick_line and "2/3 66.7% [" in pick_line and "+33.3 pts [" in pick_line
    assert "flipped: 2 fixed (not passed in A, passed in B), 1 broken" in lines
    assert (
        f"  broken  pick #1  passed -> scored_below  {data['flipped']['broken'][0]['a']['id']}"
        in text.stdout
    )

    unknown = cli("runs", "compare", ids[0], ids[1][:-1] + "q")
    assert unknown.returncode == 1 and f"did you mean {ids[1]!r}" in unknown.stderr
    instance = data["flipped"]["broken"][0]["a"]["id"]
    refused = cli("runs", "compare", ids[0], instance)
    assert refused.returncode == 2 and "compare takes run ids" in refused.stderr
