"""The export formats: `chat-jsonl` (one training row per line) and `parquet` (the same rows,
one Parquet file, written in row groups of `BATCH` so memory stays flat in the trials)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import IO, Any, ClassVar

from agent_env.exports import ExportFormat, TrialExport
from agentenv_training_data.rows import COLUMNS, training_row

#: Rows per Parquet row group.
BATCH = 512


class ChatJsonl(ExportFormat):
    type: ClassVar[str] = "chat-jsonl"
    description: ClassVar[str] = (
        "one JSON line per trial: the conversation as OpenAI chat messages (tool calls and "
        "tool results matched by id), task id and version, seed, per-verifier scores, reward, "
        "failure class, per-step rewards, timings and costs"
    )
    suffix: ClassVar[str] = ".jsonl"

    async def write(self, trials: AsyncIterator[TrialExport], out: IO[bytes]) -> int:
        count = 0
        async for trial in trials:
            out.write((json.dumps(training_row(trial), default=str) + "\n").encode())
            count += 1
        return count


class ChatParquet(ExportFormat):
    type: ClassVar[str] = "parquet"
    description: ClassVar[str] = "the chat-jsonl rows as one Parquet file"
    suffix: ClassVar[str] = ".parquet"
    binary: ClassVar[bool] = True

    async def write(self, trials: AsyncIterator[TrialExport], out: IO[bytes]) -> int:
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = parquet_schema()
        count = 0
        with pq.ParquetWriter(out, schema) as writer:
            batch: list[dict[str, Any]] = []
            async for trial in trials:
                batch.append(training_row(trial))
                count += 1
                if len(batch) >= BATCH:
                    writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                    batch = []
            if batch or count == 0:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
        return count


def parquet_schema() -> Any:
    """The rows' Arrow schema (`rows.COLUMNS`, in order)."""
    import pyarrow as pa

    string, number = pa.string(), pa.float64()
    call = pa.struct(
        [
            ("id", string),
            ("type", string),
            ("function", pa.struct([("name", string), ("arguments", string)])),
        ]
    )
    message = pa.struct(
        [
            ("role", string),
            ("content", string),
            ("tool_calls", pa.list_(call)),
            ("tool_call_id", string),
        ]
    )
    types = {
        "task_version": pa.int64(),
        "trial": pa.int64(),
        "attempt": pa.int64(),
        "messages": pa.list_(message),
        "missing_trajectories": pa.list_(pa.struct([("prompt_id", string), ("reason", string)])),
        "scores": pa.list_(pa.struct([("verifier", string), ("score", number)])),
        "reward": number,
        "passed": pa.bool_(),
        "step_rewards": pa.list_(
            pa.struct([("call_index", pa.int64()), ("score", number), ("verifier", string)])
        ),
        "seconds": number,
        "prompt_tokens": pa.int64(),
        "completion_tokens": pa.int64(),
        "total_tokens": pa.int64(),
        "sandbox_seconds": pa.list_(pa.struct([("provider", string), ("seconds", number)])),
        "cost_usd": number,
    }
    return pa.schema([(name, types.get(name, string)) for name in COLUMNS])
