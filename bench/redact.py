"""What adding a secret and redacting a record cost when a redactor already knows 1 or 100,000
secrets (43-character tokens, like the gateway's and the envs'), in one run:

- one redactor: `add()` of a new secret plus the first redaction after it (the add compiles
  lazily), then a redaction alone; the record is a trial-record-sized document (~2 KB of
  strings) holding one secret;
- layered, as a long-lived process runs: a run's redactor, and `--instances` task instances
  before this one that each added 3 secrets to their own `child()` and ended; then the same
  two figures for the next instance.

    .venv/bin/python bench/redact.py [--secrets 100000] [--instances 100000]

Medians of `--rounds` (default 50) timings, in microseconds.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import time

from agent_env.redact import Redactor


def record(secret: str) -> dict:
    return {
        "id": "ti-20261205072651-df3c26-00000",
        "status": "passed",
        "log": [f"step {i}: called echo_message with hi, answered in 12 ms" for i in range(20)],
        "outputs": {"env": {"url": "http://127.0.0.1:40000", "auth": f"?k={secret}"}},
        "steps": {f"s{i}": {"status": "done", "attempts": 1} for i in range(10)},
    }


def timed(op, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        op()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def figures(redactor: Redactor, rounds: int) -> tuple[float, float]:
    """(add + first redaction, redaction alone) in microseconds."""
    doc = record(secrets.token_urlsafe(32))

    def add_then_redact() -> None:
        token = secrets.token_urlsafe(32)
        redactor.add([token])
        redactor(doc)

    return timed(add_then_redact, rounds), timed(lambda: redactor(doc), rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--secrets", type=int, default=100_000)
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    print(f"{'case':<44}{'add+redact us':>15}{'redact us':>12}")
    for n in (1, args.secrets):
        start = time.perf_counter()
        one = Redactor(secrets.token_urlsafe(32) for _ in range(n))
        built = time.perf_counter() - start
        add, red = figures(one, args.rounds)
        print(
            f"{f'one redactor, {n} secrets':<44}{add:>15.1f}{red:>12.1f}   (built in {built:.2f} s)"
        )
    run = Redactor([secrets.token_urlsafe(32) for _ in range(5)])
    done = 0
    for target in (1, args.instances):
        start = time.perf_counter()
        while done < target:
            instance = run.child()
            instance.add([secrets.token_urlsafe(32) for _ in range(3)])
            instance(record("x"))
            instance.close()
            done += 1
        took = time.perf_counter() - start
        add, red = figures(run.child(), args.rounds)
        label = f"next instance after {done} instances"
        print(f"{label:<44}{add:>15.1f}{red:>12.1f}   (those took {took:.2f} s)")


if __name__ == "__main__":
    main()
