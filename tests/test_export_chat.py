"""Issue 32, exports: `agent-env runs export RUN... --format chat-jsonl|parquet` writes one row
per trial that `datasets.load_dataset` reads as written, the conversation in the OpenAI chat
format (assistant `tool_calls` with ids, `tool` messages answering them by `tool_call_id`), on
the notes example (tool-loop agent against the scripted model server, and the oracle) and the
triggers example (the oracle waits for a triggered email, reads the env clock, replies)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import NOTES_AGENT, ROOT, TOOL_THEN_TEXT, agent_env, run_json  # noqa: E402

from agentenv_protocol.agent.testing import ScriptedModelServer  # noqa: E402

MAIL_TRIGGERS = ROOT / "examples" / "mail-triggers"
MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One home with three recorded runs: {name: run id}, and the home."""
    home = tmp_path_factory.mktemp("export") / "home"
    with ScriptedModelServer(TOOL_THEN_TEXT) as model:
        tool_loop, err = run_json(
            home, str(NOTES_AGENT), "--model", "scripted-1",
            env={"LITELLM_BASE_URL": model.base_url},
        )  # fmt: skip
    oracle, _ = run_json(home, str(NOTES_AGENT), "--agent", "oracle")
    mail, _ = run_json(home, str(MAIL_TRIGGERS))
    for data in (tool_loop, oracle, mail):
        assert [t["status"] for t in data["tasks"]] == ["passed"], data["tasks"][0]["outcome"]
    ids = {"tool-loop": tool_loop["run_id"], "oracle": oracle["run_id"], "mail": mail["run_id"]}
    return home, ids


@pytest.fixture(scope="module")
def exported(runs, tmp_path_factory):
    """The three runs exported in each format and read back with `datasets`: {format: rows}."""
    import datasets

    home, ids = runs
    out = tmp_path_factory.mktemp("files")
    loaded = {}
    for fmt, loader in (("chat-jsonl", "json"), ("parquet", "parquet")):
        path = out / f"trials.{fmt}"
        done = agent_env(home, "runs", "export", *ids.values(), "--format", fmt, "-o", str(path))
        assert done.returncode == 0, done.stderr
        assert done.stderr.endswith(f"wrote 3 trial row(s) to {path}\n")
        loaded[fmt] = list(datasets.load_dataset(loader, data_files=str(path), split="train"))
    return loaded


def _by_run(rows, ids):
    return {name: next(r for r in rows if r["run_id"] == rid) for name, rid in ids.items()}


def _check_calls_answered(messages):
    """Every tool message answers a call an earlier assistant message made, once, and every
    call is answered."""
    open_calls: list[str] = []
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls"):
            open_calls += [c["id"] for c in m["tool_calls"]]
        elif m["role"] == "tool":
            assert m["tool_call_id"] in open_calls, (m, open_calls)
            open_calls.remove(m["tool_call_id"])
    assert open_calls == []


def test_tool_loop_conversation_keeps_the_models_calls_and_ids(runs, exported):
    home, ids = runs
    row = _by_run(exported["chat-jsonl"], ids)["tool-loop"]
    messages = row["messages"]
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert messages[0]["content"] == (
        "You manage the user's notes with the notes tools. Never delete notes."
    )
    assert messages[1]["content"].startswith("Save my shopping list")
    calls = messages[2]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["list_notes", "add_note"]
    assert all(c["type"] == "function" and c["id"] for c in calls)
    assert json.loads(calls[1]["function"]["arguments"]) == {
        "title": "groceries",
        "body": "milk, eggs, bread",
    }
    assert sorted(m["tool_call_id"] for m in messages[3:5]) == sorted(c["id"] for c in calls)
    added = next(m for m in messages[3:5] if m["tool_call_id"] == calls[1]["id"])
    assert json.loads(added["content"]) == {"created": "groceries", "count": 2}
    assert messages[-1] == {
        "role": "assistant",
        "content": "Done: your list is saved in the note 'groceries'.",
    }
    assert (row["task"], row["task_version"], row["model"], row["agent"]) == (
        "groceries", 1, "scripted-1", "tool-loop",
    )  # fmt: skip
    assert row["scores"] == [
        {"verifier": "env-state", "score": 1.0},
        {"verifier": "answer", "score": 1.0},
        {"verifier": "tool-calls", "score": 1.0},
    ]
    assert (row["reward"], row["passed"], row["failure_class"]) == (1.0, True, None)
    assert (row["seed"], json.loads(row["seed_values"])) == ("0", {"seed": 0, "trial": 0})
    assert (row["prompt_tokens"], row["completion_tokens"], row["total_tokens"]) == (22, 14, 36)
    assert row["seconds"] > 0 and row["started_at"] < row["finished_at"]
    assert [s["provider"] for s in row["sandbox_seconds"]] == ["local"]


def test_oracle_and_triggers_replays_become_one_turn_per_call(runs, exported):
    home, ids = runs
    rows = _by_run(exported["chat-jsonl"], ids)
    for name, tools in (
        ("oracle", ["list_notes", "add_note"]),
        ("mail", ["wait_for_email", "get_time", "send_reply"]),
    ):
        messages = rows[name]["messages"]
        _check_calls_answered(messages)
        called = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]
        assert called == tools
        assert messages[-1]["role"] == "assistant" and messages[-1]["content"]
    mail = rows["mail"]["messages"]
    assert [m["role"] for m in mail] == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]
    email = json.loads(mail[2]["content"])
    assert email[0]["email_id"] == "order-42"  # the triggered email the agent waited for
    clock = json.loads(mail[4]["content"])
    assert clock["time_zone"] == "America/New_York"
    assert mail[-1]["content"] == "Answered order-42."
    assert rows["mail"]["scores"] == [{"verifier": "answered-in-hours", "score": 1.0}]


def test_every_row_matches_tool_results_to_calls_and_parquet_holds_the_same(runs, exported):
    home, ids = runs
    jsonl, parquet = exported["chat-jsonl"], exported["parquet"]
    assert [r["run_id"] for r in jsonl] == list(ids.values())
    for a, b in zip(jsonl, parquet, strict=True):
        _check_calls_answered(a["messages"])
        assert a["missing_trajectories"] == [] == b["missing_trajectories"]
        assert [{k: m.get(k) for k in MESSAGE_KEYS} for m in a["messages"]] == b["messages"]
        rest = {k: v for k, v in a.items() if k != "messages"}
        assert rest == {k: v for k, v in b.items() if k != "messages"}


def test_a_torn_trajectory_is_named_in_its_row_and_the_rest_is_kept(runs, tmp_path):
    """A power loss before the object store's fsync can leave a trajectory cut short while its
    record survived: the row keeps the prompt and answer and names the prompt and why."""
    import datasets

    home, ids = runs
    copy = tmp_path / "home"
    shutil.copytree(home, copy)
    [torn] = (copy / "objects" / "runs" / ids["tool-loop"]).rglob("trajectories/*.json")
    whole = torn.read_bytes()
    torn.write_bytes(whole[: len(whole) // 2])
    rows = {}
    for fmt, loader in (("chat-jsonl", "json"), ("parquet", "parquet")):
        path = tmp_path / f"t.{fmt}"
        done = agent_env(copy, "runs", "export", ids["tool-loop"], ids["oracle"], "-f", fmt,
                         "-o", str(path))  # fmt: skip
        assert done.returncode == 0, done.stderr
        rows[fmt] = list(datasets.load_dataset(loader, data_files=str(path), split="train"))
    for tool_loop, oracle in rows.values():
        [gap] = tool_loop["missing_trajectories"]
        assert gap["prompt_id"] == torn.stem
        assert f"is torn ({len(whole) // 2} bytes" in gap["reason"], gap
        assert [m["role"] for m in tool_loop["messages"]] == ["user", "assistant"]
        assert tool_loop["passed"] and tool_loop["reward"] == 1.0
        assert oracle["missing_trajectories"] == [] and len(oracle["messages"]) > 2


def test_default_rows_format_is_unchanged_and_carries_the_cost(runs):
    home, ids = runs
    done = agent_env(home, "runs", "export", ids["tool-loop"])
    assert done.returncode == 0, done.stderr
    [row] = [json.loads(line) for line in done.stdout.splitlines()]
    assert (row["run_id"], row["task"], row["passed"], row["score"]) == (
        ids["tool-loop"], "groceries", True, 1.0,
    )  # fmt: skip
    assert row["cost"]["total_tokens"] == 36 and row["cost"]["models"]["scripted-1"]
    both = agent_env(home, "runs", "export", ids["oracle"], ids["mail"], "--format", "rows")
    assert [json.loads(x)["run_id"] for x in both.stdout.splitlines()] == [
        ids["oracle"],
        ids["mail"],
    ]


def test_chat_jsonl_to_stdout_is_the_file(runs, tmp_path):
    home, ids = runs
    done = agent_env(home, "runs", "export", ids["oracle"], "--format", "chat-jsonl")
    path = tmp_path / "o.jsonl"
    agent_env(home, "runs", "export", ids["oracle"], "-f", "chat-jsonl", "-o", str(path))
    assert done.stdout == path.read_text() and done.stdout.count("\n") == 1


def test_bad_export_requests_change_nothing(runs, tmp_path):
    home, ids = runs
    kept = tmp_path / "kept.jsonl"
    kept.write_text("earlier export\n")
    unknown = agent_env(home, "runs", "export", ids["oracle"], "--format", "chat-jsonlx")
    assert unknown.returncode == 2
    assert "did you mean 'chat-jsonl'" in unknown.stderr, unknown.stderr
    binary = agent_env(home, "runs", "export", ids["oracle"], "--format", "parquet")
    assert binary.returncode == 2 and "-o FILE" in binary.stderr and binary.stdout == ""
    missing = agent_env(
        home, "runs", "export", ids["oracle"], "run-nope", "-f", "chat-jsonl", "-o", str(kept)
    )
    assert missing.returncode != 0 and "run-nope" in missing.stderr
    assert kept.read_text() == "earlier export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.jsonl"]
    both = agent_env(home, "runs", "export", ids["oracle"], "-o", str(kept), "--to", "hf://o/r")
    assert both.returncode == 2 and kept.read_text() == "earlier export\n"


def test_without_the_plugins_the_errors_name_the_package_to_install(runs):
    home, ids = runs
    off = {"AGENT_ENV_DISABLE_PLUGINS": "training-data,hf-hub"}
    fmt = agent_env(home, "runs", "export", ids["oracle"], "-f", "chat-jsonl", env=off)
    assert fmt.returncode == 2
    assert "export format 'chat-jsonl' is provided by a plugin that is not installed" in fmt.stderr
    assert "pip install agentenv-training-data" in fmt.stderr
    hub = agent_env(home, "runs", "export", ids["oracle"], "--to", "hf://org/trials", env=off)
    assert hub.returncode == 1
    assert "--to hf://org/trials: no installed plugin pushes datasets there" in hub.stderr
    assert "pip install agentenv-hf-hub" in hub.stderr
