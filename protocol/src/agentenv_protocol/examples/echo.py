"""The smallest useful environment: tools that echo, add and fail on purpose."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agentenv_protocol import (
    AgentEnvEnvironment,
    AgentEnvError,
    ToolContext,
    environment_card,
    tool,
)


@environment_card(name="echo")
class EchoEnv(AgentEnvEnvironment):
    @tool()
    def echo(self, text: Annotated[str, Field(description="What to say back")]) -> str:
        """Return the text unchanged."""
        return text

    @tool()
    async def add(self, a: int, b: int = 0) -> dict:
        """Add two integers."""
        return {"sum": a + b}

    @tool()
    def whoami(self, ctx: ToolContext) -> dict:
        """Report the caller's role and session as the server sees them."""
        return {"role": ctx.role, "session": ctx.session, "transport": ctx.transport}

    @tool()
    def fail(self, code: str = "boom", message: str = "failed on purpose") -> str:
        """Raise an AgentEnvError (for testing error paths)."""
        raise AgentEnvError(code, message)


def main() -> None:
    EchoEnv().serve()


if __name__ == "__main__":
    main()
