"""A notes store: the tools an agent uses, and the data plane a task seeds and exports."""

from agentenv_protocol import (
    AgentEnvEnvironment,
    AgentEnvError,
    DataPart,
    add_data,
    environment_card,
    get_data,
    reset_data,
    tool,
)


@environment_card(name="notes")
class Notes(AgentEnvEnvironment):
    def __init__(self):
        self.notes = {"draft": "ideas for the weekend"}

    @tool()
    def add_note(self, title: str, body: str) -> dict:
        """Create a note; fails if the title is taken."""
        if title in self.notes:
            raise AgentEnvError("conflict", f"a note titled {title!r} already exists")
        self.notes[title] = body
        return {"created": title, "count": len(self.notes)}

    @tool()
    def read_note(self, title: str) -> str:
        """Read one note by title."""
        if title not in self.notes:
            raise AgentEnvError("not_found", f"no note titled {title!r}")
        return self.notes[title]

    @tool()
    def list_notes(self) -> list:
        """The titles of all notes."""
        return sorted(self.notes)

    @tool()
    def delete_note(self, title: str) -> dict:
        """Delete a note by title."""
        if self.notes.pop(title, None) is None:
            raise AgentEnvError("not_found", f"no note titled {title!r}")
        return {"deleted": title}

    @reset_data
    def reset(self) -> None:
        self.notes.clear()

    @add_data
    def load(self, parts: list) -> None:
        for part in parts:
            for note in part.data.get("notes", []):
                self.notes[note["title"]] = note.get("body", "")

    @get_data
    def export(self) -> list:
        return [
            DataPart(
                data={"notes": [{"title": t, "body": b} for t, b in sorted(self.notes.items())]}
            )
        ]


if __name__ == "__main__":
    Notes().serve()
