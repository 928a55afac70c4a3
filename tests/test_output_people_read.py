"""What people read after a run: the trials table fits 100 columns (pass@k with `--wide`),
colour on a terminal and none when piped (`NO_COLOR`, `FORCE_COLOR`), and `runs show RUN`
lists the trials that did not pass with their failure class and reason. Real `agent-env`
processes on a local-sandbox bundle, their stdout a pipe as in `agent-env ... | less`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import agent_env

HELLO = Path(agent_env.__file__).parent / "hello_bundle" / "hello"
AGENT_ENV = str(Path(sys.executable).with_name("agent-env"))
LONG = "a-task-whose-name-is-long-enough-to-push-the-table-past-a-hundred-columns"
ESC = "\x1b["


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """The hello bundle with a long-named copy of its task and one (`bad`) that fails its
    verifier: the greeting does not say bye."""
    root = tmp_path / "b"
    shutil.copytree(HELLO, root)
    steps = json.loads((root / "tasks" / "hello.json").read_text())
    (root / "tasks" / f"{LONG}.json").write_text(json.dumps(steps))
    steps[2]["criteria"][1]["bash_cmd"] = "grep -q '^Bye' greeting.txt"
    (root / "tasks" / "bad.json").write_text(json.dumps(steps))
    return root


@pytest.fixture
def agent_env_cmd(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    env["AGENT_ENV_HOME"] = str(tmp_path / "home")

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [AGENT_ENV, *args],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=tmp_path,
            env={**env, **extra},
        )

    return run


def _table(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "pass rate" in line)
    end = next(i for i, line in enumerate(lines) if line.lstrip().startswith("(pass rate"))
    return lines[start : end + 1]


def test_the_trials_table_fits_100_columns_and_pass_at_k_is_on_demand(bundle, agent_env_cmd):
    result = agent_env_cmd("run", str(bundle), "--trials", "3")
    assert result.returncode == 1, result.stderr  # `bad` fails
    table = _table(result.stdout)
    assert len(table) == 5  # header, three tasks, footnote
    assert max(len(line) for line in table) <= 100, "\n".join(table)
    assert "pass@" not in table[0]
    assert any(line.startswith(LONG[:20]) and "\u2026" in line for line in table)
    assert "pass@k columns: --wide" in table[-1]

    wide = agent_env_cmd("run", str(bundle), "--trials", "3", "--wide")
    table = _table(wide.stdout)
    assert table[0].split()[-3:] == ["pass@1", "pass@2", "pass@3"]
    assert any(line.startswith(LONG) for line in table)  # the whole name
    assert max(len(line) for line in table) > 100

    run_id = next(w for w in result.stdout.split() if w.startswith("run-"))
    shown = agent_env_cmd("runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    table = _table(shown.stdout)
    assert max(len(line) for line in table) <= 100, "\n".join(table)
    assert "pass@" not in table[0]
    assert "pass@3" in _table(agent_env_cmd("runs", "show", run_id, "--wide").stdout)[0]


def test_piped_output_is_plain_and_colour_follows_force_and_no_color(bundle, agent_env_cmd):
    piped = agent_env_cmd("run", str(bundle))
    assert piped.returncode == 1, piped.stderr
    assert ESC not in piped.stdout and ESC not in piped.stderr
    assert "1 not passed (verifier 1)" in piped.stdout

    forced = agent_env_cmd("run", str(bundle), FORCE_COLOR="1")
    assert "\x1b[32mpassed (hello: 1)" in forced.stdout  # green
    assert "\x1b[31mscored below 1 (hello: 0)" in forced.stdout  # red
    assert forced.stdout.count(ESC) >= 4

    for extra in ({"NO_COLOR": "1"}, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, {"FORCE_COLOR": "0"}):
        plain = agent_env_cmd("run", str(bundle), **extra)
        assert ESC not in plain.stdout, extra
        assert "1 not passed (verifier 1)" in plain.stdout


def test_runs_show_lists_the_failed_trials_with_class_and_reason(bundle, agent_env_cmd):
    result = agent_env_cmd("run", str(bundle), "--trials", "2")
    run_id = next(w for w in result.stdout.split() if w.startswith("run-"))
    shown = agent_env_cmd("runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    at = lines.index("trials not passed:")
    listed = lines[at + 1 :]
    assert len(listed) == 2, shown.stdout
    for trial, line in enumerate(listed):
        task, number, cls, *rest = line.split()
        assert (task, number, cls) == ("bad", f"#{trial}", "[verifier]")
        assert " ".join(rest[:-1]) == "scored below 1 (hello: 0)"
        assert rest[-1].startswith(f"ti-{run_id[4:]}")
    data = json.loads(agent_env_cmd("runs", "show", run_id, "--json").stdout)
    assert [(r["task"], r["failure_class"]) for r in data["summary"]["not_passed"]] == [
        ("bad", "verifier"),
        ("bad", "verifier"),
    ]
