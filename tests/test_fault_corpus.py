"""The injected-fault corpus: every fault of `FAULTS` is one task of one bundle, run by one
`agent-env run` per provider (local, and Docker under `@pytest.mark.docker`), and each trial's
failure class must be the one docs/failures.md gives for it: the same on both providers.

The faults are real: envs that crash at start or mid-call, tools that raise or stall, verifiers
that raise or return garbage, agents that call tools that do not exist or whose model hangs, a
gateway cut under a running task, a sandbox the provider cannot create. The fixture bundle is
tests/fixtures/fault-corpus (envs, verifier artifacts, fault steps registered by its
`launch.py`); the tasks are written here, next to the class each fault must get.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

CORPUS = Path(__file__).parent / "fixtures" / "fault-corpus"
LAUNCH = CORPUS / "launch.py"
#: Right classes out of all faults that must be reached on each provider (aim: all of them).
GOAL = 0.95


# ---- the faults --------------------------------------------------------------------------


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


def scripted(
    calls: list[dict[str, Any]],
    *,
    env: str = "tools",
    verifier: str = "v_ok",
    timeout: int = 60,
    turns: int = 1,
    prompts: int = 1,
) -> list[dict[str, Any]]:
    """deploy `env`, the scripted agent replaying `calls`, `prompts` prompts, then
    env_outcome_verifier `verifier`."""
    solution = {"turns": [{"tool_calls": calls, "response": "done"}] * turns}
    steps: list[dict[str, Any]] = [
        {"id": "env", "type": "deploy_env", "env_id": env},
        {
            "id": "agent",
            "type": "deploy_agent",
            "env_ids": [env],
            "a2a_agent_id": "scripted",
            "metadata": {"solution": solution},
        },
    ]
    for i in range(prompts):
        steps.append(
            {
                "id": f"ask{i}",
                "type": "prompt_agent",
                "prompt_id": f"ask{i}",
                "prompt": "Do the task.",
                "timeout_seconds": timeout,
            }
        )
    steps.append(
        {
            "id": "verify",
            "type": "env_outcome_verifier",
            "env_id": env,
            "file_artifact_id": verifier,
            "verifier_id": "outcome",
        }
    )
    return steps


def verifier_returns(artifact: str) -> list[dict[str, Any]]:
    return scripted([call("ok")], verifier=artifact)


def with_step(
    step: dict[str, Any],
    *,
    before_prompt: bool = False,
    at: int | None = None,
    verifier: str = "v_ok",
) -> list[dict[str, Any]]:
    """The passing task with one fault step added at the end (before the prompt, or at index
    `at`)."""
    steps = scripted([call("ok")], verifier=verifier)
    where = 2 if before_prompt else (len(steps) if at is None else at % len(steps))
    steps.insert(where, {"id": "fault", **step})
    return steps


def folder_agent(name: str) -> list[dict[str, Any]]:
    """The agent folder `name` of the corpus (an A2A agent started by its command)."""
    steps = scripted([call("ok")])
    steps[1] = {"id": "agent", "type": "deploy_agent", "env_ids": ["tools"], "a2a_agent_id": name}
    return steps


def model_agent(model: str, *, timeout: int = 60) -> list[dict[str, Any]]:
    """The tool-loop agent on the corpus's model server (`{model_url}`), asking `model`."""
    return [
        {"id": "env", "type": "deploy_env", "env_id": "tools"},
        {
            "id": "agent",
            "type": "deploy_agent",
            "env_ids": ["tools"],
            "a2a_agent_id": "tool-loop",
            "metadata": {"base_url": "{model_url}", "model": model},
        },
        {
            "id": "ask",
            "type": "prompt_agent",
            "prompt_id": "ask",
            "prompt": "Do the task.",
            "timeout_seconds": timeout,
        },
    ]


#: task name -> (expected failure class, None for a pass; its steps). The name says the fault.
FAULTS: dict[str, tuple[str | None, list[dict[str, Any]]]] = {
    # control: nothing injected
    "none": (None, scripted([call("ok"), call("echo", text="hi")])),
    # the env's doing
    "env-crashes-at-start": ("env", [{"id": "env", "type": "deploy_env", "env_id": "crash"}]),
    "env-cannot-import-at-start": (
        "env",
        [{"id": "env", "type": "deploy_env", "env_id": "broken-import"}],
    ),
    "env-tool-raises": ("env", scripted([call("ok"), call("boom")])),
    "env-tool-divides-by-zero": ("env", scripted([call("divide", a=1, b=0)])),
    "env-tool-returns-wrong-type": ("env", scripted([call("unfit")])),
    "env-exits-mid-episode": ("env", scripted([call("ok"), call("die")])),
    "env-tool-hangs": ("env", scripted([call("stall", seconds=60)], timeout=3)),
    "env-step-raises": ("env", with_step({"type": "f_raise"})),
    # the verifier's own error
    "verifier-raises": ("verifier_error", verifier_returns("v_raises")),
    "verifier-async-raises": ("verifier_error", verifier_returns("v_async_raises")),
    "verifier-returns-string": ("verifier_error", verifier_returns("v_string")),
    "verifier-returns-none": ("verifier_error", verifier_returns("v_none")),
    "verifier-result-not-bool": ("verifier_error", verifier_returns("v_result_not_bool")),
    "verifier-row-not-object": ("verifier_error", verifier_returns("v_row_not_object")),
    "verifier-row-without-id": ("verifier_error", verifier_returns("v_no_id")),
    "verifier-nan-score": ("verifier_error", verifier_returns("v_nan_score")),
    "verifier-infinite-weight": ("verifier_error", verifier_returns("v_inf_weight")),
    "verifier-text-score": ("verifier_error", verifier_returns("v_text_score")),
    "verifier-cannot-import": ("verifier_error", verifier_returns("v_import_error")),
    "verifier-without-verify": ("verifier_error", verifier_returns("v_no_verify")),
    "verifier-state-score-nan": (
        "verifier_error",
        with_step({"type": "f_set_score", "score": "nan", "verifier_id": "raw"}),
    ),
    "verifier-state-score-above-one": (
        "verifier_error",
        with_step({"type": "f_set_score", "score": "1.5", "verifier_id": "raw"}),
    ),
    "verifier-state-score-text": (
        "verifier_error",
        with_step({"type": "f_set_score", "score": "high", "raw": True, "verifier_id": "raw"}),
    ),
    "verifier-records-infinite-score": (
        "verifier_error",
        with_step({"type": "f_record_score", "score": "inf", "verifier_id": "rec"}),
    ),
    # what the agent did
    "agent-fails-the-task": ("verifier", verifier_returns("v_wrong")),
    "agent-calls-unknown-tool": ("agent", scripted([call("ok"), call("no_such_tool")])),
    "agent-calls-with-missing-argument": ("agent", scripted([call("echo")])),
    "agent-call-refused-by-env": ("agent", scripted([call("refuse")])),
    "agent-runs-out-of-turns": ("agent", scripted([call("ok")], prompts=2)),
    "agent-model-answers-garbage": ("agent", model_agent("garbage")),
    "agent-times-out": ("timeout", model_agent("silent", timeout=3)),
    "agent-crashes-at-start": ("agent", folder_agent("crasher")),
    "agent-blames-the-infrastructure": ("agent", folder_agent("blamer")),
    # infrastructure: between our own processes, or the machine
    "infra-env-port-never-opens": (
        "infrastructure",
        [{"id": "env", "type": "deploy_env", "env_id": "silent"}],
    ),
    "infra-gateway-cut-mid-trial": (
        "infrastructure",
        with_step({"type": "f_cut_gateway"}, before_prompt=True),
    ),
    "infra-gateway-cut-before-the-verifier": (
        "infrastructure",
        with_step(
            {"type": "f_cut_gateway"}, before_prompt=False, at=-1, verifier="v_calls_gateway"
        ),
    ),
    "infra-sandbox-create-fails": ("infrastructure", with_step({"type": "f_sandbox_create_fails"})),
}


# ---- the model server the tool-loop faults talk to ---------------------------------------


class ModelServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that misbehaves by model name: `garbage` answers 200 with
    text that is not a completion, `silent` never answers."""

    silent = threading.Event()  # set at teardown: the silent answers end

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if body.get("model") == "silent":
            self.silent.wait(120)
            return
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b"this is not a chat completion")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ModelServer)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    ModelServer.silent.set()
    server.shutdown()
    server.server_close()


# ---- running the corpus --------------------------------------------------------------------


def corpus_bundle(root: Path, model_url: str) -> Path:
    shutil.copytree(CORPUS / "envs", root / "envs")
    shutil.copytree(CORPUS / "artifacts", root / "artifacts")
    shutil.copytree(CORPUS / "agents", root / "agents")
    (root / "tasks").mkdir()
    for name, (_cls, steps) in FAULTS.items():
        text = json.dumps(steps, indent=1).replace("{model_url}", model_url)
        (root / "tasks" / f"{name}.json").write_text(text)
    return root


def run_corpus(tmp: Path, model_url: str, *args: str) -> dict[str, dict[str, Any]]:
    """task name -> its trial's row (`--json`), from one `agent-env run` of the corpus."""
    home = tmp / "home"
    bundle = corpus_bundle(tmp / "bundle", model_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "LITELLM_"))}
    env["AGENT_ENV_HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, str(LAUNCH), "run", str(bundle), "--json", "--concurrency", "6", *args],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=900,
    )
    try:
        data = json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}") from None
    assert done.returncode == data["exit_code"] == 1, done.stderr
    rows = {r["task"]["name"]: r for r in data["tasks"]}
    assert sorted(rows) == sorted(FAULTS), done.stderr
    return {"rows": rows, "results": data["results"]}  # type: ignore[dict-item]


def check_corpus(outcome: dict[str, Any]) -> None:
    """Every fault's class is the expected one (>= GOAL right, and the wrong ones named);
    verifier errors and infrastructure failures are left out of the statistics."""
    rows = outcome["rows"]
    wrong = {
        name: (expected, rows[name].get("failure_class"), rows[name].get("outcome"))
        for name, (expected, _steps) in FAULTS.items()
        if rows[name].get("failure_class") != expected
    }
    right = 1 - len(wrong) / len(FAULTS)
    print(f"fault corpus: {len(FAULTS) - len(wrong)}/{len(FAULTS)} classed right ({right:.0%})")
    assert not wrong, "\n".join(f"{n}: want {w}, got {g}: {o}" for n, (w, g, o) in wrong.items())
    assert right >= GOAL
    tasks = {t["name"]: t for t in outcome["results"]["tasks"]}
    for name, (expected, _steps) in FAULTS.items():
        excluded = tasks[name]["excluded"]
        if expected in ("verifier_error", "infrastructure"):
            assert excluded == {expected: 1} and tasks[name]["trials"] == 0, tasks[name]
        else:
            assert excluded == {} and tasks[name]["trials"] == 1, tasks[name]


def test_fault_count_covers_every_class():
    classes = [cls for cls, _steps in FAULTS.values() if cls is not None]
    assert len(classes) >= 30
    assert set(classes) == {
        "env",
        "verifier_error",
        "verifier",
        "agent",
        "timeout",
        "infrastructure",
    }


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_corpus_on_the_local_provider(tmp_path, model_url):
    check_corpus(run_corpus(tmp_path, model_url, "--sandbox", "local"))


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_corpus_on_docker(tmp_path, model_url):
    from agentenv_docker_sandbox.testing import require_docker

    require_docker("python:3.11-slim")
    check_corpus(run_corpus(tmp_path, model_url, "--sandbox", "docker"))
