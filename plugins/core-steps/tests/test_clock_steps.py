"""sync_env_clock through the real engine: the gateway's get_time in a zone, the backing
servers that take the clock and those that do not."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from clock_envs import FILES, answers, caller, check, deploy  # noqa: E402

pytestmark = pytest.mark.anyio


def sync(env: str, **fields) -> dict:
    return {
        "id": f"clock-{env}",
        "type": "sync_env_clock",
        "env_id": env,
        "virtual_time": "2026-03-08T06:59:00Z",
        "virtual_seconds_per_real_second": 0,
        **fields,
    }


async def test_get_time_answers_local_time_and_unsynced_envs_are_reported(runner):
    files = {
        **FILES,
        "artifacts/ask/ask.py": caller([("get_time", {"time_zone": "America/New_York"})]),
    }
    record = await runner.run([deploy("notes"), sync("notes"), check("asked", "ask")], files)
    assert record["failure"] is None, record["failure"]
    assert json.loads(answers(runner.state, "asked")[0]) == {
        "current_time": "2026-03-08T06:59:00Z",
        "time_zone": "America/New_York",
        "local_time": "2026-03-08T01:59:00-05:00",
    }
    (config,) = runner.state["clock_configurations"]
    assert config["skipped"] == [
        {"service": "notes", "environment": "notes", "synced": False, "reason": "not_advertised"}
    ]
    assert config["synced"] == [] and config["env_get_time_url"].endswith("/clock/time")
    assert runner.state["env_clock"]["virtual_time"] == "2026-03-08T06:59:00Z"


async def test_an_env_without_the_clock_fails_when_not_tolerated(runner):
    record = await runner.run(
        [deploy("notes"), sync("notes", tolerate_missing_sync_time=False)], FILES
    )
    assert "notes does not advertise urn:agentenv:clock/v1" in record["failure"]["message"]


async def test_an_env_that_advertises_the_clock_answers_virtual_time(runner):
    files = {**FILES, "artifacts/ask/ask.py": caller([("now", {})])}
    record = await runner.run(
        [deploy("clocked"), sync("clocked"), check("asked", "ask", "clocked")], files
    )
    assert record["failure"] is None, record["failure"]
    (config,) = runner.state["clock_configurations"]
    assert [s["service"] for s in config["synced"]] == ["clocked"] and config["skipped"] == []
    assert answers(runner.state, "asked") == ["2026-03-08T06:59:00Z"]


async def test_a_bad_virtual_time_is_refused_before_the_run(runner):
    from agent_env.errors import BundleError

    with pytest.raises(BundleError, match="virtual_time"):
        await runner.run(
            [deploy("notes"), sync("notes", virtual_time="2026-03-08 06:59:00")], FILES
        )


async def test_clock_calls_share_the_process_tls_context(runner, monkeypatch):
    """Each sync_env_clock calls the gateway; a fresh TLS context per call loaded the CA bundle
    (~60 ms under load: most of a fork's time, since every child of a fork syncs its clock)."""
    import ssl

    made = []
    real = ssl.create_default_context

    def counted(*args, **kwargs):
        made.append(args or kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counted)
    record = await runner.run([deploy("notes")], FILES)  # what a deploy alone builds
    assert record["failure"] is None, record["failure"]
    deploy_only = len(made)
    steps = [deploy("notes")]
    for i in range(5):
        steps.append({**sync("notes"), "id": f"clock-{i}", "depends_on": [steps[-1]["id"]]})
    record = await runner.run(steps, FILES)
    assert record["failure"] is None, record["failure"]
    assert runner.state["env_clock"]["virtual_time"] == "2026-03-08T06:59:00Z"
    # the shared context is built at most once per process (maybe by an earlier test)
    synced = len(made) - 2 * deploy_only
    assert synced <= 1, f"{synced} TLS contexts built for 5 clock syncs"
