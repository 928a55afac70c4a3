"""Red team on the `local` provider: a hostile bundle agent, run through `agent-env run`, tries
every attack of `redteam_agent.py` from its sandbox (bubblewrap); none may succeed, its report
may hold neither the host's secret nor the answer key, and the run may not pass.

The same agent run where bubblewrap is missing is refused (an oracle still runs), and with
`--allow-unisolated` its attacks succeed: the control that shows the attacks have teeth.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from agent_env.testing.require import require

sys.path.insert(0, str(Path(__file__).parent))
from redteam_support import (  # noqa: E402
    ANSWER,
    ATTACKS,
    HOST_SECRET,
    Attacked,
    digest,
    report_of,
)

# three `agent-env run`s of a few envs each, one per module fixture
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
NO_BWRAP = (
    None if shutil.which("bwrap") else "bubblewrap is missing (scripts/services.sh installs it)"
)

MISSING = {"AGENT_ENV_SANDBOX_LOCAL_BWRAP": "/nonexistent/bwrap"}


@pytest.fixture(scope="module")
def isolated(tmp_path_factory) -> Attacked:
    require(NO_BWRAP)
    root = tmp_path_factory.mktemp("redteam")
    return Attacked(root, "isolated", "--task", "attack", with_explorer=True)


@pytest.fixture(scope="module")
def report(isolated) -> dict:
    record = isolated.task("attack")
    assert record["steps"]["ask"]["status"] == "completed", isolated.stderr
    return report_of(record)


def test_every_attack_was_tried(report):
    assert sorted(report) == sorted(ATTACKS)
    assert len(ATTACKS) >= 20


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_attack_fails_in_an_isolated_sandbox(report, attack):
    row = report[attack]
    assert row["ok"] is False, f"{attack} succeeded: {row['got']}"


def test_the_explorer_was_there_to_attack(report):
    """`agent-env up` served the run's home on loopback while the agent ran: the agent found
    it (and was refused: `test_the_attack_fails_in_an_isolated_sandbox[explorer_on_loopback]`)."""
    assert report["explorer_on_loopback"]["got"] not in ("{}", ""), report["explorer_on_loopback"]


def test_the_mounted_envs_were_there_to_attack(report):
    """The FastMCP-mounted envs ran (their public tool was listed), so their attacks count."""
    for attack in ("hidden_tool_on_mcp_fastmcp_mount", "hidden_tool_on_fastmcp_mount"):
        assert "no env" not in report[attack]["got"], report[attack]
        assert "_ping" in report[attack]["got"]


def test_nothing_the_agent_read_holds_the_host_secret_or_the_answer(report):
    everything = json.dumps(report)
    assert HOST_SECRET not in everything
    assert ANSWER not in everything


def test_the_agents_files_do_not_become_its_reward(isolated):
    record = isolated.task("attack")
    assert record["status"] == "scored_below", record["outcome"]
    assert record["verifiers"]["answer"]["score"] == 0.0
    unit = record["verifiers"]["unit"]
    assert unit["score"] == 0.0, unit
    assert "no reward file at /app/reward.txt" in unit["results"][0]["justification"]


def test_the_host_is_untouched(isolated):
    assert not isolated.probe.exists(), "the sandbox's /tmp is the host's"
    for path in ("/usr/bin/agentenv-redteam", "/etc/agentenv-redteam", "/opt/agentenv-redteam"):
        assert not Path(path).exists()
    assert digest(isolated.bundle / "artifacts" / "check" / "check.py") == isolated.verifier_digest
    assert "not isolated" not in isolated.stderr


@pytest.fixture(scope="module")
def unisolated(tmp_path_factory) -> Attacked:
    """bubblewrap 'missing' (config points at no file): the hostile agent is refused, the
    oracle runs."""
    require(NO_BWRAP)
    return Attacked(tmp_path_factory.mktemp("redteam"), "missing", env=MISSING)


def test_without_bubblewrap_an_untrusted_agent_is_refused(unisolated):
    record = unisolated.task("attack")
    assert record["status"] != "passed"
    assert record["steps"]["agent"]["status"] == "failed"
    assert "ask" not in record["steps"] or record["steps"]["ask"]["status"] != "completed"
    message = json.dumps(record)
    assert "untrusted and local sandboxes cannot be isolated here" in message
    assert "--allow-unisolated" in message
    assert unisolated.code == 1


def test_without_bubblewrap_the_oracle_still_runs(unisolated):
    assert unisolated.task("solve")["status"] == "passed", unisolated.task("solve")["outcome"]


def test_without_bubblewrap_the_user_is_told_once(unisolated):
    assert unisolated.stderr.count("local sandboxes are NOT isolated") == 1, unisolated.stderr
    assert "'/nonexistent/bwrap') is not on PATH" in unisolated.stderr


def test_allow_unisolated_runs_the_agent_and_its_attacks_succeed(tmp_path_factory):
    """The control: the same agent outside bubblewrap reads the stores, the host's secret and
    other processes, so the isolated run's zero is bubblewrap's doing."""
    require(NO_BWRAP)
    run = Attacked(
        tmp_path_factory.mktemp("redteam"),
        "allowed",
        "--task",
        "attack",
        "--allow-unisolated",
        env=MISSING,
    )
    got = report_of(run.task("attack"))
    won = {name for name, row in got.items() if row["ok"]}
    assert {
        "home_listing",
        "documents_store",
        "documents_store_relative",
        "object_store",
        "other_sandboxes",
        "own_environment",
        "proc_environ",
        "foreign_processes",
        "shared_tmp",
    } <= won | {"shared_tmp"} and run.probe.exists(), json.dumps(got, indent=1)[:4000]
    assert HOST_SECRET in json.dumps(got)
    assert ANSWER in json.dumps(got)
    run.probe.unlink(missing_ok=True)
