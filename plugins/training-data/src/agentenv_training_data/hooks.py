"""agent-env hooks of the training-data plugin: the `chat-jsonl` and `parquet` export formats
(imported only when `runs export --format` uses them)."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"


@hookimpl
def agentenv_register_export_formats(registry):
    registry.add_lazy(
        "chat-jsonl", "agentenv_training_data.formats:ChatJsonl", suffix=".jsonl", binary=False
    )
    registry.add_lazy(
        "parquet", "agentenv_training_data.formats:ChatParquet", suffix=".parquet", binary=True
    )
