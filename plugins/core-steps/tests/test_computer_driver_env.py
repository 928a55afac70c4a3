"""The `computer_driver` env type without Docker: what its env.toml may say (every problem at
once, naming the key), where it may run, and the image recipe it generates."""

from __future__ import annotations

import json

import pytest

from agent_env.errors import BundleError
from agentenv_core_steps.envs.computer_driver import (
    DESKTOP_PACKAGES,
    RUNTIME_COMMAND,
    ComputerDriverEnv,
)
from agentenv_core_steps.envs.mcp_server import EnvDeployError

TASK = [{"id": "env", "type": "deploy_env", "env_id": "pc"}]
DRIVER = "class PC:\n    pass\n"


def problems(runner, env_toml: str, files: dict[str, str] | None = None) -> list[str]:
    runner.write({"envs/pc/env.toml": env_toml, **(files or {}), "tasks/t.json": TASK})
    with pytest.raises(BundleError) as caught:
        runner.load()
    return caught.value.problems


def test_the_env_type_is_registered_and_a_good_folder_loads(runner):
    assert "computer_driver" in runner.plugins().env_types
    runner.write(
        {
            "envs/pc/env.toml": 'type = "computer_driver"\nmodule = "driver.py:PC"\n',
            "envs/pc/driver.py": DRIVER,
            "tasks/t.json": TASK,
        }
    )
    assert "pc" in runner.load().envs


def test_every_problem_of_an_env_toml_is_reported_at_once(runner):
    found = problems(
        runner,
        'type = "computer_driver"\nmodule = "drivr.py:PC"\nscreen = "big"\n'
        'apps = ["xterm", ""]\nrequirements = "reqs.txt"\nprot = 1\n',
        {"envs/pc/driver.py": DRIVER},
    )
    joined = "\n".join(found)
    assert "envs/pc/env.toml: module: no file 'drivr.py' in the env folder (it has: driver.py)" in (
        joined
    )
    assert "screen 'big': expected WIDTHxHEIGHT[xDEPTH]" in joined
    assert "apps[1]: expected a non-empty command" in joined
    assert "requirements: no file 'reqs.txt'" in joined
    assert "unknown key 'prot' (did you mean 'port'?)" in joined


@pytest.mark.parametrize(
    ("module", "message"),
    [
        (None, "module: required: the driver's file and class"),
        ('"driver.py"', "'driver.py' is not 'file.py:Class' or 'package.module:Class'"),
        ('"driver.py:not a name"', "is not 'file.py:Class'"),
    ],
)
def test_the_driver_class_must_be_named(runner, module, message):
    toml = 'type = "computer_driver"\n' + (f"module = {module}\n" if module else "")
    found = problems(runner, toml, {"envs/pc/driver.py": DRIVER})
    assert any(message in p for p in found), found


def test_parsing_builds_the_runtime_command_apps_and_screen(tmp_path):
    (tmp_path / "driver.py").write_text(DRIVER)
    (tmp_path / "requirements.txt").write_text("requests>=2  # http\n")
    env = ComputerDriverEnv.from_folder(
        "pc",
        tmp_path,
        {
            "module": "driver.py:PC",
            "screen": "800x600",
            "apps": ["xterm -geometry 80x24+0+0", ["xclock", "-digital"]],
        },
    )
    assert env.command == [*RUNTIME_COMMAND, "driver.py:PC"]
    assert env.apps == [["xterm", "-geometry", "80x24+0+0"], ["xclock", "-digital"]]
    assert env.requirements == ["requests>=2"]
    recipe = env.generated_dockerfile("agentenv_protocol-1.0-py3-none-any.whl")
    lines = recipe.splitlines()
    assert lines[0] == "FROM python:3.11-slim"
    # the shared desktop layer comes before anything of this env, so Docker reuses it
    assert all(p in lines[1] for p in DESKTOP_PACKAGES) and "apt-get install" in lines[1]
    assert "Pillow" in lines[2] and "mss" in lines[2] and "python-xlib" in lines[2]
    assert "requests>=2" in recipe.split("COPY agentenv-wheels/")[1]
    assert 'AGENTENV_SCREEN="800x600x24"' in recipe
    apps = json.dumps(env.apps)
    assert f"AGENTENV_DISPLAY_APPS={json.dumps(apps)}" in recipe
    assert lines[-1] == "CMD " + json.dumps(env.command)


def test_parsing_refuses_what_the_bundle_check_refuses(tmp_path):
    with pytest.raises(ValueError, match="screen '0x0'"):
        ComputerDriverEnv.from_folder("pc", tmp_path, {"module": "x.y:PC", "screen": "0x0"})


def test_a_host_process_sandbox_is_refused_with_the_way_out(tmp_path):
    (tmp_path / "driver.py").write_text(DRIVER)
    env = ComputerDriverEnv.from_folder("pc", tmp_path, {"module": "driver.py:PC"})
    why = env.unavailable_on(None, "local")
    assert why is not None and "--sandbox docker" in why

    import anyio

    async def deploy_locally():
        await env.deploy(None, sandbox_name="pc", provider="local")

    with pytest.raises(EnvDeployError, match="env 'pc': a computer_driver env runs on a virtual"):
        anyio.run(deploy_locally)
