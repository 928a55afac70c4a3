"""The registry from the CLI (issue 20): put a task and its artifact, list and show them, run
the task by id, export it with `bundle init`, run the folder, and find one lineage from the
stored task version to both runs. Real `agent-env` processes on a private home and SQLite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_env.bundles.source import folder_id_prefix

AGENT_ENV = Path(sys.executable).with_name("agent-env")
ROOT = Path(__file__).resolve().parents[1]
HELLO = ROOT / "kernel" / "src" / "agent_env" / "hello_bundle" / "hello"
ACME_SRC = ROOT / "tests" / "fixtures" / "thirdparty-plugin" / "src"


@pytest.fixture
def cli(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env["AGENT_ENV_HOME"] = str(tmp_path / "home")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(AGENT_ENV), *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def test_put_list_show_run_export_and_one_lineage(cli, tmp_path):
    bundle = tmp_path / "lab"
    shutil.copytree(HELLO, bundle)
    put = cli("task", "put", str(bundle / "tasks" / "hello.json"))
    assert put.returncode == 0, put.stderr
    assert "task hello: v1 (new)" in put.stdout and "artifact greeting: v1 (new)" in put.stdout
    again = cli("task", "put", str(bundle))
    assert "task hello: v1, unchanged" in again.stdout

    tasks = json.loads(cli("task", "list", "--json").stdout)
    task_id = f"@local/{bundle.as_posix().lstrip('/')}/hello"
    assert [r["id"] for r in tasks["rows"]] == [task_id] and tasks["total"] == 1
    (artifact,) = json.loads(cli("artifact", "list", "--json", "--type", "file").stdout)["rows"]
    assert artifact["name"] == "greeting" and artifact["version"] == 1
    shown = json.loads(cli("task", "show", "hello", "--json").stdout)
    assert shown["digest"].startswith("sha256:") and shown["runs"] == []

    by_id = cli("task", "run", "--id", task_id, "--json")
    assert by_id.returncode == 0, by_id.stderr
    (record,) = json.loads(by_id.stdout)["tasks"]
    assert record["status"] == "passed"

    out = tmp_path / "exported"
    init = cli("bundle", "init", str(out), "--from-task", task_id)
    assert init.returncode == 0, init.stderr
    assert (out / "artifacts" / "greeting" / "greeting.txt").read_bytes() == (
        HELLO / "artifacts" / "greeting" / "greeting.txt"
    ).read_bytes()
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["from"] == {"task": task_id, "version": 1}
    folder_run = cli("run", str(out), "--json")
    assert folder_run.returncode == 0, folder_run.stderr

    shown = json.loads(cli("task", "show", task_id, "--version", "1", "--json").stdout)
    runs = {r["run_id"]: r["id"] for r in shown["runs"]}
    assert len(runs) == 2
    assert sorted(runs.values()) == sorted([task_id, f"@local/{out.as_posix().lstrip('/')}/hello"])

    again = cli("bundle", "init", str(out), "--from-task", task_id)
    assert again.returncode == 1 and "not empty" in again.stderr


def test_bad_input_is_named_and_changes_nothing(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": "x", "type": "verify_sandbx", "sandbox_name": "s"}]')
    made = cli("task", "create", str(bad), "--id", "@local/lab/bad")
    assert made.returncode == 1
    assert "unknown step type 'verify_sandbx'" in made.stderr and "verify_sandbox" in made.stderr
    assert json.loads(cli("task", "list", "--json").stdout)["total"] == 0
    missing = cli("task", "show", "helo")
    assert missing.returncode == 1 and "no task 'helo'" in missing.stderr
    nothing = cli("bundle", "init", str(tmp_path / "out"), "--from-task", "nope")
    assert nothing.returncode == 1 and not (tmp_path / "out").exists()
    assert (
        cli("config", "explain", "run.concurency")
        .stderr.strip()
        .endswith("(did you mean 'run.concurrency'?)")
    )


def test_config_explain_shows_each_layer(cli, tmp_path):
    (tmp_path / ".agentenv").mkdir()
    (tmp_path / ".agentenv" / "config.toml").write_text("[run]\nconcurrency = 4\n")
    shown = json.loads(cli("config", "explain", "run.concurrency", "--json").stdout)
    assert [
        (r["origin"].rsplit("/", 1)[-1], r["value"], r["in_effect"]) for r in shown["layers"]
    ] == [
        ("default", 8, False),
        ("config.toml", 4, True),
    ]


def test_completion_scripts_for_each_shell(cli):
    for shell, marker in (
        ("bash", "complete -o"),
        ("zsh", "compdef"),
        ("fish", "complete --no-files"),
    ):
        done = cli("completion", shell)
        assert done.returncode == 0 and marker in done.stdout, done.stderr


@pytest.fixture
def stored_entities(register_plugin):
    """The plugin with the stored-entity commands (`task`, `entity`, `bundle`, ...)."""
    import agentenv_stored_entities.hooks

    register_plugin(agentenv_stored_entities.hooks, "stored-entities")


def test_a_plugins_step_type_is_accepted_by_task_commands(
    cli_runner, register_plugin, stored_entities, monkeypatch
):
    """A step type a third-party plugin registers validates in `task create` with no kernel change."""
    steps = '[{"id": "w", "type": "acme_state_equals", "verifier_id": "w", "expect": {"a": 1}}]'
    path = Path(os.environ["AGENT_ENV_HOME"]) / "t.json"
    path.write_text(steps)
    without = cli_runner.invoke(["task", "create", str(path), "--id", "@local/lab/w"])
    assert without.exit_code == 1 and "unknown step type 'acme_state_equals'" in without.output
    monkeypatch.syspath_prepend(str(ACME_SRC))
    import agentenv_acme.hooks as acme_hooks

    register_plugin(acme_hooks, "acme", dist="agentenv-acme")
    made = cli_runner.invoke(["task", "create", str(path), "--id", "@local/lab/w", "--json"])
    assert made.exit_code == 0, made.output
    assert json.loads(made.stdout)["status"] == "new"
    listed = json.loads(cli_runner.invoke(["task", "list", "--json"]).stdout)
    assert [r["id"] for r in listed["rows"]] == ["@local/lab/w"]


def test_an_eval_runs_by_id_and_exports_with_its_tasks(cli, tmp_path):
    bundle = tmp_path / "lab"
    shutil.copytree(HELLO, bundle)
    (bundle / "evals").mkdir()
    (bundle / "evals" / "smoke.toml").write_text('tasks = ["hello"]\n')
    put = cli("eval", "put", str(bundle))
    assert "eval smoke: v1 (new)" in put.stdout and "task hello: v1 (new)" in put.stdout
    ran = cli("eval", "run", "--id", "smoke", "--max-concurrency", "1")
    assert ran.returncode == 0, ran.stderr
    assert "eval smoke: 1 of 1 passed" in ran.stdout
    out = tmp_path / "out"
    assert cli("bundle", "init", str(out), "--from-eval", "smoke").returncode == 0
    assert (out / "evals" / "smoke.toml").read_text() == 'tasks = ["hello"]\n'
    again = cli("run", str(out))
    assert again.returncode == 0 and "eval smoke: 1 of 1 passed" in again.stdout


@pytest.fixture
def acme(register_plugin, stored_entities, monkeypatch):
    monkeypatch.syspath_prepend(str(ACME_SRC))
    import agentenv_acme.hooks as acme_hooks

    register_plugin(acme_hooks, "acme", dist="agentenv-acme")


def test_a_plugins_entity_kind_gets_list_show_put_validate(cli_runner, acme, tmp_path):
    """The acme plugin declares `scenario`; `entity scenario ...` manages it, no kernel change."""
    folder = tmp_path / "lab" / "scenarios"
    folder.mkdir(parents=True)
    (folder / "login.toml").write_text('goal = "log in"\ntype = "smoke"\nmax_steps = 3\n')
    (folder / "bulk").mkdir()
    (folder / "bulk" / "scenario.toml").write_text('goal = "import"\ntype = "soak"\n')
    (folder / "bulk" / "rows.csv").write_text("a,b\n1,2\n")
    kinds = json.loads(cli_runner.invoke(["entity", "kinds", "--json"]).stdout)
    assert {"kind": "scenario", "owner": "acme", "folder": "scenarios"}.items() <= kinds[-1].items()

    put = cli_runner.invoke(["entity", "scenario", "put", str(folder.parent)])
    assert put.exit_code == 0, put.output
    assert put.stdout.splitlines() == ["scenario bulk: v1 (new)", "scenario login: v1 (new)"]
    again = cli_runner.invoke(["entity", "scenario", "put", str(folder / "login.toml")])
    assert again.stdout.strip() == "scenario login: v1, unchanged"
    (folder / "bulk" / "rows.csv").write_text("a,b\n1,3\n")
    changed = cli_runner.invoke(["entity", "scenario", "put", str(folder / "bulk"), "--json"])
    assert [(r["name"], r["version"], r["status"]) for r in json.loads(changed.stdout)] == [
        ("bulk", 2, "changed")
    ]

    listed = json.loads(
        cli_runner.invoke(["entity", "scenario", "list", "--type", "soak", "--json"]).stdout
    )
    assert [(r["name"], r["version"], r["versions"]) for r in listed["rows"]] == [("bulk", 2, 2)]
    shown = json.loads(cli_runner.invoke(["entity", "scenario", "show", "bulk", "--json"]).stdout)
    assert shown["content"]["goal"] == "import" and list(shown["files"]) == ["rows.csv"]
    valid = cli_runner.invoke(["entity", "scenario", "validate", "login"])
    assert valid.exit_code == 0 and "scenario " in valid.stdout and "v1: valid" in valid.stdout

    # bundle init brings the scenarios stored beside the task, as `put` reads them back
    steps = tmp_path / "w.json"
    steps.write_text(
        '[{"id": "w", "type": "acme_state_equals", "verifier_id": "w", "expect": {"a": 1}}]'
    )
    task_id = f"@local/{folder.parent.resolve().as_posix().lstrip('/')}/w"
    made = cli_runner.invoke(["task", "create", str(steps), "--id", task_id])
    assert made.exit_code == 0, made.output
    out = tmp_path / "exported"
    init = cli_runner.invoke(["bundle", "init", str(out), "--from-task", task_id])
    assert init.exit_code == 0, init.output
    assert json.loads((out / "scenarios" / "login.json").read_text()) == {
        "goal": "log in",
        "type": "smoke",
        "max_steps": 3,
    }
    assert (out / "scenarios" / "bulk" / "rows.csv").read_text() == "a,b\n1,3\n"
    back = cli_runner.invoke(["entity", "scenario", "put", str(out), "--json"])
    assert back.exit_code == 0, back.output
    rows = json.loads(back.stdout)
    assert {r["id"].rpartition("/")[0] for r in rows} == {folder_id_prefix(out)}
    for row in rows:
        original = f"{task_id.rpartition('/')[0]}/{row['name']}"
        shown = cli_runner.invoke(["entity", "scenario", "show", original, "--json"])
        assert json.loads(shown.stdout)["digest"] == row["digest"], row["name"]


def test_a_plugins_entity_kind_refuses_bad_files_naming_them_and_writes_nothing(
    cli_runner, acme, tmp_path
):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "ok.toml").write_text('goal = "fine"\n')
    (folder / "bad.toml").write_text('type = "smok"\nmax_steps = 0\n')
    done = cli_runner.invoke(["entity", "scenario", "put", str(folder)])
    assert done.exit_code == 1
    assert "bad.toml: goal: required" in done.output
    assert "bad.toml: type: unknown scenario type 'smok' (did you mean 'smoke'?)" in done.output
    assert "bad.toml: max_steps: a whole number of steps, at least 1, not 0" in done.output
    listed = json.loads(cli_runner.invoke(["entity", "scenario", "list", "--json"]).stdout)
    assert listed["total"] == 0
    checked = cli_runner.invoke(["entity", "scenario", "validate", str(folder / "bad.toml")])
    assert checked.exit_code == 1 and "goal: required" in checked.output
    (folder / "bad.toml").unlink()
    (folder / "data").mkdir()
    (folder / "data" / "rows.csv").write_text("a\n")
    no_toml = cli_runner.invoke(["entity", "scenario", "put", str(folder)])
    assert (
        no_toml.exit_code == 1 and "data: a scenario folder needs scenario.toml" in no_toml.output
    )
    (tmp_path / "other").mkdir()
    not_one = cli_runner.invoke(["entity", "scenario", "put", str(tmp_path / "other")])
    assert (
        not_one.exit_code == 1
        and "holds no scenario: neither a scenarios/ folder" in not_one.output
    )
    typo = cli_runner.invoke(["entity", "scenari", "list"])
    assert (
        typo.exit_code == 2 and "no entity kind 'scenari' (did you mean 'scenario'?)" in typo.output
    )


def test_eval_create_and_add_tasks_from_task_references(cli, tmp_path):
    """The reference's `eval create --id` / `eval add-tasks --id`: a JSON array of task refs;
    an eval stored elsewhere than its tasks runs them and exports with their artifacts."""
    bundle = tmp_path / "lab"
    shutil.copytree(HELLO, bundle)
    assert cli("task", "put", str(bundle)).returncode == 0
    task_id = f"@local/{bundle.as_posix().lstrip('/')}/hello"
    refs = tmp_path / "refs.json"
    refs.write_text('[{"task_id": "hello", "task_version": 1}]')
    made = cli("eval", "create", str(refs), "--id", "@local/evals/smoke", "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout) == {"id": "@local/evals/smoke", "version": 1, "status": "new"}
    shown = json.loads(cli("eval", "show", "smoke", "--json").stdout)["content"]
    assert shown["tasks"] == [task_id] and shown["task_versions"] == {task_id: 1}

    bad = tmp_path / "bad.json"
    bad.write_text('[{"task_id": "helo"}, {"task_id": "hello", "task_version": 3}, {"taskid": 1}]')
    refused = cli("eval", "add-tasks", str(bad), "--id", "smoke")
    assert refused.returncode == 1
    assert "entry 2: unknown key 'taskid' (did you mean 'task_id'?)" in refused.stderr
    bad.write_text('[{"task_id": "helo"}, {"task_id": "hello", "task_version": 3}]')
    refused = cli("eval", "add-tasks", str(bad), "--id", "smoke")
    assert refused.returncode == 1 and "nothing was stored" in refused.stderr
    assert "no task 'helo' (did you mean 'hello'?)" in refused.stderr
    assert "has no version 3; versions: v1" in refused.stderr
    assert json.loads(cli("eval", "show", "smoke", "--json").stdout)["versions"] == 1

    refs.write_text('[{"task_id": "hello"}]')
    added = cli("eval", "add-tasks", str(refs), "--id", "smoke")
    assert added.stdout.strip() == "eval @local/evals/smoke: v2 (changed)", added.stderr
    content = json.loads(cli("eval", "show", "smoke", "--json").stdout)["content"]
    assert content["tasks"] == [task_id] and "task_versions" not in content

    ran = cli("eval", "run", "--id", "@local/evals/smoke", "--json")
    assert ran.returncode == 0, ran.stderr
    (record,) = json.loads(ran.stdout)["tasks"]
    assert record["task"]["id"] == task_id and record["status"] == "passed"
    out = tmp_path / "out"
    assert cli("bundle", "init", str(out), "--from-eval", "smoke").returncode == 0
    assert (out / "artifacts" / "greeting" / "greeting.txt").is_file()
    assert cli("run", str(out)).returncode == 0


def test_artifact_type_groups_put_and_get_by_id(cli, tmp_path):
    skill = tmp_path / "my-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: my-skill\ndescription: d\n---\nDo it.\n")
    put = cli("artifact", "skill", "put", "--id", "@local/lab/my-skill", "--skill-dir", str(skill))
    assert put.stdout.strip() == "skill my-skill: v1 (new)", put.stderr
    got = cli("artifact", "skill", "get", "--id", "my-skill", "--output-dir", str(tmp_path / "s"))
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "s" / "SKILL.md").read_bytes() == (skill / "SKILL.md").read_bytes()
    no_md = cli(
        "artifact", "skill", "put", "--id", "@local/lab/x", "--skill-dir", str(tmp_path / "s2")
    )
    assert no_md.returncode == 1 and "no such file or folder" in no_md.stderr
    (tmp_path / "s2").mkdir()
    (tmp_path / "s2" / "notes.md").write_text("x")
    no_md = cli(
        "artifact", "skill", "put", "--id", "@local/lab/x", "--skill-dir", str(tmp_path / "s2")
    )
    assert no_md.returncode == 1 and f"{tmp_path / 's2'}: a skill needs SKILL.md" in no_md.stderr

    data = tmp_path / "greeting.txt"
    data.write_text("Hello\n")
    put = cli(
        "artifact", "file", "put", str(data), "--id", "@local/lab/greet", "--description", "hi"
    )
    assert put.stdout.strip() == "artifact greet: v1 (new)", put.stderr
    (row,) = json.loads(cli("artifact", "list", "--type", "file", "--json").stdout)["rows"]
    assert row["id"] == "@local/lab/greet"
    shown = json.loads(cli("artifact", "show", "greet", "--json").stdout)
    assert shown["content"]["config"] == {"type": "file", "description": "hi"}
    out = tmp_path / "g"
    assert cli("artifact", "file", "get", "--id", "greet", "--output-dir", str(out)).returncode == 0
    assert (out / "greeting.txt").read_text() == "Hello\n"
    again = cli("artifact", "file", "get", "--id", "greet", "--output-dir", str(out))
    assert again.returncode == 1 and "not empty" in again.stderr
    both = cli(
        "artifact", "fileset", "put", str(data), "--dir", str(tmp_path), "--id", "@local/a/b"
    )
    assert both.returncode == 2 and "give one of FILEPATH or --dir" in both.stderr


def test_task_run_output_dir_start_step_and_get_instance(cli, tmp_path):
    bundle = tmp_path / "lab"
    shutil.copytree(HELLO, bundle)
    assert cli("task", "put", str(bundle)).returncode == 0
    out = tmp_path / "records"
    ran = cli("task", "run", "--id", "hello", "--k", "2", "--output-dir", str(out))
    assert ran.returncode == 0, ran.stderr
    files = sorted(out.glob("ti-*.json"))
    assert len(files) == 2
    record = json.loads(files[0].read_text())
    assert record["status"] == "passed" and list(record["steps"])[0] == "sandbox"
    got = json.loads(cli("task", "get-instance", "--id", record["id"]).stdout)
    assert got["id"] == record["id"] and got["outcome"] == record["outcome"]
    missing = cli("task", "get-instance", "--id", "ti-nope")
    assert missing.returncode == 1 and "no task instance or run 'ti-nope'" in missing.stderr

    late = cli("task", "run", "--id", "hello", "--start-step", "3", "--json")
    assert (
        "task hello starts at step 'teardown'; not run: sandbox, load-greeting, verify"
        in late.stderr
    )
    (only,) = json.loads(late.stdout)["tasks"]
    assert list(only["steps"]) == ["teardown"]
    past = cli("task", "run", "--id", "hello", "--start-step", "4")
    assert past.returncode == 1
    assert "--start-step 4: task 'hello' has 4 steps (0 to 3)" in past.stderr


def test_dockerfile_puts_of_envs_and_agents_by_id(cli, tmp_path):
    """The reference's `env mcp-server put` / `a2a-agent put --id --dockerfile [--context]`."""
    echo = ROOT / "examples" / "echo-docker" / "envs" / "echo"
    put = cli(
        "env",
        "mcp-server",
        "put",
        "--id",
        "@local/lab/echo",
        "--dockerfile",
        str(echo / "Dockerfile"),
    )
    assert put.stdout.strip() == "env echo: v1 (new)", put.stderr
    shown = json.loads(cli("env", "show", "echo", "--json").stdout)
    assert shown["type"] == "mcp_server" and sorted(shown["files"]) == sorted(
        p.name for p in echo.iterdir()
    )
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "agent.py").write_text("print('hi')\n")
    dockerfile = tmp_path / "agent.Dockerfile"
    dockerfile.write_text("FROM python:3.12-slim\nCOPY agent.py /agent.py\n")
    args = ("a2a-agent", "put", "--id", "@local/lab/bare", "--dockerfile", str(dockerfile))
    put = cli(*args, "--context", str(context), "--json")
    assert json.loads(put.stdout) == [{"kind": "agent", "name": "bare", "version": 1}], put.stderr
    files = json.loads(cli("agent", "show", "bare", "--json").stdout)["files"]
    assert sorted(files) == ["Dockerfile", "agent.py"]
    missing = cli("env", "mcp-server", "put", "--id", "@local/lab/x", "--dockerfile", "nope")
    assert missing.returncode == 1 and "--dockerfile nope: no such file" in missing.stderr
    both = cli("a2a-agent", "put", str(tmp_path), "--id", "@local/lab/y")
    assert both.returncode == 2 and "not both" in both.stderr
    assert json.loads(cli("env", "list", "--json").stdout)["total"] == 1


def test_a_plugin_cannot_declare_a_kernel_kind(register_plugin, plugin_manager):
    from agent_env import hookimpl
    from agent_env.entities.kinds import EntityKind
    from agent_env.errors import PluginError

    class Grabby:
        @hookimpl
        def agentenv_register_entity_kinds(self, registry):
            registry.add(EntityKind(kind="task"))

    register_plugin(Grabby(), "grabby")
    with pytest.raises(PluginError, match="declared entity kind 'task', which the kernel owns"):
        plugin_manager.registry("entity_kinds")
    with pytest.raises(ValueError, match="entity kind 'Bad Kind'"):
        EntityKind(kind="Bad Kind")
