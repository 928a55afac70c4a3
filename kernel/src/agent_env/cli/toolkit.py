"""What a plugin's commands build on, in one public module: the CLI's helpers (a session per
command, signal handling, run output), the stored entities (catalog, export, put) and the run
records. Plugins import these names from here, never from the modules that define them, so
the kernel can move its internals (tests/test_public_api.py holds every plugin to it).

Each name loads its module on first use, so importing this module costs nothing.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

#: Public name -> (module, attribute).
_NAMES: dict[str, tuple[str, str]] = {
    # the CLI
    "with_session": ("agent_env.cli.session", "with_session"),
    "LazyGroup": ("agent_env.cli.lazy", "LazyGroup"),
    "guarded": ("agent_env.cli.signals", "guarded"),
    "err": ("agent_env.cli.commands.run_output", "err"),
    "EXIT_FAILED": ("agent_env.cli.commands.run_output", "EXIT_FAILED"),
    "EXIT_SIGNAL": ("agent_env.cli.commands.run_output", "EXIT_SIGNAL"),
    "observer": ("agent_env.cli.commands.run_trials", "observer"),
    "CliObserver": ("agent_env.cli.commands.run_trials", "CliObserver"),
    "echo": ("agent_env.cli.output", "echo"),
    "emit_json": ("agent_env.cli.output", "emit_json"),
    "table": ("agent_env.cli.output", "table"),
    "emit_rows": ("agent_env.cli.output", "emit_rows"),
    "paint": ("agent_env.cli.output", "paint"),
    "paint_rate": ("agent_env.cli.output", "paint_rate"),
    "install_hint": ("agent_env.plugins.known", "install_hint"),
    # exports of a run's trials (`agent_env.exports.ExportFormat`: `runs export`, `run --export`)
    "export_runs": ("agent_env.reporting.export", "export_runs"),
    # the results table `agent-env run` prints (`runs show` prints it for a stored run)
    "Results": ("agent_env.reporting.results", "Results"),
    "FINAL": ("agent_env.reporting.results", "FINAL"),
    "EXCLUDED": ("agent_env.reporting.results", "EXCLUDED"),
    "shown_ks": ("agent_env.reporting.results", "shown_ks"),
    "TaskInstanceRecord": ("agent_env.engine.records", "TaskInstanceRecord"),
    "TaskRef": ("agent_env.engine.records", "TaskRef"),
    "format_table": ("agent_env.reporting.results", "format_table"),
    "TABLE_WIDTH": ("agent_env.reporting.results", "TABLE_WIDTH"),
    # a session, the run pipeline and the records it writes
    "Session": ("agent_env.engine.run", "Session"),
    "load_record": ("agent_env.engine.run", "load_record"),
    "RunPipeline": ("agent_env.runs.pipeline", "RunPipeline"),
    "StoredRef": ("agent_env.runs.request", "StoredRef"),
    "read_run": ("agent_env.engine.stored", "read_run"),
    "as_run": ("agent_env.engine.stored", "as_run"),
    "run_records": ("agent_env.engine.stored", "run_records"),
    "Journal": ("agent_env.engine.journal", "Journal"),
    "replay": ("agent_env.engine.state", "replay"),
    "load_seed_table": ("agent_env.engine.seeds", "load_seed_table"),
    # stored entities
    "get_version": ("agent_env.entities.catalog", "get_version"),
    "uses_of": ("agent_env.stores.lineage", "uses_of"),
    # listing and showing them moved to agentenv-stored-entities (resolved from there)
    "list_entities": ("agentenv_stored_entities.catalog", "list_entities"),
    "show": ("agentenv_stored_entities.catalog", "show"),
    "export": ("agent_env.entities.export", "export"),
    "write_siblings": ("agent_env.entities.export", "write_siblings"),
    "empty_folder": ("agent_env.entities.export", "empty_folder"),
    "filled": ("agent_env.entities.export", "filled"),
    "stored_bundle": ("agent_env.entities.runnable", "stored_bundle"),
    "toml_dumps": ("agent_env.entities.toml_out", "dumps"),
    # bundle files and materialization
    "content_digest": ("agent_env.bundles.materialize", "content_digest"),
    "put_entity": ("agent_env.bundles.materialize", "put_entity"),
    "folder_id_prefix": ("agent_env.bundles.source", "folder_id_prefix"),
    "ResolvedSource": ("agent_env.bundles.model", "ResolvedSource"),
    "Problems": ("agent_env.bundles.files", "Problems"),
    "content_files": ("agent_env.bundles.files", "content_files"),
    "duplicate_keys": ("agent_env.bundles.files", "duplicate_keys"),
    "load_json": ("agent_env.bundles.files", "load_json"),
    "load_toml": ("agent_env.bundles.files", "load_toml"),
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    target = _NAMES.get(name)
    if target is None:
        raise AttributeError(f"module 'agent_env.cli.toolkit' has no attribute {name!r}")
    try:
        module = import_module(target[0])
    except ModuleNotFoundError as exc:
        top = target[0].partition(".")[0]
        if top == "agent_env" or exc.name is None or exc.name.partition(".")[0] != top:
            raise
        dist = top.replace("_", "-")
        raise AttributeError(
            f"agent_env.cli.toolkit.{name} comes with {dist}; install it with: pip install {dist}"
        ) from None
    value = getattr(module, target[1])
    globals()[name] = value
    return value
