"""Red team on the Docker provider, local daemon and a remote Docker host (podman's API on a
loopback port, as in plugins/docker-sandbox/tests/test_remote_host.py): the hostile agent of
`redteam_agent.py` runs in its own container (built from its Dockerfile), the vault env in
another, and every attack fails; the report holds neither the host's secret nor the answer.

A container's root filesystem is its own: writing `/usr/bin` there succeeds and harms no one
(`CONTAINED`); what counts is that the host's files are untouched, which is asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REMOTE_TESTS = Path(__file__).resolve().parents[1] / "plugins" / "docker-sandbox" / "tests"
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(REMOTE_TESTS))
from redteam_support import ANSWER, ATTACKS, HOST_SECRET, Attacked, digest, report_of  # noqa: E402
from test_remote_host import podman  # noqa: E402, F401  (the remote host's fixture, reused)

# the first case of each provider builds two images (a minute or more each on a loaded machine)
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1500)]

#: Attacks whose target, in a container, is the container's own filesystem.
CONTAINED = frozenset({"write_system"})
#: Envs mounted on FastMCP apps run in local red-team runs only (the images here install our
#: protocol package alone): on Docker these attacks find no such env, and say so.
LOCAL_ONLY = frozenset({"hidden_tool_on_mcp_fastmcp_mount", "hidden_tool_on_fastmcp_mount"})


def _docker_ready() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="module")
def docker_run(tmp_path_factory) -> Attacked:
    if not _docker_ready():
        if os.environ.get("CI") == "true":
            raise AssertionError("CI=true: the docker daemon must run (scripts/services.sh)")
        pytest.skip("no docker daemon")
    return Attacked(
        tmp_path_factory.mktemp("redteam"),
        "docker",
        "--task",
        "attack",
        provider="docker",
        timeout=900,
    )


@pytest.fixture(scope="module")
def remote_run(tmp_path_factory, podman) -> Attacked:  # noqa: F811
    base_url, _ = podman
    return Attacked(
        tmp_path_factory.mktemp("redteam"),
        "remote",
        "--task",
        "attack",
        provider="docker",
        env={"AGENT_ENV_SANDBOX_DOCKER_BASE_URL": base_url},
        timeout=1200,
    )


@pytest.fixture(scope="module", params=["docker", "remote"])
def attacked(request) -> Attacked:
    return request.getfixturevalue(f"{request.param}_run")


@pytest.fixture(scope="module")
def report(attacked) -> dict:
    record = attacked.task("attack")
    assert record["steps"]["ask"]["status"] == "completed", attacked.stderr[-3000:]
    return report_of(record)


def test_every_attack_was_tried(report):
    assert sorted(report) == sorted(ATTACKS)


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_attack_fails_in_a_container(report, attack):
    row = report[attack]
    if attack in CONTAINED:
        return  # its host side is asserted in test_the_host_is_untouched
    assert row["ok"] is False, f"{attack} succeeded: {row['got']}"
    if attack in LOCAL_ONLY:
        assert "no env" in row["got"], row


def test_nothing_the_agent_read_holds_the_host_secret_or_the_answer(report):
    everything = json.dumps(report)
    assert HOST_SECRET not in everything
    assert ANSWER not in everything


def test_the_agents_files_do_not_become_its_reward(attacked):
    record = attacked.task("attack")
    assert record["status"] == "scored_below", record["outcome"]
    assert record["verifiers"]["answer"]["score"] == 0.0
    unit = record["verifiers"]["unit"]
    assert unit["score"] == 0.0, unit
    assert "no reward file at /app/reward.txt" in unit["results"][0]["justification"]


def test_the_host_is_untouched(attacked, report):
    assert report["shared_tmp"]["got"].startswith("wrote")  # it did write its /tmp ...
    assert not attacked.probe.exists()  # ... which is not the host's
    for path in ("/usr/bin/agentenv-redteam", "/etc/agentenv-redteam", "/opt/agentenv-redteam"):
        assert not Path(path).exists()
    assert digest(attacked.bundle / "artifacts" / "check" / "check.py") == attacked.verifier_digest
