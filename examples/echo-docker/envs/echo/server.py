"""A tiny env: echo text back and add numbers."""

from typing import Annotated

from pydantic import Field

from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


@environment_card(name="echo")
class Echo(AgentEnvEnvironment):
    @tool()
    def echo(self, text: Annotated[str, Field(description="What to say back")]) -> str:
        """Return the text unchanged."""
        return text

    @tool()
    def add(self, a: int, b: int = 0) -> dict:
        """Add two integers."""
        return {"sum": a + b}


if __name__ == "__main__":
    Echo().serve()
