"""The reference's agent names and aliases resolve to CLI agent kinds, and the session-log
readers turn each CLI's JSON lines into trajectory events."""

import json

from agentenv_cli_agents.harnesses import claude as claude_cli
from agentenv_cli_agents.harnesses import codex as codex_cli
from agentenv_cli_agents.install import digest
from agentenv_cli_agents.kind import cli_agent_kinds


def test_names_and_aliases():
    kinds = {k.type: k.harness.type for k in cli_agent_kinds()}
    assert kinds["claude-code"] == kinds["claude"] == "claude-code"
    assert kinds["codex-cli"] == "codex" and kinds["gemini-cli"] == "gemini"
    assert "opencode" in kinds and kinds["pi"] == "pi"


def test_openhands_is_known_but_unavailable():
    from agentenv_cli_agents.unavailable import unavailable_kinds

    [openhands] = unavailable_kinds()
    assert openhands.type == "openhands" and "Python 3.12" in openhands.missing


def test_digest_changes_with_version_and_node():
    a = digest("@openai/codex", "0.171.0", "v20")
    assert a == digest("@openai/codex", "0.171.0", "v20")
    assert (
        a != digest("@openai/codex", "0.172.0", "v20") != digest("@openai/codex", "0.171.0", "v22")
    )


def test_claude_and_codex_logs_become_trajectories():
    claude = [
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "mcp__gateway__add_note",
                        "input": {"title": "g"},
                    }
                ]
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "ok"}],
                    }
                ]
            },
        },
        {
            "type": "result",
            "subtype": "success",
            "result": "saved",
            "usage": {"input_tokens": 3, "output_tokens": 2},
        },
    ]
    s = claude_cli.parse("\n".join(json.dumps(e) for e in claude))
    assert (s.text, s.tool_calls, s.error, s.input_tokens) == ("saved", 1, None, 3)
    assert [e["type"] for e in s.trajectory] == ["model", "tool"]
    assert s.trajectory[1]["result"] == "ok"
    codex = [
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {
                "type": "mcp_tool_call",
                "id": "i1",
                "server": "gateway",
                "tool": "add_note",
                "arguments": {},
                "status": "completed",
                "result": {"content": [{"type": "text", "text": "ok"}]},
            },
        },
        {"type": "turn.failed", "error": {"message": "model refused"}},
    ]
    s = codex_cli.parse("\n".join(json.dumps(e) for e in codex))
    assert s.error == "model refused" and s.tool_calls == 1
