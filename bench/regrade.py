"""Regrade against rerunning (figures, not pass/fail).

Run: .venv/bin/python bench/regrade.py [--trials 10000] [--rerun 4]
In a scratch AGENT_ENV_HOME: one oracle run of examples/notes-agent (local sandbox) gives a
real trial record; N copies of it (every third one without its `add_note` call, so verdicts
differ) are written straight into the document store through the store API as one run. Then,
interleaved in one process: rerunning R trials through the whole pipeline (`agent-env run
--agent oracle`: env deployed, agent prompted, verifiers run), `agent-env runs regrade` of the
N stored trials with a verifier file (tool_call_verifier + agent_prompt_response_verifier +
call_reward_verifier, which read only the record), and the rerun again. Printed: wall time,
CPU of each process tree, seconds per trial, trials per second, the ratio of a rerun trial to a
regraded one, the forks the machine made during each step (/proc/stat, other users'
included), the processes that outlived each command (reaped within 2 s) and those still
running then (killed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))
from _proctree import become_subreaper, run_tree  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
AGENT_ENV = str(Path(sys.executable).parent / "agent-env")
VERIFIERS = [
    {
        "id": "calls",
        "type": "tool_call_verifier",
        "prompt_id": "ask",
        "verifier_id": "tool-calls",
        "criteria": [
            {"id": "added", "type": "tool_called", "tool": "add_note"},
            {"id": "listed-first", "type": "tool_call_count", "tool": "list_notes", "max": 1},
        ],
    },
    {
        "id": "answer",
        "type": "agent_prompt_response_verifier",
        "prompt_id": "ask",
        "verifier_id": "answer",
        "criteria": [{"id": "said", "type": "response_regex_present", "pattern": "groceries"}],
    },
    {
        "id": "steps",
        "type": "call_reward_verifier",
        "prompt_id": "ask",
        "verifier_id": "per-call",
        "rules": [{"error": True, "score": 0.0}],
        "default": 1.0,
    },
]


def forks() -> int:
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("processes "):
                return int(line.split()[1])
    return 0


def rerun(env: dict[str, str], trials: int) -> tuple[float, object, int]:
    before = forks()
    tree = run_tree(
        [
            AGENT_ENV,
            "run",
            str(ROOT / "examples/notes-agent"),
            "--agent",
            "oracle",
            "--sandbox",
            "local",
            "--trials",
            str(trials),
        ],
        env,
        linger=2.0,
    )
    assert tree.exit_code == 0, f"the oracle run failed ({tree.exit_code})"
    return tree.wall_ms / 1000, tree, forks() - before


async def seed(home: Path, n: int) -> tuple[str, float]:
    """Write `n` copies of the scratch home's one stored trial as one run; (run id, seconds)."""
    from agent_env.results import RUNS, TRIALS, open_configured_stores

    stores = await open_configured_stores()
    try:
        docs = stores.documents
        (_, template), *_ = (await docs.query(TRIALS, limit=1)).items
        (_, run_template), *_ = (await docs.query(RUNS, limit=1)).items
        run_id = "run-20260101000000-bench0"
        stamp = run_id.removeprefix("run-")
        started = time.perf_counter()
        ids = []
        for i in range(n):
            doc = json.loads(json.dumps(template))
            doc.update(id=f"ti-{stamp}-{i:05d}", run_id=run_id, trial=i)
            if i % 3 == 2:  # this agent never saved the note
                ask = doc["outputs"]["ask"]
                ask["tool_calls"] = [c for c in ask["tool_calls"] if c["tool"] != "add_note"]
            await docs.put(TRIALS, doc["id"], doc)
            ids.append(doc["id"])
        run_doc = dict(run_template)
        run_doc.update(
            id=run_id,
            instances=ids,
            tasks=["groceries"] * n,
            trial_index=list(range(n)),
            trials=n,
        )
        await docs.put(RUNS, run_id, run_doc)
        return run_id, time.perf_counter() - started
    finally:
        await stores.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--rerun", type=int, default=4)
    args = parser.parse_args()
    become_subreaper()
    with tempfile.TemporaryDirectory(prefix="bench-regrade-") as scratch:
        home = Path(scratch) / "home"
        env = {**os.environ, "AGENT_ENV_HOME": str(home)}
        os.environ["AGENT_ENV_HOME"] = str(home)
        verifiers = Path(scratch) / "verifiers.json"
        verifiers.write_text(json.dumps(VERIFIERS))
        print(f"cores: {os.cpu_count()}  trials stored: {args.trials}  rerun trials: {args.rerun}")
        first_wall, first_tree, first_forks = rerun(env, 1)
        print(f"template oracle run (1 trial): {first_wall:.2f} s wall")
        run_id, seeded = anyio.run(seed, home, args.trials)
        print(
            f"wrote {args.trials} trial records via the store API: {seeded:.2f} s "
            f"({args.trials / seeded:.0f}/s)"
        )
        results = []
        for label in ("rerun", "regrade", "rerun"):
            if label == "rerun":
                wall, tree, made = rerun(env, args.rerun)
                per = wall / args.rerun
                print(
                    f"rerun  {args.rerun:>6} trials: {wall:8.2f} s wall, tree CPU "
                    f"{tree.tree_cpu_ms / 1000:7.2f} s, {per * 1000:9.1f} ms/trial, "
                    f"forks {made}, outlived it {tree.outlived}, killed {tree.left_running}"
                )
                results.append(("rerun", per))
                continue
            before = forks()
            out = Path(scratch) / "regrade.json"
            with open(out, "wb") as sink:
                tree = run_tree(
                    [AGENT_ENV, "runs", "regrade", run_id, "--verifier", str(verifiers), "--json"],
                    env,
                    linger=2.0,
                    stdout=sink,
                    stderr=subprocess.DEVNULL,
                )
            made = forks() - before
            assert tree.exit_code == 0, f"regrade failed ({tree.exit_code})"
            summary = json.loads(out.read_text())
            wall = tree.wall_ms / 1000
            per = wall / summary["trials"]
            print(
                f"regrade {summary['trials']:>6} trials: {wall:8.2f} s wall, tree CPU "
                f"{tree.tree_cpu_ms / 1000:7.2f} s, {per * 1000:9.3f} ms/trial, "
                f"{summary['trials'] / wall:7.0f} trials/s, forks {made}, outlived it "
                f"{tree.outlived}, killed {tree.left_running}; passed {summary['passed_before']} -> "
                f"{summary['passed_after']}, flipped {summary['flipped']}"
            )
            results.append(("regrade", per))
        reruns = [p for k, p in results if k == "rerun"]
        regraded = [p for k, p in results if k == "regrade"][0]
        mean_rerun = sum(reruns) / len(reruns)
        print(
            f"rerun per trial (mean of {len(reruns)}): {mean_rerun * 1000:.1f} ms; regrade per "
            f"trial: {regraded * 1000:.3f} ms; ratio rerun/regrade: {mean_rerun / regraded:.0f}x"
        )
        print(
            f"{args.trials} trials regraded in {regraded * args.trials:.1f} s "
            f"(target < 60 s on 2 cores)"
        )


if __name__ == "__main__":
    main()
