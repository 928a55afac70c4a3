"""Client-only use must not load the server stack (starlette, uvicorn, the mcp package)."""

import subprocess
import sys


def test_client_import_does_not_load_server_stack():
    code = (
        "import sys\n"
        "import agentenv_protocol\n"
        "from agentenv_protocol import EnvClient, ToolContext, AgentEnvError, EnvironmentCard, tool, reset_data\n"
        "from agentenv_protocol.client import EnvClient\n"
        "from agentenv_protocol.errors import MethodNotFound\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn', 'mcp', 'mcp_types'))\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_server_names_still_resolve_lazily():
    code = "import agentenv_protocol as p\nprint(p.AgentEnvEnvironment.__name__, p.gateway.Gateway.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["AgentEnvEnvironment", "Gateway"]
