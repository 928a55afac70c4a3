"""`agent-env runs export RUN --format chat-jsonl|parquet --to hf://org/repo`: the real CLI and
`huggingface_hub` client push the export as a dataset to the local Hub; `hf_hub_download` and
`datasets.load_dataset` read it back as written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTES_AGENT = ROOT / "examples" / "notes-agent"


#: `datasets.load_dataset` of the pushed repo by its id (in a fresh interpreter: the Hub client
#: reads `HF_ENDPOINT` when it is imported), printing the one row as JSON.
LOAD_FROM_HUB = """
import datasets, json, sys
[row] = list(datasets.load_dataset("org/trials", split="train"))
sys.stdout.write(json.dumps(row, default=str))
"""


def _agent_env(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("agent-env")
    return subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A home with one recorded run of the notes-agent example (oracle): (env, run id)."""
    home = tmp_path_factory.mktemp("dataset-push") / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "HF_"))}
    env["AGENT_ENV_HOME"] = str(home)
    ran = _agent_env(["run", str(NOTES_AGENT), "--agent", "oracle", "--json"], env)
    assert ran.returncode == 0, ran.stderr
    return env, json.loads(ran.stdout)["run_id"]


def test_push_chat_jsonl_then_parquet_and_read_them_back(recorded, hub, endpoint, token, tmp_path):
    import datasets
    from huggingface_hub import hf_hub_download

    base, run_id = recorded
    env = {**base, "HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "hf")}
    refused = _agent_env(["runs", "export", run_id, "--to", "hf://org/trials"], env)
    assert refused.returncode == 1 and "needs a token" in refused.stderr, refused.stderr
    assert hub.repos == {}

    env["HF_TOKEN"] = token
    pushed = _agent_env(
        ["runs", "export", run_id, "--format", "chat-jsonl", "--to", "hf://org/trials"], env
    )
    assert pushed.returncode == 0, pushed.stderr
    repo = hub.repos["org/trials"]
    sha = repo.branches["main"]
    assert pushed.stdout == f"pushed 1 trial row(s) to hf://org/trials (commit {sha})\n"
    tree = repo.commits[sha]
    assert sorted(tree) == [".gitattributes", "README.md", "data/train-00000-of-00001.jsonl"]
    assert "path: data/train-00000-of-00001.jsonl" in tree["README.md"].decode()

    path = hf_hub_download(
        "org/trials",
        "data/train-00000-of-00001.jsonl",
        repo_type="dataset",
        token=token,
        endpoint=endpoint,
        cache_dir=tmp_path / "dl",
    )
    rows = datasets.load_dataset("json", data_files=path, split="train")
    [row] = list(rows)
    assert row["run_id"] == run_id and row["task"] == "groceries" and row["reward"] == 1.0
    calls = [c for m in row["messages"] for c in m.get("tool_calls") or []]
    assert [c["function"]["name"] for c in calls] == ["list_notes", "add_note"]
    answered = [m["tool_call_id"] for m in row["messages"] if m["role"] == "tool"]
    assert answered == [c["id"] for c in calls]

    again = _agent_env(
        ["runs", "export", run_id, "--format", "parquet", "--to", "hf://org/trials", "-m", "pq"],
        env,
    )
    assert again.returncode == 0, again.stderr
    tree = repo.commits[repo.branches["main"]]
    assert sorted(tree) == [".gitattributes", "README.md", "data/train-00000-of-00001.parquet"]
    path = hf_hub_download(
        "org/trials",
        "data/train-00000-of-00001.parquet",
        repo_type="dataset",
        token=token,
        endpoint=endpoint,
        cache_dir=tmp_path / "dl2",
    )
    [again_row] = list(datasets.load_dataset("parquet", data_files=path, split="train"))
    assert again_row["messages"][1:] == [
        {k: m.get(k) for k in ("role", "content", "tool_calls", "tool_call_id")}
        for m in row["messages"][1:]
    ]

    # what a trainer types: the repo id, the card's config finds the split and the data file
    read = subprocess.run(
        [sys.executable, "-c", LOAD_FROM_HUB], env={**env, "HF_HOME": str(tmp_path / "hf3")},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout) == json.loads(json.dumps(again_row, default=str))


def test_a_destination_no_plugin_pushes_to_changes_nothing(recorded, tmp_path):
    env, run_id = recorded
    done = _agent_env(["runs", "export", run_id, "--to", "s3://bucket/trials"], env)
    assert done.returncode == 1
    assert "--to s3://bucket/trials: no installed plugin pushes datasets there" in done.stderr


def test_a_commit_cannot_be_pushed_to_and_nothing_is_sent(recorded, hub, endpoint, token):
    base, run_id = recorded
    env = {**base, "HF_ENDPOINT": endpoint, "HF_TOKEN": token}
    pinned = "hf://org/trials@" + "a" * 40
    done = _agent_env(["runs", "export", run_id, "-f", "parquet", "--to", pinned], env)
    assert done.returncode == 1
    assert "a commit sha cannot be pushed to; name a branch" in done.stderr, done.stderr
    assert hub.repos == {} and hub.log == []
