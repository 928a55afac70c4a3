"""A stateful notes store: tools to write and read notes, and the data plane to seed, reset and
export them (what a task's load/verify steps use)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agentenv_protocol import (
    AgentEnvEnvironment,
    AgentEnvError,
    DataPart,
    ToolContext,
    add_data,
    environment_card,
    extension,
    get_data,
    reset_data,
    tool,
)


@environment_card(name="notes")
class NotesEnv(AgentEnvEnvironment):
    def __init__(self) -> None:
        self.notes: dict[str, dict] = {}

    @tool()
    def add_note(
        self, title: Annotated[str, Field(description="Unique title")], body: str, ctx: ToolContext
    ) -> dict:
        """Create a note; fails if the title is taken."""
        if title in self.notes:
            raise AgentEnvError("conflict", f"a note titled {title!r} already exists")
        self.notes[title] = {"title": title, "body": body, "author": ctx.role}
        return {"created": title, "count": len(self.notes)}

    @tool()
    def read_note(self, title: str) -> dict:
        """Read one note by title."""
        if title not in self.notes:
            raise AgentEnvError("not_found", f"no note titled {title!r}")
        return self.notes[title]

    @tool()
    def list_notes(self) -> list:
        """List the titles of all notes."""
        return sorted(self.notes)

    @reset_data
    def reset(self) -> None:
        self.notes.clear()

    @add_data
    def load(self, parts: list) -> None:
        for part in parts:
            if part.kind != "data":
                raise AgentEnvError(
                    "unsupported_part", f"notes accepts data parts, got {part.kind!r}"
                )
            for note in part.data.get("notes", []):
                self.notes[note["title"]] = {
                    "title": note["title"],
                    "body": note.get("body", ""),
                    "author": note.get("author"),
                }

    @get_data
    def export(self) -> list:
        return [DataPart(data={"notes": [self.notes[t] for t in sorted(self.notes)]})]

    @extension("urn:agentenv:example-stats/v1", description="Counts of stored notes.", method="GET")
    def stats(self, prefix: str = "") -> dict:
        return {"count": sum(1 for t in self.notes if t.startswith(prefix))}


def main() -> None:
    NotesEnv().serve()


if __name__ == "__main__":
    main()
