"""What a trial cost: model tokens (from the agents' usage, per model), sandbox-seconds per
provider and wall time, turned into money by the optional `[prices]` table::

    [prices.models."gpt-4o-mini"]     # US dollars per 1M tokens
    input = 0.15
    output = 0.60

    [prices.sandboxes]                # US dollars per sandbox-hour, by provider
    docker = 0.05

A trial's cost is its record's `cost` (`runs show`, the exports): `{prompt_tokens,
completion_tokens, total_tokens, models: {model: {prompt_tokens, completion_tokens,
total_tokens}}, sandbox_seconds: {provider: seconds}, wall_seconds, usd}`, `usd` None when no
price covers what the trial used, `unpriced` naming what had no price (`model:x`,
`sandbox:y`). `[run] budget_usd` (or `run --budget-usd`) stops starting trials once spent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from agent_env.errors import ConfigError

#: Token fields summed from an agent's usage.
TOKEN_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
#: The model name of tokens whose model the record does not know.
UNKNOWN_MODEL = "(unknown)"


@attrs.frozen(kw_only=True)
class Prices:
    """`[prices]`: per model, US dollars per 1M input and output tokens; per sandbox provider,
    US dollars per sandbox-hour."""

    models: Mapping[str, tuple[float, float]] = attrs.field(factory=dict)
    sandboxes: Mapping[str, float] = attrs.field(factory=dict)

    @classmethod
    def from_table(cls, table: Mapping[str, Any] | None, where: str = "[prices]") -> Prices:
        """The prices of a `[prices]` table; `ConfigError` naming the key that is wrong."""
        table = dict(table or {})
        unknown = sorted(set(table) - {"models", "sandboxes"})
        if unknown:
            from agent_env.suggest import did_you_mean

            raise ConfigError(
                f"{where}: unknown key {unknown[0]!r}"
                f"{did_you_mean(unknown[0], ['models', 'sandboxes'])}; known: models, sandboxes"
            )
        models: dict[str, tuple[float, float]] = {}
        for name, price in _table(table.get("models"), f"{where} models").items():
            here = f'{where} models."{name}"'
            price = _table(price, here)
            extra = sorted(set(price) - {"input", "output"})
            if extra:
                raise ConfigError(f"{here}: unknown key {extra[0]!r}; known: input, output")
            models[name] = (
                _price(price.get("input", 0), f"{here}.input"),
                _price(price.get("output", 0), f"{here}.output"),
            )
        sandboxes = {
            name: _price(value, f"{where} sandboxes.{name}")
            for name, value in _table(table.get("sandboxes"), f"{where} sandboxes").items()
        }
        return cls(models=models, sandboxes=sandboxes)

    def __bool__(self) -> bool:
        return bool(self.models or self.sandboxes)


def _table(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a table, got {value!r:.60}")
    return dict(value)


def _price(value: Any, where: str) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: expected a price (a number >= 0), got {value!r:.60}")
    return float(value)


def prices_of(config: Any) -> Prices:
    """The `[prices]` of a loaded config (empty when it sets none)."""
    values = getattr(config, "values", {})
    return Prices.from_table(
        {"models": values.get("prices.models"), "sandboxes": values.get("prices.sandboxes")}
    )


def budget_of(config: Any, given: float | None = None) -> float | None:
    """The run's budget in US dollars (`given`, else `[run] budget_usd`), or None; a
    `ConfigError` for a value that is not a positive number."""
    value: Any = given if given is not None else config.get("run", "budget_usd")
    if value is None:
        return None
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):  # AGENT_ENV_RUN_BUDGET_USD
        try:
            number = float(value)
        except ValueError:
            pass
    if number is None or not math.isfinite(number) or number <= 0:
        raise ConfigError(f"[run] budget_usd: expected a positive number, got {value!r:.60}")
    return number


def trial_cost(
    prompts: Iterable[Mapping[str, Any]],
    sandbox_seconds: Mapping[str, float],
    wall_seconds: float | None,
    *,
    model: str | None = None,
    prices: Prices | None = None,
) -> dict[str, Any]:
    """The `cost` of a trial from its prompts' outputs (`usage`, `model`), the seconds its
    sandboxes lived per provider and its wall time; `model` names tokens whose prompt did
    not say."""
    by_model: dict[str, dict[str, int]] = {}
    for prompt in prompts:
        usage = prompt.get("usage") or {}
        counts = {k: _count(usage.get(k)) for k in TOKEN_FIELDS}
        if not any(counts.values()):
            continue
        name = str(prompt.get("model") or model or UNKNOWN_MODEL)
        mine = by_model.setdefault(name, dict.fromkeys(TOKEN_FIELDS, 0))
        for key, n in counts.items():
            mine[key] += n
    cost: dict[str, Any] = {key: sum(m[key] for m in by_model.values()) for key in TOKEN_FIELDS}
    cost["models"] = by_model
    cost["sandbox_seconds"] = {k: round(v, 3) for k, v in sorted(sandbox_seconds.items())}
    cost["wall_seconds"] = None if wall_seconds is None else round(wall_seconds, 3)
    cost["usd"], unpriced = money(by_model, sandbox_seconds, prices or Prices())
    if unpriced:
        cost["unpriced"] = unpriced
    return cost


def money(
    by_model: Mapping[str, Mapping[str, int]],
    sandbox_seconds: Mapping[str, float],
    prices: Prices,
) -> tuple[float | None, list[str]]:
    """(US dollars, what had no price); None when nothing used was priced."""
    usd, priced, unpriced = 0.0, False, []
    for name, tokens in by_model.items():
        if name not in prices.models:
            unpriced.append(f"model:{name}")
            continue
        per_in, per_out = prices.models[name]
        usd += (tokens["prompt_tokens"] * per_in + tokens["completion_tokens"] * per_out) / 1e6
        priced = True
    for provider, seconds in sandbox_seconds.items():
        if provider not in prices.sandboxes:
            unpriced.append(f"sandbox:{provider}")
            continue
        usd += seconds / 3600 * prices.sandboxes[provider]
        priced = True
    return (round(usd, 6) if priced else None), unpriced


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def spent(cost: Mapping[str, Any] | None) -> float:
    """The US dollars of one trial's `cost` (0 when unpriced or absent)."""
    usd = (cost or {}).get("usd")
    return float(usd) if isinstance(usd, (int, float)) else 0.0


@attrs.define
class CostTotals:
    """The costs of many trials added up (`runs show` of a run, the budget)."""

    trials: int = 0
    tokens: dict[str, int] = attrs.Factory(lambda: dict.fromkeys(TOKEN_FIELDS, 0))
    sandbox_seconds: dict[str, float] = attrs.Factory(dict)
    wall_seconds: float = 0.0
    usd: float | None = None

    def add(self, cost: Mapping[str, Any] | None) -> None:
        if not cost:
            return
        self.trials += 1
        for key in TOKEN_FIELDS:
            self.tokens[key] += _count(cost.get(key))
        for provider, seconds in (cost.get("sandbox_seconds") or {}).items():
            if isinstance(seconds, (int, float)):
                self.sandbox_seconds[provider] = self.sandbox_seconds.get(provider, 0.0) + seconds
        if isinstance(cost.get("wall_seconds"), (int, float)):
            self.wall_seconds += cost["wall_seconds"]
        if isinstance(cost.get("usd"), (int, float)):
            self.usd = (self.usd or 0.0) + cost["usd"]

    def to_json(self) -> dict[str, Any]:
        return {
            "trials": self.trials,
            **self.tokens,
            "sandbox_seconds": {k: round(v, 3) for k, v in sorted(self.sandbox_seconds.items())},
            "wall_seconds": round(self.wall_seconds, 3),
            "usd": None if self.usd is None else round(self.usd, 6),
        }


def describe(cost: Mapping[str, Any]) -> str:
    """One line for `runs show`: tokens, sandbox-seconds per provider, wall time, dollars."""
    tokens = (
        f"{_count(cost.get('total_tokens'))} tokens ({_count(cost.get('prompt_tokens'))} in, "
        f"{_count(cost.get('completion_tokens'))} out)"
    )
    boxes = ", ".join(f"{p} {s:.1f}s" for p, s in (cost.get("sandbox_seconds") or {}).items())
    wall = cost.get("wall_seconds")
    parts = [tokens, f"sandboxes: {boxes or 'none'}"]
    if isinstance(wall, (int, float)):
        parts.append(f"wall {wall:.1f}s")
    usd = cost.get("usd")
    parts.append(f"${usd:.4f}" if isinstance(usd, (int, float)) else "no price set")
    if cost.get("unpriced"):
        parts.append(f"unpriced: {', '.join(cost['unpriced'])}")
    return ", ".join(parts)
