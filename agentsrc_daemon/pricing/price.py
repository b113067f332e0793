"""One request priced at its time: the price in force then, the tier its input reaches,
its cache writes by lifetime.

The arithmetic is genai-prices' (``ModelPrice.calc_price``), over the units a coding
agent's usage fills:

* each priced unit is charged for its own tokens: a unit that descends from another
  (a cache read from the input, a 1-hour cache write from the cache writes) takes its
  tokens out of its ancestor's count, so a unit the model has no price for is charged
  as its nearest priced ancestor (5-minute writes as input when only input is priced);
* a tiered price is judged by the request's whole input (cache reads and writes
  included): past a tier's start, every token of that unit is charged at the tier;
* dollars are ``Decimal``, exactly: tokens x price per million / 1,000,000.

What ``Pricer.price`` returns for a request: the cost to show (the agent's own figure
when it recorded one, ``reported``; else ours) and our estimate beside it
(``estimated``, or ``unpriced`` with its tokens when the model is not in the table or
none was recorded). A request of no token at all costs nothing, whatever its model."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from .cost import NO_MODEL, UNKNOWN_MODEL, Cost, estimated, reported, unpriced
from .overrides import NONE, Overrides
from .table import PRICE_KEYS, UNITS, Model, Price, PriceTable, Tiered
from .usage import RequestUsage

NO_TABLE = "no price table"


@dataclass(frozen=True, slots=True)
class RequestCost:
    cost: Cost  # what to show: reported when the agent recorded a cost, else estimate
    estimate: Cost  # ours: estimated, or unpriced
    model: str | None = None  # the table's model id it was priced as ("override": ours)
    provider: str | None = None  # the table's provider id


class Pricer:
    """Prices requests with one table and one set of overrides (both fixed for its
    life: a new table or new overrides make a new Pricer, and a new fingerprint)."""

    def __init__(self, table: PriceTable | None, overrides: Overrides = NONE) -> None:
        self.table = table
        self.overrides = overrides

    def price(self, usage: RequestUsage, now: datetime | None = None) -> RequestCost:
        """The request's cost at its time (``now`` when it has none: the current prices)."""
        estimate, model, provider = self._estimate(usage, usage.ts or now or datetime.now(UTC))
        shown = reported(usage.reported_usd) if usage.reported_usd is not None else estimate
        return RequestCost(shown, estimate, model, provider)

    def _estimate(self, usage: RequestUsage, ts: datetime) -> tuple[Cost, str | None, str | None]:
        tokens = usage.tokens
        if tokens == 0:
            return estimated(Decimal(0)), None, None
        if usage.model is None:
            return unpriced(tokens, NO_MODEL), None, None
        rate = self.overrides.rate(usage.model, ts)
        if rate is not None:
            return estimated(charge(rate.prices, usage)), "override", None
        found = self.find(usage.model, usage.provider)
        if found is None:
            reason = UNKNOWN_MODEL if self.table is not None else NO_TABLE
            return unpriced(tokens, reason), None, None
        context = {"speed": usage.speed} if usage.speed else None
        usd = charge(found.prices_at(ts, context), usage)
        return estimated(usd), found.id, found.provider

    def find(self, model: str, provider: str | None) -> Model | None:
        """The table's model for a recorded name: through an alias when one is set;
        first with the agent's provider, then by the name alone, then reading a
        ``provider/model`` name as LiteLLM writes it."""
        if self.table is None:
            return None
        alias = self.overrides.alias(model)
        if alias is not None:
            model, provider = alias.model, alias.provider or provider
        for provider_id in dict.fromkeys((provider, None, "litellm")):
            found = self.table.find(model, provider_id)
            if found is not None:
                return found
        return None


def charge(prices: dict[str, Price], usage: RequestUsage) -> Decimal:
    """The dollars for one request's usage at these prices (the table's price keys)."""
    counts = {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "cache_write_5m_tokens": usage.cache_write_5m_tokens,
        "cache_write_1h_tokens": usage.cache_write_1h_tokens,
        "output_reasoning_tokens": usage.reasoning_tokens,
        "requests": 1,
    }
    leaves: dict[str, int] = {}
    for unit, parts in _plan(tuple(prices)):
        leaves[unit] = counts[unit] - sum(leaves[part] for part in parts)
        if leaves[unit] < 0:
            raise ValueError(f"usage: {unit} is less than its parts")
    # Tiers are judged by one request's whole input; a sum of several is priced at the base.
    prompt = usage.tier_tokens
    total = Decimal(0)
    for unit, count in leaves.items():
        price_key, per, _ = UNITS[unit]
        price = prices[price_key]
        rate = price.at(prompt) if isinstance(price, Tiered) else price
        total += rate * Decimal(count) / per
    return total


@functools.cache
def _plan(price_keys: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """For the units a model prices: each unit, most specific first, with the priced
    units its tokens include (whose own tokens are taken out of its count). A few
    distinct sets of price keys exist in the whole table."""
    priced = sorted(
        (PRICE_KEYS[key] for key in price_keys if key in PRICE_KEYS),
        key=lambda unit: (-len(UNITS[unit][2]), unit),
    )
    plan = []
    for i, unit in enumerate(priced):
        dims = UNITS[unit][2].items()
        parts = tuple(other for other in priced[:i] if dims <= UNITS[other][2].items())
        plan.append((unit, parts))
    return tuple(plan)
