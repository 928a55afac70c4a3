"""The built-in `local` sandbox provider: a work folder plus host processes, no isolation.

Layout under `<home>/sandboxes/`: `<id>/` is the work folder (the sandbox's `/app`) and
`<id>.meta/` holds `state.json` (labels and every tracked process) and server logs.

Path mapping (`paths`): a sandbox path `/app[/...]` or a relative path maps into the work
folder; any other absolute path is refused (the host's own `/tmp` or `/etc` are not the
sandbox's). For commands, the working directory is the folder, every standalone `/app` in the
command string, its arguments and env values is rewritten to the folder path, and `APP_DIR`
holds it. Processes (`process`, `exec`) inherit the host environment plus the spec's
`env_vars`, and carry `AGENTENV_SANDBOX=<id>` so teardown also finds processes that left their
process group.

Limits it cannot enforce (image, cpus, memory, pids, network "none") are refused with
`SandboxError` rather than ignored (`provider`). The sandbox itself is in `sandbox`.
"""

from __future__ import annotations

from agent_env.net import free_port
from agent_env.sandboxes.local.process import (
    MARKER_ENV,
    LocalProcess,
    tail_file,
)
from agent_env.sandboxes.local.provider import LocalProvider, owner_alive
from agent_env.sandboxes.local.sandbox import MAX_OUTPUT, TIMEOUT_EXIT_CODE, LocalSandbox

__all__ = [
    "MARKER_ENV",
    "MAX_OUTPUT",
    "TIMEOUT_EXIT_CODE",
    "LocalProcess",
    "LocalProvider",
    "LocalSandbox",
    "free_port",
    "owner_alive",
    "tail_file",
]
