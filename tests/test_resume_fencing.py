"""Resume fencing with real processes: a step SIGKILLed mid-run completes exactly once after
`--resume` (the dead run's copy is ended before the step runs again), with the watchdog on and
off; and 300 hello trials SIGKILLed and resumed give 300 passes, five times in a row, with no
trial tearing down a sandbox a sibling trial was about to adopt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_run_cli import alive, nothing_left, stored, write_bundle  # noqa: E402
from test_run_resume import LAUNCH, wait_for  # noqa: E402

COUNTER = """\
import os
import time


def run(input):
    path = os.environ["COUNT_FILE"]
    with open(path, "a") as f:
        f.write(f"start {os.getpid()}\\n")
    time.sleep(float(input["args"]["seconds"]))
    with open(path, "a") as f:
        f.write(f"done {os.getpid()}\\n")
    return {"done": True}
"""
SECONDS = 3.0


def cli_env(home: Path, watchdog: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    # the step reports to the test through a host file named in the host's environment,
    # which an isolated sandbox neither sees nor reaches: these runs are unisolated
    env["AGENT_ENV_SANDBOX_LOCAL_BWRAP"] = ""
    return {**env, "AGENT_ENV_HOME": str(home), "AGENT_ENV_WATCHDOG": watchdog, **extra}


def agent_env(env: dict, cwd: Path, *args: str, timeout: float = 120):
    return subprocess.run(
        [sys.executable, str(LAUNCH), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def counting_bundle(root: Path) -> Path:
    bundle = write_bundle(
        root,
        {
            "count": [
                {
                    "id": "box",
                    "type": "deploy_sandbox",
                    "sandbox_name": "box",
                    "sandbox_mode": "vm",
                },
                {
                    "id": "count",
                    "type": "run_code",
                    "sandbox_name": "box",
                    "script_artifact_id": "counter",
                    "args": {"seconds": SECONDS},
                    "result_id": "count",
                },
            ]
        },
    )
    (bundle / "artifacts" / "counter").mkdir(parents=True)
    (bundle / "artifacts" / "counter" / "counter.py").write_text(COUNTER)
    return bundle


def events(path: Path) -> list[tuple[str, int]]:
    if not path.exists():
        return []
    return [(w, int(p)) for w, p in (ln.split() for ln in path.read_text().splitlines())]


@pytest.mark.parametrize(
    ("watchdog", "target"), [("0", "instance"), ("0", "run"), ("1", "instance")]
)
def test_a_step_killed_mid_run_completes_exactly_once_after_resume(tmp_path, watchdog, target):
    """The step appends `start`, sleeps, appends `done`. The controller is SIGKILLed while the
    step sleeps; after `--resume` (and long enough for an unfenced copy to have finished) the
    step completed once, by the resume's copy. Watchdog off: the resume adopted the sandbox and
    fenced the dead run's copy; on: the watchdog tore the sandbox (and the copy) down and the
    resume re-ran from the step that created it."""
    home, count = tmp_path / "home", tmp_path / "count.txt"
    env = cli_env(home, watchdog, COUNT_FILE=str(count))
    bundle = counting_bundle(tmp_path / "bundle")
    proc = subprocess.Popen(
        [sys.executable, str(LAUNCH), "run", str(bundle)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(lambda: events(count) or proc.poll() is not None, 60)
    proc.kill()
    proc.wait(timeout=10)
    [(_, killed_copy)] = events(count)
    if watchdog == "0":
        assert alive(killed_copy), "without a watchdog the dead run's copy keeps running"
    [record] = stored(home, "task_instances")
    [run] = stored(home, "runs")
    resume_id = record["id"] if target == "instance" else run["id"]
    done = agent_env(env, tmp_path, "run", "--resume", resume_id)
    assert done.returncode == 0, done.stderr
    time.sleep(SECONDS + 1.0)  # an unfenced copy would have written its `done` by now
    seen = events(count)
    assert [w for w, _ in seen] == ["start", "start", "done"], seen
    assert seen[2][1] == seen[1][1] != killed_copy  # the resume's copy completed, alone
    assert not alive(killed_copy)
    [final] = stored(home, "task_instances")
    assert final["status"] in ("passed", "completed", "unscored") or final["outcome"], final
    assert final["steps"]["count"]["status"] == "completed"
    log = "\n".join(final["log"])
    if watchdog == "0":
        assert "fenced sandbox 'box': ended" in log, log
        assert "is gone" not in log, log  # adopted, not re-created
    else:
        assert "sandbox 'box' is gone" in log, log
    assert run["id"] == final["run_id"]
    nothing_left(home)


LOOPS = 5
TRIALS = 300


def test_300_hello_trials_sigkilled_and_resumed_pass_300_five_times(tmp_path):
    """Each round: 300 hello trials, SIGKILL once some have passed (others hold sandboxes),
    `--resume RUN_ID --json`: 300 trials, 300 passed. Rounds alternate the watchdog off and on.
    With it off, every trial whose sandbox the dead run left intact adopts it (no sibling's
    reconnect tore it down: the bug this guards against) and nothing is left afterwards."""
    for round_ in range(LOOPS):
        watchdog = "0" if round_ % 2 == 0 else "1"
        home = tmp_path / f"home{round_}"
        env = cli_env(home, watchdog, AGENT_ENV_RUN_PROGRESS_INTERVAL="3600")
        proc = subprocess.Popen(
            [sys.executable, str(LAUNCH), "run", "hello", "--trials", str(TRIALS)],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        wait_for(lambda p=proc, h=home, n=20 + 15 * round_: _passed(p, h, n), 120)
        proc.kill()
        proc.wait(timeout=10)
        assert proc.returncode == -9, f"round {round_}: the run ended before the kill"
        intact = _intact_leftovers(home) if watchdog == "0" else {}
        [run] = stored(home, "runs")
        done = agent_env(env, tmp_path, "run", "--resume", run["id"], "--json", timeout=300)
        assert done.returncode == 0, (round_, done.stderr[-3000:])
        [task] = json.loads(done.stdout)["results"]["tasks"]
        assert (task["trials"], task["passed"]) == (TRIALS, TRIALS), (round_, task)
        records = stored(home, "task_instances")
        assert sorted(r["trial"] for r in records) == list(range(TRIALS))
        assert {r["status"] for r in records} == {"passed"}
        by_id = {r["id"]: r for r in records}
        for instance_id in intact:
            log = "\n".join(by_id[instance_id]["log"])
            assert "is gone" not in log, (round_, instance_id, log)
        if watchdog == "0":
            assert intact, f"round {round_}: no trial held a sandbox at the kill"
        left = sorted(p.name for p in (home / "sandboxes").iterdir() if not p.name.startswith("."))
        leased = sorted(p.name for p in (home / "leases").iterdir())
        assert not left and not leased, (round_, watchdog, left, leased, done.stderr[-2000:])


def _passed(proc: subprocess.Popen, home: Path, at_least: int) -> bool:
    """The run ended, or at least `at_least` of its trials passed."""
    if proc.poll() is not None:
        return True
    try:
        docs = stored(home, "task_instances")
    except Exception:  # noqa: BLE001 - the store is being created
        return False
    return sum(d["status"] == "passed" for d in docs) >= at_least


def _intact_leftovers(home: Path) -> dict[str, str]:
    """task instance id -> sandbox id, for each sandbox the dead run leased that is whole (its
    state file and work folder both exist): a resume must adopt each of them."""
    found = {}
    for path in (home / "leases").glob("*.json"):
        lease = json.loads(path.read_text())
        folder = Path((lease.get("describe") or {}).get("folder") or "/nonexistent")
        meta = folder.with_name(folder.name + ".meta")
        if folder.is_dir() and (meta / "state.json").exists() and lease.get("task_instance_id"):
            found[lease["task_instance_id"]] = lease["sandbox_id"]
    return found


CONTROLLER = """
import json, sys
from pathlib import Path

import anyio

from agent_env.plugins import get_plugin_manager
from agent_env.sandbox import SandboxSpec
from agent_env.sandboxes.manager import SandboxManager


async def main():
    manager = SandboxManager(get_plugin_manager(), None, Path(sys.argv[1]))
    image = sys.argv[3] or None
    box = await manager.create("box", SandboxSpec(image=image), provider=sys.argv[2])
    print(json.dumps(box.describe()), flush=True)
    await box.exec("echo start >> /app/count; sleep 4; echo done >> /app/count")


anyio.run(main)
"""


@pytest.mark.parametrize("provider", ["local", "docker"])
def test_fence_ends_the_commands_a_dead_controller_left_running(tmp_path, provider):
    """A controller process runs a command in a sandbox and is SIGKILLed mid-command (no
    watchdog); whoever adopts the sandbox calls `fence()`, which ends the command (a local
    process group, or a `docker exec` inside the container) before it could finish."""
    import anyio

    from agent_env.plugins import get_plugin_manager
    from agent_env.sandboxes.manager import SandboxManager

    image = ""
    if provider == "docker":
        from agentenv_docker_sandbox.testing import BASE_IMAGE, require_docker

        require_docker(BASE_IMAGE)
        image = BASE_IMAGE
    home = tmp_path / "home"
    script = tmp_path / "controller.py"
    script.write_text(CONTROLLER)
    env = cli_env(home, "0")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(home), provider, image],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    described = json.loads(proc.stdout.readline())
    manager = SandboxManager(get_plugin_manager(), None, home)

    async def adopt():
        return await manager.connect({"provider": provider, "describe": described})

    box = anyio.run(adopt)

    async def read() -> str:
        try:
            return (await box.read_file("/app/count")).decode()
        except FileNotFoundError:
            return ""

    wait_for(lambda: anyio.run(read) == "start\n", 60)
    proc.kill()
    proc.wait(timeout=10)
    try:
        ended = anyio.run(box.fence)
        assert any("sleep 4" in line for line in ended), ended
        time.sleep(5)  # the command would have written `done` by now
        assert anyio.run(read) == "start\n"
        assert anyio.run(box.fence) == []  # nothing left to end
    finally:
        anyio.run(manager.teardown, box)
    nothing_left(home)
