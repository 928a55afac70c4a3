"""`agent-env run` options as the existing `agent-env` defines them, through the real CLI:
eval selection, `PACKAGE/NAME`, `--sandbox` (it wins over a step's `sandbox_type`; `a,b`
fallback chains), `--judge-model` and `--user-model`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import agent_env, notes_bundle, run_json  # noqa: E402

from agentenv_protocol.agent.testing import ScriptedModelServer  # noqa: E402


def hello_steps(expected: str = "hello", sandbox_type: str | None = "local") -> list[dict]:
    """The existing product's `hello` task (a sandbox, a file in it, a check of the file)."""
    box = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
    if sandbox_type:
        box["sandbox_type"] = sandbox_type
    return [
        box,
        {
            "id": "load",
            "type": "load_artifact",
            "sandbox_name": "box",
            "artifact_id": "greeting",
            "destination_path": "/app/greeting",
        },
        {
            "id": "hello",
            "type": "verify_sandbox",
            "sandbox_name": "box",
            "base_dir": "/app/greeting",
            "verifier_id": "hello",
            "criteria": [
                {
                    "type": "probe_file_contains",
                    "criterion": "greets",
                    "paths": ["hello.txt"],
                    "expected": expected,
                }
            ],
        },
    ]


def bundle(root: Path, tasks: dict[str, list], evals: dict[str, list[str]] | None = None) -> Path:
    (root / "artifacts" / "greeting").mkdir(parents=True)
    (root / "artifacts" / "greeting" / "hello.txt").write_text("hello\n")
    (root / "tasks").mkdir()
    for name, steps in tasks.items():
        (root / "tasks" / f"{name}.json").write_text(json.dumps(steps))
    if evals:
        (root / "evals").mkdir()
        for name, names in evals.items():
            (root / "evals" / f"{name}.toml").write_text(f"tasks = {json.dumps(names)}\n")
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def eval_bundle(tmp_path: Path) -> Path:
    return bundle(
        tmp_path / "b",
        {"hello": hello_steps(), "other": hello_steps(expected="bye")},
        {"smoke": ["hello"]},
    )


def test_with_evals_and_no_selection_only_the_evals_tasks_run(home, eval_bundle):
    done = agent_env(home, "run", str(eval_bundle))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hello  passed (hello: 1)" in done.stdout
    assert "other" not in done.stdout
    assert "eval smoke: 1 of 1 passed" in done.stdout
    assert (
        "tasks/other.json is not named by any eval, so it did not run; run it with --task other"
        in done.stderr
    )
    done = agent_env(home, "run", str(eval_bundle), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["not_run"] == ["other"]
    # --task selects it (and nothing is said about the others)
    done = agent_env(home, "run", str(eval_bundle), "--task", "other")
    assert done.returncode == 1
    assert "other  scored below 1" in done.stdout and "is not named" not in done.stderr
    done = agent_env(home, "run", str(eval_bundle), "--dry-run")
    assert done.returncode == 0
    assert "would run task hello" in done.stdout and "would run task other" not in done.stdout
    assert "tasks/other.json is not named by any eval, so it would not run" in done.stderr


def test_without_evals_every_task_runs(home, tmp_path):
    root = bundle(tmp_path / "b", {"a": hello_steps(), "b": hello_steps(expected="bye")})
    done = agent_env(home, "run", str(root))
    assert done.returncode == 1
    assert "a  passed" in done.stdout and "b  scored below 1" in done.stdout


def test_package_slash_name_runs_an_installed_bundle(home):
    for spec in ("agentenv-framework/hello", "agentenv-kernel/hello"):
        done = agent_env(home, "run", spec)
        assert done.returncode == 0, done.stderr
        assert "passed" in done.stdout
    done = agent_env(home, "run", "other-dist/hello")
    assert done.returncode == 2
    assert "'other-dist/hello' is neither a folder nor an installed bundle" in done.stderr
    assert "agentenv-kernel/hello" in done.stderr


@pytest.mark.docker
def test_sandbox_wins_over_the_steps_own_sandbox_type(home, eval_bundle):
    pytest.importorskip("docker")
    from agentenv_docker_sandbox.testing import require_docker

    require_docker()
    done = agent_env(home, "run", str(eval_bundle), "--sandbox", "docker")
    assert done.returncode == 0, done.stderr
    assert (
        "--sandbox docker: applies to 1 step(s) that choose a sandbox in 1 task(s)" in done.stderr
    )
    assert "sandbox 'box': docker " in done.stderr


def test_a_fallback_chain_goes_on_when_a_provider_cannot_create(home, eval_bundle):
    done = agent_env(
        home,
        "run",
        str(eval_bundle),
        "--sandbox",
        "docker,local",
        env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
    )
    assert done.returncode == 0, done.stderr
    assert "sandbox 'box' created on local: docker refused it" in done.stderr
    assert "sandbox 'box': local " in done.stderr


@pytest.mark.parametrize(
    ("chain", "message"),
    [
        ("locl,docker", "unknown sandbox provider 'locl' (did you mean 'local'?)"),
        ("local,", "expected a provider name or a comma-separated fallback chain"),
    ],
)
def test_a_bad_chain_is_a_usage_error_before_anything_runs(home, eval_bundle, chain, message):
    done = agent_env(home, "run", str(eval_bundle), "--sandbox", chain)
    assert done.returncode == 2
    assert message in done.stderr and "--sandbox" in done.stderr
    assert not (home / "sandboxes").exists() or not list((home / "sandboxes").iterdir())


def test_judge_model_replaces_every_judges_model(tmp_path):
    steps = [
        {"id": "agent", "type": "deploy_agent"},
        {"id": "ask", "type": "prompt_agent", "prompt_id": "ask", "prompt": "Say thanks"},
        {
            "id": "judge",
            "type": "rubrics_verifier",
            "prompt_id": "ask",
            "verifier_id": "rubric",
            "default_model": "judge-as-written",
            "criteria": [{"id": "polite", "criterion": "The answer thanks the user"}],
        },
    ]
    root = notes_bundle(tmp_path, {"t": steps})
    grading = {"criteria": [{"id": "polite", "score": 1, "justification": "It thanks."}]}
    script = [{"content": "Thank you!"}, {"content": json.dumps(grading)}]
    with ScriptedModelServer(script) as model:
        data, stderr = run_json(
            tmp_path / "home",
            str(root),
            "--judge-model",
            "judge-from-cli",
            "--user-model",
            "user-from-cli",
            env={"LITELLM_BASE_URL": model.base_url},
        )
    assert model.requests[1]["model"] == "judge-from-cli"
    [record] = data["tasks"]
    assert record["verifiers"]["rubric"]["results"][0]["judge_model"] == "judge-from-cli"
    assert "--judge-model judge-from-cli: applies to 1 judge(s)" in stderr
    assert "--user-model user-from-cli: set on 1 simulated user(s)" in stderr
    assert "no simulated user" in stderr
    # the stored task is as written
    assert "judge-as-written" in (root / "tasks" / "t.json").read_text()


def test_judge_model_without_a_judge_says_it_changes_nothing(home, eval_bundle):
    done = agent_env(home, "run", str(eval_bundle), "--judge-model", "m", "--dry-run")
    assert done.returncode == 0
    assert "--judge-model m: no selected task has judges" in done.stderr
