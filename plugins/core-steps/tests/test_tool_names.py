"""The tool names an env folder serves, read from its code without running it."""

from __future__ import annotations

from agentenv_core_steps.envs.tool_names import GATEWAY_TOOLS, scanned_tools
from agentenv_protocol.gateway.clock import GET_TIME_TOOL


def test_decorated_functions_give_the_names_and_runtime_names_give_none(tmp_path):
    (tmp_path / "server.py").write_text(
        "@tool()\ndef a(self): ...\n@tool\nasync def b(self): ...\n"
        "@tool(name='c')\ndef third(self): ...\n@mcp.tool('d')\ndef fourth(): ...\n"
        "@other\ndef helper(): ...\n"
    )
    assert scanned_tools(tmp_path) == {"a", "b", "c", "d"}
    (tmp_path / "more.py").write_text("@tool('{environment_name}_x')\ndef x(self): ...\n")
    assert scanned_tools(tmp_path) is None
    assert scanned_tools(tmp_path / "empty-or-absent") is None


def test_the_gateway_tools_are_the_protocol_gateway_s():
    assert {GET_TIME_TOOL["name"]} == GATEWAY_TOOLS
