"""The code samples of the existing protocol package's README (`agentenv-framework-protocol`
0.1.379), fetched with uv into a cache folder and turned into runnable servers.

Full samples run verbatim; a fragment (methods shown without their class) is placed in a small
class that seeds its data, and the one sample that builds its own FastMCP gets the import its
snippet leaves out. Every block is classified: a sample this module does not know fails the test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

REFERENCE = "agentenv-framework-protocol==0.1.379"
_METADATA = "agentenv_framework_protocol-0.1.379.dist-info/METADATA"

#: Blocks left out, by a marker they contain, with the reason.
EXCLUDED = {
    "agentenv_protocol.transfers": "object transfers (transfers module) are not part of this SDK",
    "agentenv_protocol.computer": "computer drivers are a separate SDK area",
    "agentenv_protocol.a2a_agent": "the A2A agent framework is a separate SDK area",
    "@a2a_agent(": "the A2A agent framework is a separate SDK area",
    "python -m agentenv_protocol.computer": "computer drivers are a separate SDK area",
    "run_probe(": "computer drivers are a separate SDK area",
}


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(root) / "agentenv-tests" / REFERENCE.replace("==", "-")


def reference_readme() -> str:
    """The README of the reference package (its wheel's METADATA), downloaded once."""
    target = cache_dir()
    metadata = target / _METADATA
    if not metadata.exists():
        uv = shutil.which("uv")
        if uv is None:
            raise RuntimeError(f"`uv` is needed to download {REFERENCE} for its README samples")
        done = subprocess.run(
            [uv, "pip", "install", "-q", "--no-deps", "--target", str(target)]
            + ["--python", sys.executable, REFERENCE],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0 or not metadata.exists():
            raise RuntimeError(
                f"could not download {REFERENCE} (is the package index reachable?): "
                f"{done.stderr.strip()[-1500:]}"
            )
    return metadata.read_text()


def code_blocks(readme: str) -> list[tuple[str, str]]:
    body = readme.split("\n\n", 1)[1]  # past the metadata headers
    return re.findall(r"```(\w*)\n(.*?)```", body, re.S)


_FRAGMENT_CLASS = """\
from agentenv_protocol import (
    AgentEnvEnvironment, AgentEnvError, DataPart, ToolContext, add_data, environment_card,
    extension, tool,
)


@environment_card(name="{name}")
class FragmentEnv(AgentEnvEnvironment):
    def __init__(self):
        self.messages = []

    @add_data
    def _seed(self, parts):
        for p in parts:
            self.messages.extend(p.data.get("messages", []))

{body}


if __name__ == "__main__":
    FragmentEnv().serve()
"""


def _fragment(name: str, code: str) -> str:
    top = [line for line in code.splitlines() if line.startswith(("from ", "import "))]
    rest = "\n".join(line for line in code.splitlines() if line not in top)
    body = textwrap.indent(textwrap.dedent(rest), "    ")
    return "\n".join(top) + "\n" + _FRAGMENT_CLASS.format(name=name, body=body)


def samples(readme: str) -> tuple[dict[str, str], str, dict[str, str]]:
    """(servers by name, the ToolSession client sample, excluded blocks with their reason)."""
    servers: dict[str, str] = {}
    client = ""
    excluded: dict[str, str] = {}
    for i, (_lang, code) in enumerate(code_blocks(readme)):
        reason = next((why for marker, why in EXCLUDED.items() if marker in code), None)
        if reason is not None:
            excluded[f"block {i}"] = reason
        elif "class SlackEnv" in code and ".serve()" in code:
            servers["slack"] = code
        elif "self.mount(" in code:
            # the snippet leaves out its imports; a FastMCP its author built listens on its own
            # port (8000), so the harness points it at MCP_PORT before serve() runs it as is
            port = "import os\nenv = LegacyEnv()\nenv.mcp.settings.port = int(os.environ['MCP_PORT'])\n"
            servers["legacy"] = (
                "from mcp.server.fastmcp import FastMCP\n"
                "from agentenv_protocol import AgentEnvEnvironment, environment_card\n\n"
                + code.replace("LegacyEnv().serve()", port + "env.serve()")
            )
        elif "ToolSession(" in code:
            client = (
                "import asyncio, sys\n\nasync def main(mcp_url):\n"
                + textwrap.indent(code, "    ")
                + "\n\nasyncio.run(main(sys.argv[1]))\n"
            )
        elif code.lstrip().startswith("@extension(") and "op=" in code:
            servers["ext_op"] = _fragment("display", code)
        elif "ctx: ToolContext" in code and code.startswith("from agentenv_protocol import"):
            servers["who"] = _fragment("inbox", code)
        else:
            raise AssertionError(f"README block {i} is not classified:\n{code[:400]}")
    return servers, client, excluded
