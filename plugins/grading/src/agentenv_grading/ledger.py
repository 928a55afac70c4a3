"""The task ledger: per task version, across runs, how trials went. One row per finished trial
(its id, task id/name/version, run, agent, model, status, failure class, score), written by the
`run_finished` hook as trials finish (a replaced record, a resume or retry, replaces its row),
and the health checks' findings. Aggregates are computed by SQLite when asked.

Counted trials: every finished trial except cancelled ones and infrastructure failures (not the
task's doing). Pass rate: passed / counted trials of the agents that try to solve the task, with
a Wilson 95% interval; the oracle (it replays the shipped solution), the do-nothing agent
(the health check's) and `runs replay`'s agent are listed per agent but left out of it. Flaky: one agent+model both
passed and failed the same task version.

The ledger is a SQLite file under the agent-env home (`grading/ledger.sqlite`, WAL mode, one
transaction per write, so concurrent runs on a host share it). A run on other hosts (the Ray
runner's workers) writes to theirs: `agent-env tasks ledger --rebuild` re-reads every trial
record from the configured document store, the source of truth.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FILE = ("grading", "ledger.sqlite")
SCHEMA = """
CREATE TABLE IF NOT EXISTS trials (
    instance_id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    task_name TEXT NOT NULL,
    task_version INTEGER,
    run_id TEXT,
    agent TEXT,
    model TEXT,
    status TEXT NOT NULL,
    failure_class TEXT,
    score REAL,
    finished_at TEXT
);
CREATE INDEX IF NOT EXISTS trials_task ON trials (task_id, task_version);
CREATE TABLE IF NOT EXISTS health (
    task_id TEXT NOT NULL,
    task_version INTEGER NOT NULL DEFAULT -1,
    task_name TEXT NOT NULL,
    solvable INTEGER,
    passes_without_work INTEGER,
    detail TEXT NOT NULL,
    checked_at TEXT NOT NULL,
    PRIMARY KEY (task_id, task_version)
);
"""
#: Statuses a finished trial can have; `cancelled` is never counted.
FINISHED = ("passed", "scored_below", "unscored", "failed")


def ledger_path(home: Path | None = None) -> Path:
    from agent_env.paths import home as agent_env_home

    return (home or agent_env_home()).joinpath(*FILE)


#: One open connection per ledger file in this process: opening the file and closing its last
#: connection (a WAL checkpoint, with an fsync) per finished trial cost tens of milliseconds.
_OPEN: dict[tuple[Path, int], sqlite3.Connection] = {}
_LOCK = threading.Lock()


def _open(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30, check_same_thread=False)
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode=WAL")
    # as the document store: durable across process crashes, no fsync per trial
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(SCHEMA)
    return conn


@contextmanager
def connect(path: Path | None = None) -> Iterator[sqlite3.Connection]:
    """The ledger's connection, held alone for the block (a transaction: committed at its
    end, rolled back on an error)."""
    path = path or ledger_path()
    key = (path, os.getpid())
    with _LOCK:
        conn = _OPEN.get(key)
        if conn is None or not path.exists():  # a deleted ledger starts afresh
            if conn is not None:
                conn.close()
            conn = _OPEN[key] = _open(path)
        with conn:
            yield conn


def _version(value: Any) -> int:
    """Versions are keys: an unversioned task (a record without one) is version -1."""
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else -1


def trial_row(record: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The ledger row of a trial record, None when it is not finished or was regraded (a
    regrade re-scores trials the ledger already counts)."""
    status = str(record.get("status"))
    task = record.get("task") or {}
    if status not in FINISHED or record.get("regraded_from") or not task.get("name"):
        return None
    scores = [s for s in (record.get("scores") or {}).values() if isinstance(s, (int, float))]
    score = 0.0 if status == "failed" else (sum(scores) / len(scores) if scores else None)
    return (
        str(record.get("id")),
        str(task.get("id") or task.get("name")),
        str(task.get("name")),
        _version(task.get("version")),
        record.get("run_id"),
        record.get("agent"),
        record.get("model"),
        status,
        record.get("failure_class"),
        score,
        record.get("finished_at"),
    )


def add_trials(records: Iterable[Mapping[str, Any]], path: Path | None = None) -> int:
    """Record finished trials (a trial already there is replaced); how many were recorded."""
    rows = [row for row in map(trial_row, records) if row is not None]
    if not rows:
        return 0
    with connect(path) as conn:
        conn.executemany("INSERT OR REPLACE INTO trials VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
    return len(rows)


def record_health(
    task_id: str,
    task_version: Any,
    task_name: str,
    *,
    solvable: bool | None,
    passes_without_work: bool | None,
    detail: Mapping[str, Any],
    path: Path | None = None,
) -> None:
    with connect(path) as conn:
        conn.execute(
            "INSERT OR REPLACE INTO health VALUES (?,?,?,?,?,?,?)",
            (
                task_id,
                _version(task_version),
                task_name,
                None if solvable is None else int(solvable),
                None if passes_without_work is None else int(passes_without_work),
                json.dumps(dict(detail)),
                datetime.now(UTC).isoformat(timespec="seconds"),
            ),
        )


#: Agents whose trials say nothing about how hard a task is (listed, not in the pass rate).
PROBES = ("oracle", "do-nothing", "replay")
COUNTED_SQL = (
    "status IN ('passed','scored_below','unscored','failed') "
    "AND COALESCE(failure_class, '') != 'infrastructure'"
)
RATED_SQL = f"{COUNTED_SQL} AND COALESCE(agent, '') NOT IN ({', '.join(map(repr, PROBES))})"


def entries(task: str | None = None, path: Path | None = None) -> list[dict[str, Any]]:
    """One entry per task version (newest versions first within a task), optionally only the
    task whose name or id is `task`: trials, passes, pass rate and its interval, flakiness,
    the agents that tried it and the last health check."""
    from agent_env.results import wilson_interval

    where, params = ("WHERE task_name = ? OR task_id = ?", (task, task)) if task else ("", ())
    with connect(path) as conn:
        groups = conn.execute(
            "SELECT task_id, task_version, task_name, agent, model, "
            f"SUM(CASE WHEN {COUNTED_SQL} THEN 1 ELSE 0 END), "
            f"SUM(CASE WHEN {COUNTED_SQL} AND status = 'passed' THEN 1 ELSE 0 END), "
            "COUNT(DISTINCT run_id) "
            f"FROM trials {where} GROUP BY task_id, task_version, agent, model "
            "ORDER BY task_name, task_id, task_version DESC, agent, model",
            params,
        ).fetchall()
        health = {
            (row[0], row[1]): row
            for row in conn.execute(
                "SELECT task_id, task_version, solvable, passes_without_work, detail, checked_at "
                "FROM health"
            )
        }
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for task_id, version, name, agent, model, counted, passed, runs in groups:
        entry = out.setdefault(
            (task_id, version),
            {
                "task": name,
                "task_id": task_id,
                "task_version": None if version == -1 else version,
                "trials": 0,
                "passed": 0,
                "agents": [],
            },
        )
        if agent not in PROBES:
            entry["trials"] += counted
            entry["passed"] += passed
        entry["agents"].append(
            {
                "agent": agent,
                "model": model,
                "trials": counted,
                "passed": passed,
                "runs": runs,
                "flaky": 0 < passed < counted,
            }
        )
    for (task_id, version), entry in out.items():
        n, k = entry["trials"], entry["passed"]
        interval = wilson_interval(k, n)
        entry["pass_rate"] = k / n if n else None
        entry["interval"] = list(interval) if interval else None
        entry["flaky"] = any(a["flaky"] for a in entry["agents"])
        entry["health"] = _health(health.get((task_id, version)))
    return list(out.values())


def _health(row: Any) -> dict[str, Any] | None:
    if row is None:
        return None
    _, _, solvable, trivial, detail, checked_at = row
    return {
        "solvable": None if solvable is None else bool(solvable),
        "passes_without_work": None if trivial is None else bool(trivial),
        "checked_at": checked_at,
        **json.loads(detail),
    }


def pass_rates(task_ids: Iterable[str], path: Path | None = None) -> dict[str, float | None]:
    """The ledger's pass rate of each task id over all its versions' counted trials (None: no
    counted trial yet), for samplers."""
    ids = list(task_ids)
    rates: dict[str, float | None] = dict.fromkeys(ids)
    if not ids:
        return rates
    marks = ",".join("?" * len(ids))
    with connect(path) as conn:
        for task_id, counted, passed in conn.execute(
            f"SELECT task_id, SUM(CASE WHEN {RATED_SQL} THEN 1 ELSE 0 END), "
            f"SUM(CASE WHEN {RATED_SQL} AND status = 'passed' THEN 1 ELSE 0 END) "
            f"FROM trials WHERE task_id IN ({marks}) GROUP BY task_id",
            ids,
        ):
            rates[task_id] = passed / counted if counted else None
    return rates
