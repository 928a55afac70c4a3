"""`agent-env runs`: the group the commands over recorded runs join (run documents every front
end writes through the run pipeline). Plugins add them: agentenv-reporting's `list`, `show`,
`export` and `compare`, agentenv-grading's `regrade` and `replay`."""

from __future__ import annotations

import click

from agent_env.cli.lazy import ExtensibleGroup


@click.group(cls=ExtensibleGroup)
def runs() -> None:
    """List and inspect past runs (records in the document store)."""
