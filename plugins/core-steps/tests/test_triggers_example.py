"""examples/mail-triggers: the email arrives by trigger during the agent's turn and the oracle
answers it within working hours; moved to late afternoon, the same reply is out of hours and
the verifier says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "mail-triggers"


def example_files() -> dict[str, str]:
    return {
        p.relative_to(EXAMPLE).as_posix(): p.read_text()
        for p in EXAMPLE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def task() -> list[dict]:
    return json.loads((EXAMPLE / "tasks" / "reply.json").read_text())


def results(state: dict) -> dict[str, bool]:
    return {r["id"]: r["result"] for r in state["verifiers"]["answered-in-hours"]["results"]}


async def test_the_email_arrives_in_the_agents_turn_and_is_answered_in_hours(runner):
    record = await runner.run(task(), example_files())
    assert record["failure"] is None, record["failure"]
    assert results(runner.state) == {
        "email-arrived": True,
        "answered": True,
        "within-working-hours": True,
    }
    assert runner.state["verifiers"]["answered-in-hours"]["score"] == 1.0
    (config,) = runner.state["clock_configurations"]
    assert [s["service"] for s in config["synced"]] == ["mail"]  # the env stamps virtual time
    calls = runner.state["outputs"]["work"]["tool_calls"]
    assert [c["tool"] for c in calls] == ["wait_for_email", "get_time", "send_reply"]


async def test_a_reply_after_five_pm_fails_the_working_hours_check(runner):
    steps = task()
    for step in steps:
        if step["type"] == "sync_env_clock":
            step["virtual_time"] = "2026-03-09T20:50:00Z"  # 16:50 in New York
        if step["type"] == "register_env_triggers":
            step["triggers"][0]["when"]["at"] = "2026-03-09T17:05:00-04:00"
    record = await runner.run(steps, example_files())
    assert results(runner.state) == {
        "email-arrived": True,
        "answered": True,
        "within-working-hours": False,
    }
    assert record["failure"] is None and runner.state["verifiers"]["answered-in-hours"]["score"] < 1
