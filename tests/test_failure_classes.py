"""Failure classes produced for real: a trial that fails because the Docker daemon cannot be
reached, because its sandbox vanished mid-run (a local sandbox's command killed or its folder
removed, a Docker container removed) or because an env's port never opened is
`infrastructure` (not `env`, not the verifier's), is excluded from the pass rate and is re-run
by `--retry-infra`. The command runs as a user runs it: the installed `agent-env` in a
subprocess."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def agent_env(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("agent-env")
    return subprocess.run(
        [str(exe), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "AGENT_ENV_HOME": str(home), **env},
    )


def test_docker_daemon_down_is_infrastructure_excluded_and_retried(tmp_path):
    down = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    args = ("run", "hello", "--sandbox", "docker", "--trials", "2")
    result = agent_env(tmp_path / "home", *args, "--retry-infra", "1", "--json", **down)
    assert result.returncode == 1, result.stderr
    assert "cannot reach the Docker daemon" in result.stderr
    data = json.loads(result.stdout)
    [task] = data["results"]["tasks"]
    assert task["trials"] == 0 and task["passed"] == 0
    assert task["excluded"] == {"infrastructure": 2}
    # each trial ran twice: the first attempt and one --retry-infra re-run
    assert sorted(r["id"][-3:] for r in data["tasks"]) == ["-r1", "-r1"]
    assert {r["failure_class"] for r in data["tasks"]} == {"infrastructure"}

    plain = agent_env(tmp_path / "home", *args, **down)
    assert plain.returncode == 1
    assert "not passed: hello: infrastructure 2 (excluded)" in plain.stdout
    assert "env 2" not in plain.stdout


# -- a sandbox that vanishes mid-run, an env whose port never opens -------------------------

HELLO = Path(__file__).resolve().parents[1] / "kernel/src/agent_env/hello_bundle/hello"


def slow_hello(root: Path, seconds: int = 5) -> Path:
    """The hello bundle whose verifier first sleeps `seconds` in the sandbox: the window in
    which the test makes the sandbox vanish."""
    shutil.copytree(HELLO, root)
    task = root / "tasks" / "hello.json"
    steps = json.loads(task.read_text())
    steps[2]["criteria"][1]["bash_cmd"] = f"sleep {seconds}; grep -q '^Hello' greeting.txt"
    task.write_text(json.dumps(steps))
    return root


def start(home: Path, *args: str) -> subprocess.Popen[str]:
    exe = Path(sys.executable).with_name("agent-env")
    return subprocess.Popen(
        [str(exe), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AGENT_ENV_HOME": str(home)},
    )


def wait_for(find, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = find()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def sleeping_in(folder: Path) -> list[int]:
    """Pids of `sleep` processes whose working folder is under `folder` (the sandbox's)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if comm == "sleep" and cwd.startswith(str(folder) + "/"):
            pids.append(int(entry.name))
    return pids


def attempts(home: Path, run_id: str) -> list[dict]:
    """Every attempt of every trial of `run_id`, as `runs export --attempts` writes them."""
    done = agent_env(home, "runs", "export", run_id, "--attempts")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def finish_retried_run(home: Path, run: subprocess.Popen[str]) -> dict:
    """The `--json` summary of a run whose first attempt lost its sandbox: the attempt is
    `infrastructure` with the reason, `--retry-infra 1` ran it again and the retry passed."""
    out, err = run.communicate(timeout=180)
    assert run.returncode == 0, err
    data = json.loads(out)
    [task] = data["results"]["tasks"]
    assert (task["trials"], task["passed"]) == (1, 1)  # only the retry counts
    rows = attempts(home, data["run_id"])
    assert [r["failure_class"] for r in rows] == ["infrastructure", None]
    assert "vanished" in rows[0]["outcome"], rows[0]
    return rows[0]


@pytest.mark.parametrize("how", ["process group killed", "folder removed"])
def test_a_local_sandbox_that_vanishes_mid_run_is_infrastructure_and_retried(tmp_path, how):
    home = tmp_path / "home"
    bundle = slow_hello(tmp_path / "b")
    run = start(home, "run", str(bundle), "--retry-infra", "1", "--json")
    sandboxes = home / "sandboxes"
    pids = wait_for(lambda: sleeping_in(sandboxes), "the verifier's sleep in the sandbox")
    if how == "process group killed":
        os.killpg(os.getpgid(pids[0]), signal.SIGKILL)
        why = "was killed (SIGKILL) from outside"
    else:
        cwd = Path(os.readlink(f"/proc/{pids[0]}/cwd"))
        shutil.rmtree(sandboxes / cwd.relative_to(sandboxes).parts[0])  # the sandbox's folder
        why = "is gone"
    first = finish_retried_run(home, run)
    assert why in first["outcome"]
    assert "failed at step 'verify': sandbox 'hello'" in first["outcome"]


@pytest.mark.docker
def test_a_docker_container_removed_mid_run_is_infrastructure_and_retried(tmp_path):
    from agentenv_docker_sandbox.testing import require_docker

    require_docker()
    home = tmp_path / "home"
    bundle = slow_hello(tmp_path / "b")
    run = start(home, "run", str(bundle), "--sandbox", "docker", "--retry-infra", "1", "--json")

    def ours() -> list[str]:
        listed = subprocess.run(
            [
                "docker",
                "ps",
                "--filter",
                "label=io.agentenv.managed",
                "--format",
                '{{.ID}} {{.Label "io.agentenv.lease"}}',
            ],
            capture_output=True,
            text=True,
        ).stdout.split("\n")
        return [
            line.split()[0]
            for line in listed
            if len(line.split()) == 2 and line.split()[1].startswith(f"{home}/")
        ]

    [container] = wait_for(ours, "the trial's container")
    time.sleep(1.5)  # into the verifier's sleep
    removed = subprocess.run(["docker", "rm", "-f", container], capture_output=True, text=True)
    assert removed.returncode == 0, removed.stderr
    first = finish_retried_run(home, run)
    assert f"its container {container[:12]}" in first["outcome"]


def test_an_env_whose_port_never_opens_is_infrastructure_and_retried(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from envs_helpers import env_bundle

    home = tmp_path / "home"
    bundle = env_bundle(
        tmp_path / "b",
        'command = "python server.py"\nstartup_timeout_seconds = 1\n',
        server="import time\nprint('listening soon', flush=True)\ntime.sleep(120)\n",
    )
    done = agent_env(home, "run", str(bundle), "--sandbox", "local", "--retry-infra", "1", "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    [task] = data["results"]["tasks"]
    assert task["trials"] == 0 and task["excluded"] == {"infrastructure": 1}
    rows = attempts(home, data["run_id"])
    assert [r["failure_class"] for r in rows] == ["infrastructure", "infrastructure"]
    assert all("did not answer within 1s" in r["outcome"] for r in rows)

    # an env whose process exits is the env's own failure: counted, and not retried
    crashed = env_bundle(
        tmp_path / "c",
        'command = "python server.py"\n',
        server="import sys\nsys.exit(3)\n",
    )
    done = agent_env(
        home, "run", str(crashed), "--sandbox", "local", "--retry-infra", "1", "--json"
    )
    data = json.loads(done.stdout)
    rows = attempts(home, data["run_id"])
    assert [r["failure_class"] for r in rows] == ["env"]
    assert "exited with code 3" in rows[0]["outcome"]


# -- the rule itself, on bad input: garbage scores, classes a step or an agent cannot give ---


@pytest.mark.parametrize(
    ("score", "garbage"),
    [
        (1, False),
        (0.0, False),
        (0.5, False),
        (None, False),  # no score is unscored, not garbage
        (float("nan"), True),
        (float("inf"), True),
        (-1e-9, True),
        (1.0000001, True),
        (True, True),  # a bool is not a score, though Python counts it an int
        ("1", True),
        ([1], True),
    ],
)
def test_a_score_that_is_not_a_finite_number_in_0_1_is_garbage(score, garbage):
    from agent_env.engine.outcome import decide, garbage_failure, score_problem

    assert (score_problem(score) is not None) is garbage
    state = {"verifiers": {"v": {"results": [], "score": score}}}
    failure = garbage_failure(state)
    assert (failure is not None) is garbage
    if garbage:
        assert failure["class"] == "verifier_error" and "verifier 'v'" in failure["message"]
        # a garbage score decides nothing: it is never counted as a pass
        assert decide([], state, failure=None, cancelled=False)[2] == {}


@pytest.mark.parametrize(
    ("rows", "why"),
    [
        ([{"id": "a", "result": True, "score": float("nan")}], "score nan"),
        ([{"id": "a", "result": True, "weight": float("-inf")}], "weight -inf"),
        ([{"id": "a", "result": True, "score": "0.9"}], "score '0.9'"),
        ([{"id": "a", "result": True, "weight": False}], "weight False"),
        (["a"], "row 0 is a str"),
    ],
)
def test_garbage_result_rows_are_named(rows, why):
    from agent_env.engine.outcome import rows_problem

    assert why in (rows_problem(rows) or "")
    assert rows_problem([{"id": "a", "result": True, "score": 0.25, "weight": 2}]) is None


def test_unclassed_errors_are_the_env_s_in_a_task_step_and_the_verifier_s_in_a_verifier():
    from agent_env.engine.outcome import EXCLUDED_CLASSES, FAILURE_CLASSES, step_failure_class

    assert step_failure_class(None) == "env"
    assert step_failure_class("error") == "env"
    assert step_failure_class(None, verifier=True) == "verifier_error"
    assert step_failure_class("something-new", verifier=True) == "verifier_error"
    # a class the step names stands, in a verifier too
    assert step_failure_class("env", verifier=True) == "env"
    assert step_failure_class("infrastructure", verifier=True) == "infrastructure"
    assert step_failure_class("verifier") == "verifier_error"
    assert set(EXCLUDED_CLASSES) == {"infrastructure", "verifier_error", "cancelled"}
    assert set(EXCLUDED_CLASSES) <= set(FAILURE_CLASSES)


def test_verifier_errors_are_excluded_from_pass_rates_and_not_retried():
    from agent_env.engine.records import TaskInstanceRecord, TaskRef
    from agent_env.reporting.results import Results

    def record(status, cls, failure=None):
        return TaskInstanceRecord(
            id=f"ti-{status}-{cls}",
            run_id="run-x",
            task=TaskRef(name="t"),
            status=status,
            failure=failure or ({"class": cls, "message": "m"} if cls else None),
            failure_class=cls,
            scores={"v": 1.0} if status == "passed" else {},
        )

    results = Results(["t"])
    for r in (
        record("passed", None),
        record("failed", "verifier_error"),
        record("failed", "infrastructure"),
        record("failed", "agent"),
    ):
        results.add(r)
    [task] = results.summary()["tasks"]
    assert (task["trials"], task["passed"]) == (2, 1)
    assert task["excluded"] == {"infrastructure": 1, "verifier_error": 1}
    assert not record("failed", "verifier_error").retryable()
    assert record("failed", "infrastructure").retryable()
    once = {"class": "infrastructure", "message": "m", "retry": False}
    assert not record("failed", "infrastructure", once).retryable()


def test_an_a2a_agent_cannot_blame_anyone_else_for_its_failure():
    from agentenv_core_steps.agents.a2a import reported_failure
    from agentenv_core_steps.steps.prompt_agent import blame

    for cls in ("infrastructure", "env", "verifier_error", "cancelled"):
        got, message = reported_failure({"class": cls, "message": "not me"}, ours=False)
        assert got == "agent" and "not me" in message and repr(cls) in message
        assert reported_failure({"class": cls, "message": "m"}, ours=True)[0] == cls
    assert reported_failure({"class": "timeout", "message": "m"}, ours=False)[0] == "timeout"
    # the gateway's call log (which the agent cannot write) is what shifts the blame
    calls = [
        {"tool": "ok", "env": "e", "error": None},
        {"tool": "boom", "env": "e", "error": "tool 'boom' failed", "fault": "env"},
    ]
    cls, message = blame(("agent", "solution tool call failed"), calls)
    assert cls == "env" and "tool 'boom' of env 'e'" in message
    assert blame(("agent", "x"), [{"tool": "t", "error": "refused", "fault": "agent"}]) == (
        "agent",
        "x",
    )
    assert blame(("infrastructure", "model down"), calls)[0] == "infrastructure"


def test_an_env_cannot_mark_its_answer_as_the_infrastructure_s_fault():
    from agentenv_protocol.errors import FAULT_META_KEY
    from agentenv_protocol.gateway.errors import call_fault, marked_fault

    failed = {"content": [{"type": "text", "text": "x"}], "isError": True}
    for mark, believed in (("env", "env"), ("agent", "agent"), ("infrastructure", None)):
        marked = {**failed, "_meta": {FAULT_META_KEY: mark}}
        assert marked_fault(marked) == believed
        assert call_fault(failed, marked_fault(marked)) == (believed or "agent")
    assert call_fault({"content": [], "isError": False}, "env") is None


def test_an_agent_that_gave_up_on_a_call_the_env_never_answered_failed_because_of_the_env():
    from agentenv_core_steps.steps.prompt_agent import blame

    waited = [{"role": "a", "tool": "stall", "env": "e", "started": 0.0}]
    for cls in ("agent", "timeout", "infrastructure"):
        got, message = blame((cls, "ReadTimeout from the gateway"), [], waited)
        assert got == "env" and "tool 'stall' of env 'e' had not answered" in message
    assert blame(("infrastructure", "model down"), [], []) == ("infrastructure", "model down")


def test_a_failed_exchange_with_the_gateway_is_classed_by_its_cause():
    import httpx

    from agentenv_core_steps.faults import gateway_failure_class
    from agentenv_protocol.errors import EnvUnavailable, HandlerFailed

    def wrapped(cause: BaseException) -> EnvUnavailable:
        try:
            raise EnvUnavailable("the gateway failed") from cause
        except EnvUnavailable as e:
            return e

    assert gateway_failure_class(wrapped(httpx.ConnectError("refused"))) == "infrastructure"
    assert gateway_failure_class(wrapped(httpx.ConnectTimeout("slow"))) == "infrastructure"
    assert gateway_failure_class(wrapped(httpx.ReadTimeout("no answer"))) == "env"
    assert gateway_failure_class(EnvUnavailable("no cause")) == "infrastructure"
    group = ExceptionGroup("tg", [ValueError("x"), ConnectionResetError("reset")])
    assert gateway_failure_class(group) == "infrastructure"
    # an answer (even an error) is no transport failure; a verifier's own bug neither
    assert gateway_failure_class(HandlerFailed("boom")) is None
    assert gateway_failure_class(KeyError("x")) is None
