"""The statistics an eval report quotes: pass@k (the unbiased estimator), the Wilson score
interval for a pass rate and the Student t interval for a mean score, all at 95%.

Pure functions of counts and sums, so a run can aggregate thousands of trials in constant memory.
"""

from __future__ import annotations

import math

#: The standard normal quantile for a two-sided 95% interval.
Z95 = 1.959963984540054

#: Two-sided 95% Student t quantiles (t_{0.975, df}) for df = 1..30; larger df use the
#: Cornish-Fisher expansion around Z95 (error below 1e-4 there).
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip


#: Up to this many trials pass@k uses exact binomials.
EXACT_UP_TO = 1000


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of k trials drawn without replacement from n trials with c
    passes passes: 1 - C(n-c, k) / C(n, k) (Chen et al. 2021). Needs 1 <= k <= n."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    if n <= EXACT_UP_TO:
        return 1.0 - math.comb(n - c, k) / math.comb(n, k)
    # the same ratio through log-gamma: exact big-integer binomials of 100,000 trials take
    # milliseconds each (a run page asks dozens); this is constant time, relative error ~1e-10
    log_ratio = (
        math.lgamma(n - c + 1)
        - math.lgamma(n - c - k + 1)
        - math.lgamma(n + 1)
        + math.lgamma(n - k + 1)
    )
    return 1.0 - math.exp(log_ratio)


def wilson_interval(passes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval for a pass rate (well-behaved at 0 and n passes); None for n=0."""
    if n <= 0:
        return None
    p = passes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


def t_quantile_975(df: int) -> float:
    """t_{0.975, df}: the multiplier of the standard error for a two-sided 95% interval."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z, v = Z95, float(df)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4)
    )


class Moments:
    """Running count, mean and sum of squared deviations (Welford), for the t interval, plus
    the smallest and largest value (the interval never leaves [0, 1] when they are inside)."""

    __slots__ = ("hi", "lo", "m2", "mean", "n")

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.lo = math.inf
        self.hi = -math.inf

    def add(self, x: float) -> None:
        self.lo = min(self.lo, x)
        self.hi = max(self.hi, x)
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)

    def merge(self, other: Moments) -> None:
        """Fold `other` in (Chan et al.'s parallel update)."""
        if other.n == 0:
            return
        self.lo = min(self.lo, other.lo)
        self.hi = max(self.hi, other.hi)
        n = self.n + other.n
        delta = other.mean - self.mean
        self.m2 += other.m2 + delta * delta * self.n * other.n / n
        self.mean += delta * other.n / n
        self.n = n

    def interval(self) -> tuple[float, float] | None:
        """mean +- t_{0.975, n-1} * s / sqrt(n), clipped to the score range [0, 1] (widened to
        the values seen, if any lie outside it); None with fewer than two values. For small n
        the t interval is wide (t = 12.7 at n = 2), and a mean score cannot leave that range."""
        if self.n < 2:
            return None
        sd = math.sqrt(max(self.m2, 0.0) / (self.n - 1))
        half = t_quantile_975(self.n - 1) * sd / math.sqrt(self.n)
        floor, ceiling = min(0.0, self.lo), max(1.0, self.hi)
        return max(floor, self.mean - half), min(ceiling, self.mean + half)
