"""An env written for the existing SDK, exercising what its README describes in prose: the
`@tool` options, typed returns and `AgentEnvError` fields. Runs unchanged on either SDK
(`MCP_PORT=N python compat_options_server.py`); the tests compare the answers with the shapes
the existing SDK gave."""

from __future__ import annotations

import dataclasses
from typing import Annotated, TypedDict

import mcp.types as mt
from pydantic import BaseModel

from agentenv_protocol import AgentEnvEnvironment, AgentEnvError, environment_card, extension, tool


class Weather(BaseModel):
    city: str
    temp_c: float


class Count(TypedDict, total=False):
    n: int
    label: str


class Node(BaseModel):
    name: str
    children: list[Node] = []


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


@environment_card(name="options")
class OptionsEnv(AgentEnvEnvironment):
    @tool(annotations={"readOnlyHint": True}, meta={"x-owner": "team"})
    def weather(self, city: str) -> Weather:
        """The weather in a city."""
        return Weather(city=city, temp_c=21.5)

    @tool(hidden_by_default=True)
    def advance_clock(self, seconds: int) -> str:
        """Plumbing a task drives; hidden from agents."""
        return f"advanced {seconds}"

    @tool()
    def count(self, n: int) -> Count:
        return {"n": n, "label": "x"}

    @tool()
    def tags(self) -> list[str]:
        return ["a", "b"]

    @tool()
    def scores(self) -> dict[str, int]:
        return {"x": 1}

    @tool()
    def plain(self) -> int:
        return 7

    @tool(structured_output=False)
    def unstructured(self) -> Weather:
        return Weather(city="Oslo", temp_c=-3.0)

    @tool()
    def tree(self) -> Node:
        return Node(name="root", children=[Node(name="leaf")])

    @tool()
    def point(self) -> Point:
        return Point(x=1)

    @tool()
    def maybe(self, give: bool = False) -> str | None:
        return "yes" if give else None

    @tool()
    def nothing(self) -> None:
        return None

    @tool()
    def raw(self) -> mt.CallToolResult:
        return mt.CallToolResult.model_validate(
            {"content": [{"type": "text", "text": "as is"}], "isError": False}
        )

    @tool()
    def raw_typed(self) -> Annotated[mt.CallToolResult, Weather]:
        return mt.CallToolResult.model_validate(
            {
                "content": [{"type": "text", "text": "typed as is"}],
                "structuredContent": {"city": "Rome", "temp_c": 30.0},
                "isError": False,
            }
        )

    @tool()
    def untyped(self):
        return [{"a": 1}, "b"]

    @tool()
    def busy(self) -> str:
        raise AgentEnvError("busy", "try later", retryable=True, hint="wait a second")

    @extension("urn:example:ping/v1")
    def ping(self, text: str) -> dict:
        if text == "conflict":
            raise AgentEnvError("conflict", "already there", applied="yes", status=409)
        if text == "crash":
            raise RuntimeError("boom")
        return {"pong": text}


if __name__ == "__main__":
    OptionsEnv().serve()
