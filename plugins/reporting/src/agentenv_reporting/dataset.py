"""`agent-env runs export RUN... --to DEST`: the export written as a dataset folder (a README.md
card naming the data file as the `train` split, and `data/train-00000-of-00001<suffix>`), then
handed to the plugin that pushes datasets to DEST (`agentenv_push_dataset`; hf-hub claims
`hf://`)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from agent_env.errors import AgentEnvError
from agent_env.exports import ExportFormat

#: Where the data file goes in the dataset (the Hub's file naming for a one-file split).
DATA_FILE = "data/train-00000-of-00001"


def card(fmt: ExportFormat, run_ids: list[str], rows: int) -> str:
    """The dataset card: YAML front matter declaring the data file (so `datasets.load_dataset`
    on the repo finds the split), and what the rows are."""
    return (
        "---\n"
        "configs:\n"
        "- config_name: default\n"
        "  data_files:\n"
        "  - split: train\n"
        f"    path: {DATA_FILE}{fmt.suffix}\n"
        "tags:\n"
        "- agent-env\n"
        "---\n\n"
        "# agent-env trials\n\n"
        f"{rows} trial(s) of {', '.join(run_ids)}, exported with `agent-env runs export "
        f"--format {fmt.type}`: {fmt.description}.\n"
    )


def no_pusher(destination: str) -> AgentEnvError:
    """The error for a destination no installed plugin pushes to (with the install hint)."""
    from agent_env.cli.toolkit import install_hint

    scheme = destination.partition("://")[0] if "://" in destination else ""
    hint = install_hint("dataset destination", scheme) if scheme else None
    how = f"; install it with: {hint}" if hint else " (hf://ORG/REPO needs agentenv-hf-hub)"
    return AgentEnvError(f"--to {destination}: no installed plugin pushes datasets there{how}")


async def push(
    stores: Any,
    runs: list[Any],
    *,
    fmt: ExportFormat,
    destination: str,
    message: str | None = None,
    attempts: bool = False,
) -> dict[str, Any]:
    """Export `runs` in `fmt` into a dataset folder and push it to `destination`; what the
    pushing plugin answered plus `rows`."""
    import anyio

    from agent_env.cli.toolkit import export_runs
    from agent_env.plugins import get_plugin_manager

    with tempfile.TemporaryDirectory(prefix="agentenv-dataset-") as tmp:
        folder = Path(tmp)
        data = folder / f"{DATA_FILE}{fmt.suffix}"
        data.parent.mkdir(parents=True)
        with open(data, "wb") as out:
            rows = await export_runs(stores, fmt, runs, out, attempts=attempts)
        (folder / "README.md").write_text(card(fmt, [r.id for r in runs], rows))
        plugins = get_plugin_manager()
        text = message or f"agent-env runs export {' '.join(r.id for r in runs)}"
        done = await anyio.to_thread.run_sync(plugins.push_dataset, folder, destination, text)
    if done is None:
        raise no_pusher(destination)
    return {**done, "rows": rows}
