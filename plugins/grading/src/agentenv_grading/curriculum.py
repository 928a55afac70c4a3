"""The built-in split sampler: `band:LOW-HIGH` samples, uniformly, the tasks whose ledger pass
rate lies in [LOW, HIGH] (tasks with no rated trial yet count as in the band: nothing is known
about them); when none does, the tasks nearest the band. A pass-rate band curriculum: tasks an
agent always solves or never solves teach it little."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

PREFIX = "band:"


def parse_band(sampler: str) -> tuple[float, float] | None:
    """(low, high) of `band:LOW-HIGH`; None for another sampler; ValueError for a bad band."""
    if not sampler.startswith(PREFIX):
        return None
    text = sampler[len(PREFIX) :]
    low_text, sep, high_text = text.partition("-")
    try:
        low, high = float(low_text), float(high_text)
    except ValueError:
        low = high = -1.0
    if not sep or not 0 <= low <= high <= 1:
        raise ValueError(
            f"sampler {sampler!r}: write band:LOW-HIGH with 0 <= LOW <= HIGH <= 1 "
            "(e.g. band:0.2-0.8)"
        )
    return low, high


def distance(rate: float | None, low: float, high: float) -> float:
    if rate is None:
        return 0.0
    return max(low - rate, rate - high, 0.0)


def pick_in_band(
    tasks: Sequence[str],
    rates: Mapping[str, float | None],
    low: float,
    high: float,
    rng: random.Random | None = None,
) -> int:
    """The index of a task in the band (or nearest it), drawn uniformly."""
    gaps = [distance(rates.get(t), low, high) for t in tasks]
    best = min(gaps)
    candidates = [i for i, gap in enumerate(gaps) if gap == best]
    return (rng or random).choice(candidates)


def sample(sampler: str, tasks: Sequence[str]) -> int | None:
    """The hook's answer: an index into `tasks` for a band sampler, None for another."""
    band = parse_band(sampler)
    if band is None or not tasks:
        return None
    from agentenv_grading import ledger

    return pick_in_band(tasks, ledger.pass_rates(tasks), *band)
