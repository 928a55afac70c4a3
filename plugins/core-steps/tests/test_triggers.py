"""register_env_triggers through the real engine and the run's gateway: an action trigger that
mirrors a note, time triggers on the virtual clock (await_fired, a timeout, local 09:00 on both
sides of the DST change), and bad registrations."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from clock_envs import FILES as ENVS  # noqa: E402
from clock_envs import answers, caller, check, deploy  # noqa: E402

FILES = {**ENVS, "agents/solver/agent.toml": 'type = "scripted"\n'}

pytestmark = pytest.mark.anyio

MIRROR = {
    "id": "mirror",
    "when": {"type": "action", "tool": "add_note", "where": {"title": {"regex": "^groc"}}},
    "actions": [
        {
            "type": "tool",
            "tool": "add_note",
            "args": {"title": "${args.title}-copy", "body": "${result.created}"},
            "as": "assistant",
        }
    ],
}


def register(triggers: list, **fields) -> dict:
    return {
        "id": "triggers",
        "type": "register_env_triggers",
        "env_id": "notes",
        "triggers": triggers,
        **fields,
    }


def clock(rate: float, at: str = "2026-03-08T06:59:00Z") -> dict:
    return {
        "id": "clock",
        "type": "sync_env_clock",
        "env_id": "notes",
        "virtual_time": at,
        "virtual_seconds_per_real_second": rate,
    }


def oracle(calls: list) -> list[dict]:
    return [
        {
            "id": "agent",
            "type": "deploy_agent",
            "a2a_agent_id": "solver",
            "role": "agent",
            "metadata": {"solution": [{"tool_calls": calls, "response": "done"}]},
        },
        {"id": "ask", "type": "prompt_agent", "prompt": "go", "timeout_seconds": 30},
    ]


async def test_an_action_trigger_mirrors_the_agents_note_once(runner):
    files = {**FILES, "artifacts/look/look.py": caller([("list_notes", {})])}
    steps = [
        deploy("notes"),
        register([MIRROR], watch_roles=["agent"]),
        *oracle(
            [
                {"tool": "add_note", "arguments": {"title": "groceries", "body": "milk"}},
                {"tool": "add_note", "arguments": {"title": "work", "body": "x"}},
            ]
        ),
        {"id": "wait", "type": "run_code", "script_artifact_id": "settle"},
        check("looked", "look"),
    ]
    files["artifacts/settle/settle.py"] = "import time\ndef run(input):\n    time.sleep(1.5)\n"
    record = await runner.run(steps, files)
    assert record["failure"] is None, record["failure"]
    notes = json.loads(answers(runner.state, "looked")[0])
    assert notes == {"groceries": "milk", "work": "x", "groceries-copy": "groceries"}
    (entry,) = runner.state["env_trigger_registrations"]
    assert entry["added"] == ["mirror"] and entry["env_id"] == "notes"


async def test_a_time_trigger_fires_on_the_virtual_clock_and_is_awaited(runner):
    later = {
        "id": "later",
        "when": {"type": "time", "at": "PT1H"},
        "actions": [{"type": "tool", "tool": "add_note", "args": {"title": "reminder"}}],
    }
    files = {**FILES, "artifacts/look/look.py": caller([("list_notes", {})])}
    steps = [
        deploy("notes"),
        clock(86400),
        register([later], await_fired=["later"], await_timeout_seconds=20),
        check("looked", "look"),
    ]
    record = await runner.run(steps, files)
    assert record["failure"] is None, record["failure"]
    assert runner.state["env_trigger_registrations"][0]["awaited"] == {"later": "fired"}
    assert "reminder" in json.loads(answers(runner.state, "looked")[0])
    took = record["steps"]["triggers"]
    assert took["status"] == "completed"


async def test_a_trigger_that_never_fires_fails_the_await_in_time(runner):
    never = {
        "id": "never",
        "when": {"type": "time", "at": "2030-01-01T00:00:00Z"},
        "actions": [{"type": "tool", "tool": "add_note", "args": {"title": "x"}}],
    }
    steps = [
        deploy("notes"),
        clock(1),
        register([never], await_fired=["never"], await_timeout_seconds=2),
    ]
    record = await runner.run(steps, FILES)
    assert "did not all fire within 2s" in record["failure"]["message"]
    assert "'never': 'armed'" in record["failure"]["message"]


async def test_local_nine_oclock_fires_once_each_side_of_dst_in_order(runner):
    """09:00 in New York is 14:00Z on Saturday (EST) and 13:00Z on Monday (EDT)."""

    def nine(tid: str, local: str) -> dict:
        return {
            "id": tid,
            "when": {"type": "time", "at": local},
            "actions": [{"type": "tool", "tool": "add_note", "args": {"title": tid}}],
        }

    triggers = [
        nine("monday", "2026-03-09T09:00:00-04:00"),
        nine("saturday", "2026-03-07T09:00:00-05:00"),
    ]
    steps = [
        deploy("notes"),
        clock(86400, at="2026-03-07T12:00:00Z"),
        register(triggers, await_fired=["monday", "saturday"], await_timeout_seconds=20),
        {"id": "state", "type": "run_code", "script_artifact_id": "noop"},
    ]
    files = {**FILES, "artifacts/noop/noop.py": "def run(input):\n    return 1\n"}
    record = await runner.run(steps, files)
    assert record["failure"] is None, record["failure"]
    from agentenv_core_steps.triggers.resume import snapshot_path

    assert not snapshot_path(runner.instance.id).exists()  # forgotten with the instance
    (entry,) = runner.state["env_trigger_registrations"]
    assert entry["awaited"] == {"monday": "fired", "saturday": "fired"}
    state = runner.state["env_trigger_states"]["triggers"]
    fired = [e for e in state["events"] if e["kind"] == "fired"]
    assert [(e["trigger_id"], e["mark"]) for e in fired] == [
        ("saturday", "2026-03-07T14:00:00Z"),
        ("monday", "2026-03-09T13:00:00Z"),
    ]
    assert {t["id"]: t["fire_count"] for t in state["triggers"]} == {"monday": 1, "saturday": 1}
    kinds = [e["kind"] for e in state["events"] if e["trigger_id"] == "saturday"]
    assert kinds == ["added", "anchored", "detected", "action_ok", "fired"]


async def test_bad_registrations_fail_with_the_field(runner):
    bad = {
        "id": "b",
        "when": {"type": "action", "tool": "add_nope"},
        "actions": [{"type": "tool", "tool": "add_note"}],
    }
    record = await runner.run([deploy("notes"), register([bad])], FILES)
    assert "names unknown tool 'add_nope'" in record["failure"]["message"]
    assert "did you mean 'add_note'" in record["failure"]["message"]


async def test_executor_hours_for_an_unused_agent_fail(runner):
    hours = {"start": "09:00", "end": "17:00", "time_zone": "America/New_York"}
    record = await runner.run(
        [deploy("notes"), register([MIRROR], executor_hours={"ghost": hours})], FILES
    )
    assert "executor_hours names 'ghost', which no nl action uses" in record["failure"]["message"]


async def test_every_due_mark_of_a_count_fires_and_the_ledger_is_in_the_record(runner):
    # 1 real second is a virtual day: the three hourly marks fall due within one poll, and
    # `count = 3` means three reminders, not one
    reminders = {
        "id": "reminders",
        "when": {"type": "time", "every": "PT1H", "count": 3},
        "actions": [{"type": "tool", "tool": "add_note", "args": {"title": "reminder"}}],
    }
    steps = [
        deploy("notes"),
        clock(86400),
        register([reminders], await_fired=["reminders"], await_timeout_seconds=20),
        {"id": "wait", "type": "run_code", "script_artifact_id": "settle"},
    ]
    files = {
        **FILES,
        "artifacts/settle/settle.py": "import time\ndef run(input):\n    time.sleep(1.5)\n",
    }
    record = await runner.run(steps, files)
    assert record["failure"] is None, record["failure"]
    ledger = record["outputs"]["triggers"]["ledger"]
    (trigger,) = ledger["triggers"]
    assert (trigger["id"], trigger["status"], trigger["fire_count"]) == ("reminders", "fired", 3)
    kinds = [e["kind"] for e in ledger["events"] if e.get("trigger_id") == "reminders"]
    assert kinds.count("fired") == 3 and kinds.count("action_ok") == 3
    marks = [e["mark"] for e in ledger["events"] if e["kind"] == "fired"]
    assert marks == sorted(marks) and len(set(marks)) == 3  # each mark once, in order
    assert all(e.get("virtual_time") for e in ledger["events"])
    # the calls the trigger's actions made (as the default `trigger` role), and the clock
    assert [(c["role"], c["tool"]) for c in ledger["calls"]] == [("trigger", "add_note")] * 3
    assert ledger["clock"]["armed"] is True
    assert ledger["clock"]["virtual_seconds_per_real_second"] == 86400
