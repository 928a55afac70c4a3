"""Installing and removing plugins safely (`agent-env plugin add|remove`).

`environment` (which installer owns the running Python; PEP 668 and read-only refusals),
`specs` (what a SPEC names; agent-env's own distributions), `installers` (the commands),
`lock` (one change per environment at a time), `snapshot`/`probe` (what is installed, seen
from a fresh interpreter), `add`, `remove`, `usage` (who uses a plugin), `rollback` and
`transaction`; `commands` holds the two click commands, `hooks` adds them to `agent-env plugin`.
The package imports nothing itself, so loading `hooks` stays cheap.
"""
