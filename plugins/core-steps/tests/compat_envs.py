"""Env folders for the compatibility step tests: `tidy` passes every env validator, `broken`
fails each (a card without `preferredTransport`, no data plane, undescribed tools)."""

from __future__ import annotations

TIDY = '''
from typing import Annotated

from pydantic import Field

from agentenv_protocol import (
    AgentEnvEnvironment, DataPart, add_data, environment_card, get_data, reset_data, tool,
)


@environment_card(name="tidy")
class Tidy(AgentEnvEnvironment):
    def __init__(self):
        self.items = ["seed"]

    @tool()
    def add_item(self, text: Annotated[str, Field(description="The item's text")]) -> int:
        """Add an item; returns how many there are."""
        self.items.append(text)
        return len(self.items)

    @tool()
    def list_items(self) -> list:
        """Every item, oldest first."""
        return list(self.items)

    @reset_data
    def reset(self) -> None:
        self.items.clear()

    @add_data
    def load(self, parts: list) -> None:
        for part in parts:
            self.items += part.data.get("items", [])

    @get_data
    def export(self) -> list:
        return [DataPart(data={"items": list(self.items)})]


if __name__ == "__main__":
    Tidy().serve()
'''

BROKEN = """
import json
import os

import uvicorn

from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


@environment_card(name="broken")
class Broken(AgentEnvEnvironment):
    @tool()
    def poke(self, thing: str) -> str:
        return thing


env = Broken()
inner = env.create_app()
card = env.card.model_dump(mode="json", exclude_none=True)
card.pop("preferredTransport", None)
BODY = json.dumps(card).encode()


async def app(scope, receive, send):
    if scope["type"] == "http" and scope["path"] == "/.well-known/agent-env.json":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": BODY})
        return
    await inner(scope, receive, send)


uvicorn.run(app, host=os.environ.get("MCP_HOST", "127.0.0.1"), port=int(os.environ["MCP_PORT"]),
            log_level="warning")
"""

ENV_TOML = 'command = ["python", "server.py"]\nrequirements = []\n'
FILES = {
    "envs/tidy/env.toml": ENV_TOML,
    "envs/tidy/server.py": TIDY,
    "envs/broken/env.toml": ENV_TOML,
    "envs/broken/server.py": BROKEN,
}


def deploy(env: str, step_id: str | None = None) -> dict:
    return {"id": step_id or f"deploy-{env}", "type": "deploy_env", "env_id": env}


def validators(env: str) -> list[dict]:
    return [
        {"id": f"{kind}-{env}", "type": kind, "env_id": env, "verifier_id": f"{kind}-{env}"}
        for kind in ("verify_env_card", "verify_env_core_protocol", "verify_mcp_tool_schema")
    ]
