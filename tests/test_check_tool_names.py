"""`agent-env check` and `run --dry-run` warn when a criterion names a tool that no env of its
task serves (tools from `env.toml` `tools`, else the env's `@tool` functions), with a
did-you-mean; the bundle stays valid, and an env whose tools are unknown draws no warning."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import agent_env  # noqa: E402
from envs_helpers import copy_example  # noqa: E402
from promise_helpers import write_files  # noqa: E402

BANK = """
from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


@environment_card(name="bank")
class Bank(AgentEnvEnvironment):
    @tool()
    def transfer(self, to: str, amount: int) -> dict:
        return {"sent": amount}

    @tool("balance")
    def current_balance(self) -> int:
        return 0


Bank().serve()
"""


def task(*tools: str, env: str = "bank") -> list[dict]:
    return [
        {"id": "env", "type": "deploy_env", "env_id": env},
        {"id": "agent", "type": "deploy_agent", "env_ids": [env]},
        {"id": "ask", "type": "prompt_agent", "prompt_id": "ask", "prompt": "pay bob"},
        {
            "id": "calls",
            "type": "tool_call_verifier",
            "prompt_id": "ask",
            "verifier_id": "calls",
            "criteria": [{"type": "tool_called", "tool": t} for t in tools],
        },
    ]


def bundle(root: Path, env_toml: str, *tools: str, **more: object) -> Path:
    return write_files(
        root,
        {
            "envs/bank/env.toml": 'command = ["python", "server.py"]\n' + env_toml,
            "envs/bank/server.py": BANK,
            "tasks/pay.json": task(*tools),
            **more,
        },
    )


def warnings_of(home: Path, folder: Path) -> list[str]:
    done = agent_env(home, "check", str(folder), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)["warnings"]


def test_a_misspelled_tool_of_a_declared_env_is_warned_with_a_did_you_mean(tmp_path):
    home = tmp_path / "home"
    folder = bundle(tmp_path / "b", 'tools = ["transfer", "balance"]\n', "transferr", "balance")
    [warning] = warnings_of(home, folder)
    assert warning.startswith("tasks/pay.json: step 'calls': criteria[0].tool: ")
    assert "no env of this task serves a tool 'transferr' (did you mean 'transfer'?)" in warning
    assert "bank: balance, get_time, transfer" in warning

    text = agent_env(home, "check", str(folder))
    assert text.returncode == 0 and "transferr" in text.stderr
    dry = agent_env(home, "run", str(folder), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "no env of this task serves a tool 'transferr' (did you mean 'transfer'?)" in dry.stderr

    fixed = bundle(tmp_path / "fixed", 'tools = ["transfer", "balance"]\n', "transfer", "get_time")
    assert warnings_of(home, fixed) == []


def test_without_a_declaration_the_tools_come_from_the_env_code(tmp_path):
    home = tmp_path / "home"
    folder = bundle(tmp_path / "b", "", "current_balance", "transfer", "balance")
    [warning] = warnings_of(home, folder)
    assert "tool 'current_balance'" in warning and "bank: balance, get_time, transfer" in warning


def test_an_env_whose_tools_are_unknown_draws_no_warning(tmp_path):
    home = tmp_path / "home"
    dynamic = BANK.replace('@tool("balance")', '@tool(f"{PREFIX}balance")')
    folder = bundle(tmp_path / "b", "", "anything", **{"envs/bank/server.py": dynamic})
    assert warnings_of(home, folder) == []


def test_check_prints_each_warning_once(tmp_path: Path) -> None:
    home, folder = tmp_path / "home", tmp_path / "b"
    copy_example("bank-seed", folder)
    steps = json.loads((folder / "tasks" / "pay.json").read_text())
    steps.append(
        {
            "id": "calls",
            "type": "tool_call_verifier",
            "verifier_id": "calls",
            "criteria": [{"type": "tool_called", "tool": "transferr"}],
        }
    )
    (folder / "tasks" / "pay.json").write_text(json.dumps(steps))
    done = agent_env(home, "check", str(folder))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("no env of this task serves a tool 'transferr'") == 1, done.stderr
