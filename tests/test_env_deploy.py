"""`agent-env env deploy`: a stored env comes up in a sandbox through the run service, answers
real MCP calls at the printed URL, and Ctrl-C tears it down (nothing left in `sandbox list`).
Real `agent-env` processes on a private home, the local sandbox provider."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from agentenv_protocol.client import EnvClient

AGENT_ENV = Path(sys.executable).with_name("agent-env")
NOTES = Path(__file__).resolve().parents[1] / "examples" / "notes-local"


@pytest.fixture
def home_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env["AGENT_ENV_HOME"] = str(tmp_path / "home")
    return env


def _cli(env, cwd, *args):
    return subprocess.run(
        [str(AGENT_ENV), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _read_json(stream) -> dict:
    text = ""
    for line in stream:
        text += line
        if line.startswith("}"):
            return json.loads(text)
    raise AssertionError(f"no JSON document on stdout: {text!r}")


async def _use(url: str) -> list:
    async with EnvClient(url) as env:
        added = await env.call_tool("add_note", {"title": "t", "body": "deployed"})
        assert not added.is_error, added.text
        read = await env.call_tool("read_note", {"title": "t"})
        return [added.is_error, read.text]


def test_env_deploy_serves_the_stored_env_until_ctrl_c(home_env, tmp_path):
    bundle = tmp_path / "notes"
    shutil.copytree(NOTES, bundle)
    assert _cli(home_env, tmp_path, "env", "put", str(bundle)).returncode == 0
    proc = subprocess.Popen(
        [str(AGENT_ENV), "env", "deploy", "--id", "notes", "--json"],
        env=home_env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        up = _read_json(proc.stdout)
        assert up["env"].endswith("/notes/notes") and up["version"] == 1
        assert up["mcp_url"] == up["url"] + "/mcp" and up["token"] is None
        assert up["tools"] == ["add_note", "list_notes", "read_note"]
        assert anyio.run(_use, up["url"]) == [False, "deployed"]
        listed = _cli(home_env, tmp_path, "sandbox", "list")
        assert up["instance"] in listed.stdout, listed.stdout
        shown = json.loads(
            _cli(home_env, tmp_path, "env", "get-instance", "--id", up["instance"]).stdout
        )
        assert shown["envs"]["notes"]["url"] == up["url"] and shown["run_id"] == up["run_id"]
        lineage = json.loads(_cli(home_env, tmp_path, "env", "show", "notes", "--json").stdout)
        assert [r["run_id"] for r in lineage["runs"]] == [up["run_id"]]
        # the deployment is a run of the one run pipeline: runs list / runs show find it
        runs = json.loads(_cli(home_env, tmp_path, "runs", "list", "--json").stdout)
        [row] = [r for r in runs if r["id"] == up["run_id"]]
        assert (row["front_end"], row["runner"], row["instances"]) == ("env deploy", "local", 1)
        run_doc = json.loads(
            _cli(home_env, tmp_path, "runs", "show", up["run_id"], "--json").stdout
        )
        assert [i["id"] for i in run_doc["instances"]] == [up["instance"]]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert "torn down" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _cli(home_env, tmp_path, "sandbox", "list").stdout.strip() == "no sandboxes"
    with pytest.raises(httpx.TransportError):
        httpx.get(up["url"] + "/.well-known/agent-env.json", timeout=2)


def test_env_deploy_of_an_unknown_env_names_the_stored_ones(home_env, tmp_path):
    bundle = tmp_path / "notes"
    shutil.copytree(NOTES, bundle)
    assert _cli(home_env, tmp_path, "env", "put", str(bundle)).returncode == 0
    done = _cli(home_env, tmp_path, "env", "deploy", "--id", "note")
    assert done.returncode == 1
    assert "no env 'note' (did you mean 'notes'?)" in done.stderr
    assert _cli(home_env, tmp_path, "sandbox", "list").stdout.strip() == "no sandboxes"
    bad = _cli(home_env, tmp_path, "env", "deploy", "--id", "notes", "--sandbox", "dockr")
    assert bad.returncode == 1 and "'docker'" in bad.stderr, bad.stderr


def test_env_deploy_of_an_env_that_does_not_start_exits_1_with_its_log(home_env, tmp_path):
    bundle = tmp_path / "broken"
    shutil.copytree(NOTES, bundle)
    (bundle / "envs" / "notes" / "server.py").write_text('raise SystemExit("boom: no server")\n')
    assert _cli(home_env, tmp_path, "env", "put", str(bundle)).returncode == 0
    done = _cli(home_env, tmp_path, "env", "deploy", "--id", "notes", "--json")
    assert done.returncode == 1 and done.stdout == ""
    assert "Error: env @local/" in done.stderr and "did not come up" in done.stderr
    assert "boom: no server" in done.stderr
    assert _cli(home_env, tmp_path, "sandbox", "list").stdout.strip() == "no sandboxes"
