"""A third-party plugin outside the workspace, installed for real, runs a task end to end.

`tests/fixtures/thirdparty-plugin` (distribution `agentenv-acme`) adds the `acme` sandbox
provider, the `acme_script` env type, the `acme-caller` agent kind, a verifier step, a command,
an `acme://` bundle source, a runner, a secret store, a step wrapper, a `run_finished`
hook and the `scenario` entity kind, importing only the kernel's public
modules (tests/test_public_api.py scans it like the in-tree plugins).

How it is installed: wheels of the kernel, the protocol, core-steps (whose deploy/prompt steps
the task uses), stored-entities (whose `entity` and `bundle` commands manage the plugin's kind
and push its bundles), reporting (whose `runs export` writes the plugin's format), caches
(whose `cache list` lists the plugin's cache kind) and the fixture are built from this checkout and installed as files into a
fresh `uv venv` (offline: their dependencies come from the uv cache, which
`wheel_venv.warm_uv_cache` fills first without naming any package of ours, so the index can
never substitute a package of the same name). That is what a user's
`pip install agentenv-acme` does, takes a few seconds, and exercises the entry point, the
package data (the demo bundle) and the lazy hooks as installed, not as source folders.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from wheel_venv import run_command, venv_from_wheels  # noqa: E402

pytestmark = pytest.mark.network  # installs from the package index

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "thirdparty-plugin"
DEMO = FIXTURE / "src" / "agentenv_acme" / "bundles" / "demo"
PACK_SITE = ROOT / "tests" / "fixtures" / "acme-pack-site"
PACK_BUNDLE = ROOT / "tests" / "fixtures" / "acme-pack-bundle"
SOURCES = (
    ROOT / "kernel",
    ROOT / "protocol",
    ROOT / "plugins" / "core-steps",
    ROOT / "plugins" / "stored-entities",
    ROOT / "plugins" / "reporting",
    ROOT / "plugins" / "caches",
    FIXTURE,
)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    return venv_from_wheels(tmp_path_factory.mktemp("acme"), SOURCES)


@pytest.fixture
def agent_env(venv, tmp_path):
    """The venv's `agent-env` in an empty folder with a private home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "VIRTUAL_ENV"))}
    env["AGENT_ENV_HOME"] = str(tmp_path / "home")

    def run(*args: str) -> subprocess.CompletedProcess:
        return run_command([str(venv / "bin" / "agent-env"), *args], cwd=tmp_path, env=env)

    return run


def test_plugin_list_shows_what_the_plugin_registered(agent_env):
    listed = agent_env("plugin", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    acme = {p["name"]: p for p in json.loads(listed.stdout)}["acme"]
    assert (acme["dist"], acme["status"], acme["api"]) == ("agentenv-acme", "ok", ">=1.0,<2")
    assert "agentenv_resolve_bundle_source" in acme["hooks"]
    assert acme["registered"] == {
        "agents": ["acme-caller"],
        "cache_kinds": ["acme-downloads"],
        "commands": ["acme", "plugin acme-doctor"],
        "entity_kinds": ["scenario"],
        "env_types": ["acme_script"],
        "export_formats": ["acme-csv"],
        "runners": ["acme-serial"],
        "sandbox_providers": ["acme"],
        "step_types": ["acme_state_equals"],
        "stores": ["secret:acme-files"],
    }
    check = agent_env("plugin", "check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_plugins_subcommand_joins_the_plugin_group(agent_env, tmp_path):
    helped = agent_env("plugin", "--help")
    assert "acme-doctor  Check that acme sandboxes can start here." in helped.stdout
    doctor = agent_env("plugin", "acme-doctor")
    assert doctor.returncode == 0, doctor.stderr
    assert doctor.stdout == f"ok: acme sandboxes go to {tmp_path / 'home' / 'acme-sandboxes'}\n"


def test_a_step_pack_the_plugin_discovers_is_a_plugin_of_its_own(venv, tmp_path):
    """`acme-pack-demo` declares a step class in `agent_env.acme_steps` only: acme's
    `agentenv_discover_plugins` makes it a plugin row, and its step type runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "VIRTUAL_ENV"))}
    env.update(AGENT_ENV_HOME=str(tmp_path / "home"), PYTHONPATH=str(PACK_SITE))

    def run(*args: str) -> subprocess.CompletedProcess:
        return run_command([str(venv / "bin" / "agent-env"), *args], cwd=tmp_path, env=env)

    listed = run("plugin", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    pack = {p["name"]: p for p in json.loads(listed.stdout)}["acme-pack-demo"]
    assert (pack["dist"], pack["version"], pack["format"], pack["status"]) == (
        "acme-pack-demo",
        "0.2.0",
        "acme-pack",
        "ok",
    )
    assert pack["registered"] == {"step_types": ["always_passes"]}
    done = run("run", str(PACK_BUNDLE), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = json.loads(done.stdout)["tasks"]
    assert record["outcome"] == "passed (always: 1)"
    disabled = run("--disable-plugin", "acme-pack-demo", "run", str(PACK_BUNDLE))
    assert disabled.returncode == 2  # the bundle does not validate: unknown step type
    assert "always_passes" in disabled.stderr


def test_the_plugins_cache_kind_is_listed(agent_env):
    listed = agent_env("cache", "list", "--kind", "acme-downloads", "--json")
    assert listed.returncode == 0, listed.stderr
    [kind] = json.loads(listed.stdout)["kinds"]
    assert kind["kind"] == "acme-downloads" and kind["location"].endswith("/agentenv/acme")


def test_the_plugins_entity_kind_is_managed_by_the_entity_commands(agent_env, tmp_path):
    """`scenario`, declared by the installed plugin, gets list/show/put/validate; no kernel change."""
    folder = tmp_path / "lab" / "scenarios"
    folder.mkdir(parents=True)
    (folder / "login.toml").write_text('goal = "log in"\ntype = "smoke"\n')
    kinds = agent_env("entity", "kinds")
    assert "scenario  acme  scenarios/  Acme scenarios" in kinds.stdout, kinds.stderr
    put = agent_env("entity", "scenario", "put", str(folder.parent))
    assert put.returncode == 0 and put.stdout == "scenario login: v1 (new)\n", put.stderr
    listed = json.loads(agent_env("entity", "scenario", "list", "--json").stdout)
    assert [(r["name"], r["type"], r["version"]) for r in listed["rows"]] == [("login", "smoke", 1)]
    shown = agent_env("entity", "scenario", "show", "login")
    assert shown.returncode == 0 and "scenario @local/" in shown.stdout, shown.stderr
    assert agent_env("entity", "scenario", "validate", "login").returncode == 0
    (folder / "login.toml").write_text('type = "smoke"\n')
    bad = agent_env("entity", "scenario", "validate", str(folder / "login.toml"))
    assert bad.returncode == 1 and "login.toml: goal: required" in bad.stderr


def test_a_pushed_bundle_runs_from_the_plugins_destination(agent_env, tmp_path):
    """`bundle push` hands the checked folder to the plugin that claims the destination
    (`agentenv_push_bundle`); acme's own source then runs it; a shipped name is refused."""
    folder = tmp_path / "mine"
    shutil.copytree(DEMO, folder)
    pushed = agent_env("bundle", "push", str(folder), "acme://mine", "--json")
    assert pushed.returncode == 0, pushed.stderr
    assert json.loads(pushed.stdout)["destination"] == "acme://mine"
    done = agent_env("run", "acme://mine", "--sandbox", "acme")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("sum  passed (answer: 1, wiring: 1)"), done.stdout
    refused = agent_env("bundle", "push", str(folder), "acme://demo")
    assert refused.returncode == 1
    assert "'demo' is a bundle acme ships" in refused.stderr


def test_an_export_in_the_plugins_format_pushed_to_the_plugins_destination(agent_env, tmp_path):
    """`runs export --format acme-csv` (`agentenv_register_export_formats`) and `--to
    acme://NAME` (`agentenv_push_dataset`): the dataset folder with its card lands on acme's
    shelf."""
    done = agent_env("run", "acme://demo", "--sandbox", "acme", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    exported = agent_env("runs", "export", run_id, "--format", "acme-csv")
    assert exported.stdout == "task,trial,status,reward\nsum,0,passed,1.0\n", exported.stderr
    pushed = agent_env("runs", "export", run_id, "--format", "acme-csv", "--to", "acme://sums")
    assert pushed.returncode == 0, pushed.stderr
    shelf = tmp_path / "home" / "acme-datasets" / "sums"
    data = (shelf / "data" / "train-00000-of-00001.csv").read_text()
    assert data == exported.stdout
    assert "path: data/train-00000-of-00001.csv" in (shelf / "README.md").read_text()


def test_a_task_runs_end_to_end_on_the_plugins_provider_env_type_and_agent(agent_env, tmp_path):
    done = agent_env("run", "acme://demo", "--sandbox", "acme", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = json.loads(done.stdout)["tasks"]
    assert (record["status"], record["outcome"]) == ("passed", "passed (answer: 1, wiring: 1)")
    assert record["bundle"]["provenance"] == {"source": "acme", "spec": "acme://demo"}
    # The plugin's own verifier read the state the core steps recorded: provider, env type
    # and agent kind were the plugin's.
    wiring = {r["id"]: r["result"] for r in record["verifiers"]["wiring"]["results"]}
    assert wiring == {
        "envs.calc.provider": True,
        "envs.calc.type": True,
        "agents.default-agent.type": True,
    }
    # The agent called the env's tool through the gateway, and the tool ran in an acme
    # sandbox (its answer names the sandbox from the env the provider gave it).
    ask = record["outputs"]["ask"]
    assert [c["tool"] for c in ask["tool_calls"]] == ["add"]
    assert ask["response"].startswith("2 + 3 = 5 (from acme-")
    assert record["verifiers"]["answer"]["score"] == 1.0
    assert any(line.startswith("env: env 'calc' up on acme at http://") for line in record["log"])
    assert record["agent"] == "acme-caller:caller"
    # Teardown removed the sandbox; the run_finished hook saw the finished record.
    assert json.loads(agent_env("acme", "--json").stdout) == []
    finished = (tmp_path / "home" / "acme-finished.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in finished] == [
        {"instance": record["id"], "status": "passed"}
    ]


def test_the_plugins_runner_and_step_wrapper_run_the_demo_folder(agent_env, tmp_path):
    (tmp_path / ".agentenv").mkdir()
    (tmp_path / ".agentenv" / "config.toml").write_text(
        '[run]\nrunner = "acme-serial"\n\n[plugins.agentenv-acme]\ntime_steps = true\n'
    )
    done = agent_env("run", str(DEMO), "--sandbox", "acme")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sum  passed (answer: 1, wiring: 1)" in done.stdout
    assert "acme-serial: 1 instance(s), one at a time" in done.stderr
    for step in ("env", "agent", "ask", "answer", "wiring"):
        assert f"[sum] {step}: acme: {step} took " in done.stderr


def test_a_misspelled_plugin_setting_is_refused_with_a_did_you_mean(agent_env, tmp_path):
    (tmp_path / ".agentenv").mkdir()
    (tmp_path / ".agentenv" / "config.toml").write_text(
        "[plugins.agentenv-acme]\ntime_step = true\n"
    )
    done = agent_env("run", str(DEMO), "--sandbox", "acme")
    assert done.returncode != 0
    assert "unknown key 'time_step' (did you mean 'time_steps'?)" in done.stderr
    (tmp_path / ".agentenv" / "config.toml").unlink()
    assert "No runs recorded yet" in agent_env("runs", "list").stdout


def test_an_unknown_acme_bundle_is_refused_with_a_did_you_mean(agent_env):
    done = agent_env("run", "acme://dmeo", "--sandbox", "acme")
    assert done.returncode != 0
    assert "'acme://dmeo': no acme bundle 'dmeo' (did you mean 'demo'?); known: demo" in (
        done.stderr
    )
    assert "No runs recorded yet" in agent_env("runs", "list").stdout


def test_a_misspelled_env_toml_key_fails_the_bundle_load_naming_file_key_and_fix(
    agent_env, tmp_path
):
    """The env type's own `problems` catch it; the bundle parser runs every registered env
    type's static checks for each env folder, so the run fails before anything is recorded."""
    bundle = tmp_path / "demo"
    shutil.copytree(DEMO, bundle)
    (bundle / "envs" / "calc" / "env.toml").write_text(
        'type = "acme_script"\nscirpt = "server.py"\n'
    )
    done = agent_env("run", str(bundle), "--sandbox", "acme")
    assert done.returncode != 0, done.stdout + done.stderr
    assert "envs/calc/env.toml: unknown key 'scirpt' (did you mean 'script'?)" in done.stderr
    assert "envs/calc/env.toml: script: required, the Python file that serves the env" in (
        done.stderr
    )
    assert "No runs recorded yet" in agent_env("runs", "list").stdout
    assert json.loads(agent_env("acme", "--json").stdout) == []


def test_a_killed_run_leaves_an_acme_sandbox_the_next_command_reaps(venv, agent_env, tmp_path):
    """The provider's `describe`/`connect`/`teardown` work from another process: after a
    SIGKILL mid-run, the next command finds the lease, reconnects and tears the sandbox down."""
    bundle = tmp_path / "slow"
    shutil.copytree(DEMO, bundle)
    server = bundle / "envs" / "calc" / "server.py"
    server.write_text(
        server.read_text().replace("        return f", "        sleep(120)\n        return f")
    )
    server.write_text("from time import sleep\n" + server.read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "VIRTUAL_ENV"))}
    env["AGENT_ENV_HOME"] = str(tmp_path / "home")
    env["AGENT_ENV_WATCHDOG"] = "0"  # the next command reaps here, not the watchdog
    log = tmp_path / "run.log"
    with log.open("w") as out:
        run = subprocess.Popen(
            [str(venv / "bin" / "agent-env"), "run", str(bundle), "--sandbox", "acme"],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while "[sum] agent: ok" not in log.read_text():
            assert run.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        run.kill()
        run.wait()
    (state_file,) = (tmp_path / "home" / "acme-sandboxes").glob("acme-*.json")
    state = json.loads(state_file.read_text())
    (env_process,) = state["processes"]
    assert Path(state["folder"]).is_dir()
    assert _alive(env_process["pid"])
    pruned = agent_env("sandbox", "prune")
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout == f"removed {state['id']}\npruned 1 sandbox(es)\n"
    assert not Path(state["folder"]).exists() and not state_file.exists()
    deadline = time.monotonic() + 10
    while _alive(env_process["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(env_process["pid"])


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


PROBE = """
import json, sys
from agent_env.cli.main import main
try:
    main(["--help"])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def test_help_lists_the_plugin_command_and_imports_only_its_hooks(venv, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "VIRTUAL_ENV"))}
    env["AGENT_ENV_HOME"] = str(tmp_path / "home")
    done = run_command([str(venv / "bin" / "python"), "-c", PROBE], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "  acme " in done.stdout and "List live acme sandboxes." in done.stdout
    modules = json.loads(done.stderr.strip().splitlines()[-1])
    acme = sorted(m for m in modules if m.startswith("agentenv_acme"))
    assert acme == ["agentenv_acme", "agentenv_acme.hooks"]
    heavy = [
        m for m in modules if m.split(".")[0] in ("mcp", "httpx", "anyio", "agentenv_protocol")
    ]
    assert heavy == []
