"""Export formats: how `agent-env runs export RUN... --format NAME` writes a run's trials.

Public API: a plugin subclasses `ExportFormat` and registers it through
`agentenv_register_export_formats`. The kernel reads each trial's stored record and the agent
trajectories its prompts stored (`TrialExport`), one trial at a time, and hands them to the
format's `write`, which writes one file (to stdout for a text format when no file is given).
The kernel's own format, `rows`, is the flat JSON line per trial that `runs export` always
wrote; the chat (training-data) formats come from `agentenv-training-data`.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from typing import IO, Any, ClassVar

import attrs


@attrs.frozen(kw_only=True)
class TrialExport:
    """One trial as a format gets it: its stored record (the `task_instances` document), its
    flat row (`runs export --format rows`: ids, scores, failure class, timings, costs) and the
    trajectory documents its `prompt_agent` steps stored, in step order (each `{prompt_id,
    agent_name, agent_type, model, system_prompt, prompt, response, usage, events,
    gateway_calls}`; `{prompt_id, missing}` when the object is gone)."""

    record: dict[str, Any]
    row: dict[str, Any]
    trajectories: list[dict[str, Any]] = attrs.field(factory=list)


class ExportFormat(abc.ABC):
    """A file format for a run's trials, keyed by `type` (the `--format` name)."""

    type: ClassVar[str] = ""
    #: One line for `runs export --help` and the docs.
    description: ClassVar[str] = ""
    #: The file name ending a push to the Hub gives the data file (`.jsonl`, `.parquet`).
    suffix: ClassVar[str] = ".jsonl"
    #: True for a binary format (written to a file, never to a terminal's stdout).
    binary: ClassVar[bool] = False
    #: False for a format that needs only the records (the trajectories are not read).
    needs_trajectories: ClassVar[bool] = True

    @abc.abstractmethod
    async def write(self, trials: AsyncIterator[TrialExport], out: IO[bytes]) -> int:
        """Write every trial to `out` (a binary stream); the number of rows written."""
