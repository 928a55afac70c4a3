"""A scratchpad env: `write` keeps a line, `read` gives it back; the data plane resets it."""

from agentenv_protocol import AgentEnvEnvironment, environment_card, reset_data, tool


@environment_card(name="scratchpad")
class Scratchpad(AgentEnvEnvironment):
    def __init__(self):
        self.lines: list[str] = []

    @tool()
    def write(self, text: str) -> dict:
        """Write one line on the pad."""
        self.lines.append(text)
        return {"lines": len(self.lines)}

    @tool()
    def read(self) -> list:
        """Every line written so far."""
        return list(self.lines)

    @reset_data
    def reset(self) -> None:
        self.lines.clear()


if __name__ == "__main__":
    Scratchpad().serve()
