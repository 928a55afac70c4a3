"""`agent-env --help` and `--version` stay cheap with every installed plugin: no heavy SDK is
imported (the plugins' `hooks.py` modules must import only the stdlib and `agent_env`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

HEAVY = (
    "mcp",
    "docker",
    "boto3",
    "botocore",
    "google",
    "huggingface_hub",
    "httpx",
    "anyio",
    "openenv",
    "gradio",
    "fastapi",
    "pytest",  # agentenv-testing is a plugin of every command too: its hooks must not load it
)

PROBE = """
import json, sys
from agent_env.cli.main import main
try:
    main({args!r})
except SystemExit:
    pass
with open({out!r}, "w") as fh:
    json.dump(sorted(sys.modules), fh)
"""


@pytest.mark.parametrize("leases", [False, True], ids=["no-leases", "leases"])
@pytest.mark.parametrize("args", [["--version"], ["--help"], ["plugin", "--help"]])
def test_cheap_commands_import_no_heavy_module(args, leases, tmp_path):
    """Also with a lease in the home: asking for help never reaps (nor imports what reaping
    needs)."""
    out = tmp_path / "modules.json"
    if leases:
        (tmp_path / "home" / "leases").mkdir(parents=True)
        (tmp_path / "home" / "leases" / "local-deadbeef.json").write_text('{"pid": 1}')
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args, out=str(out))],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        # a home of its own: leases another run left in the default home must not matter
        env={**os.environ, "AGENT_ENV_HOME": str(tmp_path / "home")},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "the command printed nothing"
    modules = json.loads(out.read_text())
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == [], f"agent-env {' '.join(args)} imported {heavy}"
    if args == ["--version"]:
        assert "click" not in modules and "pluggy" not in modules
    # the kernel structures without cattrs (only the protocol's agent side uses it)
    assert "cattrs" not in modules


#: What `run hello` (a local sandbox, three core steps, the default stores) has no use for: the
#: heavy SDKs, anyio (the engine runs on asyncio itself), cattrs (the kernel structures data
#: itself), `packaging`, `tomllib` (it reads no TOML file), the watchdog's reaping stage, and
#: every plugin class it does not run (registries hold them by import path until one is used).
HELLO_UNUSED = (
    *HEAVY,
    "cattrs",
    "packaging",
    "tomllib",
    "agent_env.sandboxes.supervisor",
    "boto3",
    "ray",
    "starlette",
    "uvicorn",
    "agentenv_aws_stores.ecr",
    "agentenv_aws_stores.s3",
    "agentenv_aws_stores.dynamodb",
    "agentenv_aws_stores.secretsmanager",
    "agentenv_gcp_stores.gcs",
    "agentenv_gcp_stores.firestore",
    "agentenv_gcp_stores.artifactregistry",
    "agentenv_docker_sandbox.provider",
    "agentenv_core_steps.envs",
    "agentenv_core_steps.agents",
    "agentenv_core_steps.steps.deploy_env",
    "agentenv_core_steps.steps.prompt_agent",
    "agentenv_core_steps.steps.run_docker_container",
    "agentenv_cli_agents.kind",
    "agentenv_openenv.episode",
    "agentenv_ray_runner.runner",
    "agentenv_protocol",
    # the stored-entity commands and what only they use (their plugin's hooks are loaded)
    "agentenv_stored_entities.commands",
    "agentenv_stored_entities.put",
    "agentenv_stored_entities.envcheck",
    "agent_env.entities",
    "agent_env.cli.toolkit",
    "agent_env.cli.session",
    # the other plugins' commands: only their hooks
    "agentenv_scaffold.commands",
    "agentenv_plugin_lifecycle.commands",
    "agentenv_explorer.app",
    # start-up's generated-code cache is the console script's alone (this probe calls main)
    "agent_env.cli.codecache",
    # install hints are worded only for an error; a snapshot model only for a fork; the
    # tool-call verifier's criteria only where tool calls are verified
    "agent_env.plugins.known",
    "agent_env.plugins.installer",
    "agent_env.engine.snapshot",
    "agentenv_core_steps.tool_criteria",
    # the run gateway: a task that deploys no env has none
    "agentenv_core_steps.gateway",
    # temp files come from `agent_env.fsutil.mkstemp`: `tempfile` imports `random`
    "tempfile",
    "random",
)


def test_run_hello_imports_only_what_it_uses(tmp_path):
    """As a second run on the machine finds it: the first one (here with a cache folder of its
    own) indexes the installed entry points, with `importlib.metadata`."""
    out = tmp_path / "modules.json"
    env = {
        **os.environ,
        "AGENT_ENV_HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    cwd = tmp_path / "cwd"  # on `python -c`'s sys.path: its listing is in the fingerprint
    cwd.mkdir()
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", PROBE.format(args=["run", "hello"], out=str(out))],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=cwd,
            env=env,
        )
        assert result.returncode == 0, result.stderr
    assert "hello  passed" in result.stdout
    modules = set(json.loads(out.read_text()))
    # what it runs is there: the three step types of the task, the local sandbox and stores
    assert {
        "agentenv_core_steps.steps.deploy_sandbox",
        "agentenv_core_steps.steps.verify_sandbox",
        "agent_env.sandboxes.local.provider",
        "agent_env.stores.sqlite",
    } <= modules
    unused = sorted(
        m for m in modules if any(m == u or m.startswith(u + ".") for u in HELLO_UNUSED)
    )
    assert unused == [], f"agent-env run hello imported {unused}"


#: A `bwrap` that notes the program it wraps (the word after `--`), then runs the real one.
LOGGING_BWRAP = """#!/bin/sh
for arg do
  if [ "$seen" = 1 ]; then echo "$arg" >> {log}; break; fi
  [ "$arg" = "--" ] && seen=1
done
exec {real} "$@"
"""


def test_run_hello_starts_one_bwrap_per_command_and_reads_its_indexes_once(tmp_path):
    """What `run hello` starts: one bwrap for its one sandboxed command, and the trial bwrap
    that says isolation works only until a success is remembered (a later run of the same
    machine starts none); the console script fingerprints the installed distributions once
    (the plugin manager and the bundle sources share the read)."""
    from agent_env.testing.require import require

    real = shutil.which("bwrap")
    require(None if real else "bubblewrap is missing (scripts/services.sh)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "bwrap.log"
    (bin_dir / "bwrap").write_text(LOGGING_BWRAP.format(log=log, real=real))
    (bin_dir / "bwrap").chmod(0o755)
    code = (
        "import sys\n"
        "import agent_env.entrypoints as e\n"
        "import agent_env.cli.main as m\n"
        "calls = []\n"
        "fingerprint = e._fingerprint\n"
        "e._fingerprint = lambda *a: calls.append(1) or fingerprint(*a)\n"
        "import atexit; atexit.register(lambda: print('fingerprints', len(calls), file=sys.stderr))\n"
        "sys.argv = ['agent-env', 'run', 'hello']\n"
        "m.console()\n"
    )
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "AGENT_ENV_HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),  # no probe remembered yet
    }
    wrapped = []
    for _ in range(2):
        log.write_text("")
        result = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=env,
        )
        assert result.returncode == 0, result.stderr
        assert "hello  passed" in result.stdout
        assert "fingerprints 1" in result.stderr.splitlines()
        assert "NOT isolated" not in result.stderr
        wrapped.append(log.read_text().splitlines())
    assert wrapped == [["true", "bash"], ["bash"]]
    # a changed bwrap executable is probed again
    (bin_dir / "bwrap").write_text(LOGGING_BWRAP.format(log=log, real=real) + "\n")
    log.write_text("")
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert log.read_text().splitlines() == ["true", "bash"]
