"""An env whose tools misbehave on purpose (exit, interrupt, block, hang), served as a real
process by test_robustness.py: `python hostile_env.py` on MCP_HOST:MCP_PORT."""

from __future__ import annotations

import asyncio
import threading
import time

from agentenv_protocol import AgentEnvEnvironment, ToolContext, environment_card, get_data, tool

_released = threading.Event()


@environment_card(name="hostile")
class HostileEnv(AgentEnvEnvironment):
    @tool()
    def exit_server(self) -> str:
        """Raise SystemExit inside the tool."""
        raise SystemExit(3)

    @tool()
    async def interrupt(self) -> str:
        """Raise KeyboardInterrupt inside an async tool."""
        raise KeyboardInterrupt

    @tool()
    def block(self, seconds: float = 30.0) -> str:
        """Block its thread (a sync tool doing slow I/O) until released or `seconds` pass."""
        _released.wait(seconds)
        return "unblocked"

    @tool()
    def release(self) -> str:
        """Release every blocked call."""
        _released.set()
        return "released"

    @tool()
    async def hang(self, seconds: float = 60.0) -> str:
        """Never answer in time."""
        await asyncio.sleep(seconds)
        return "late"

    @tool()
    def who(self, ctx: ToolContext) -> dict:
        """The caller as a sync tool (in a worker thread) sees it."""
        return {
            "role": ctx.role,
            "current_role": ToolContext.current().role,
            "thread": threading.current_thread().name,
        }

    @tool()
    def echo(self, text: str) -> str:
        """Return the text unchanged."""
        return text

    @tool()
    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @get_data
    def snapshot(self) -> list:
        return [{"kind": "text", "text": f"up since {time.time():.0f}"}]


if __name__ == "__main__":
    HostileEnv().serve()
