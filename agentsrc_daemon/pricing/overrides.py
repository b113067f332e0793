"""``[prices]`` in the configuration: a model's own rates (an enterprise contract, a
local model at $0, a model the table lacks) and aliases (a proxy's model name priced
as the table's model), and the fingerprint that says history must be priced again.

The TOML shape (every rate in USD per million tokens; docs/usage.md shows it whole)::

    [prices.models."claude-opus-4-6"]        # a model's own rates, always
    input = 4.5                              # input neither read from nor written to the cache
    output = 22.5                            # output, reasoning included
    cache_read = 0.45                        # optional: else priced as input
    cache_write = 5.625                      # optional: 5-minute writes (else as input)
    cache_write_1h = 9                       # optional: 1-hour writes (else as cache_write)
    tiers = [{ above = 200000, input = 9, output = 33.75 }]  # optional: past 200K input
                                                            # the whole request at these
    [[prices.models."gpt-5"]]                # several entries: rates by date
    since = 2026-01-01                       # from that UTC day on (before: the table)
    input = 1.0
    output = 8.0

    [prices.models."ollama_chat/*"]          # a glob: every local Ollama model is free
    input = 0
    output = 0

    [prices.aliases]
    "my-proxy-sonnet" = "claude-sonnet-4-5"  # priced as the table's model
    "moonshotai/kimi-k2.6" = { model = "kimi-k2.6", provider = "moonshotai" }

A model name is matched without regard to case; an exact name wins over a glob, and
globs are tried in the file's order. ``parse`` is pure: the configuration loader hands
it the ``[prices]`` table and reports its ``ConfigError``."""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from ..errors import ConfigError
from .table import Price, PriceTable, Tiered

# Bumped when the way a request is priced changes (not the prices): history is priced
# again, as after a new table.
PRICING_VERSION = 1

# Config key -> the table's price key.
RATE_KEYS = {
    "input": "input_mtok",
    "output": "output_mtok",
    "cache_read": "cache_read_mtok",
    "cache_write": "cache_write_mtok",
    "cache_write_1h": "cache_write_1h_mtok",
}
_ENTRY_KEYS = {*RATE_KEYS, "tiers", "since"}


@dataclass(frozen=True, slots=True)
class Rate:
    """One entry of a model's own rates."""

    prices: dict[str, Price]  # the table's price keys
    since: date | None = None  # applies to requests on or after this UTC day


@dataclass(frozen=True, slots=True)
class Alias:
    model: str
    provider: str | None = None


@dataclass(frozen=True, slots=True)
class Overrides:
    models: tuple[tuple[str, tuple[Rate, ...]], ...] = ()  # (name or glob, lower case)
    aliases: tuple[tuple[str, Alias], ...] = ()  # (name, lower case)

    def rate(self, model: str, ts: datetime) -> Rate | None:
        """The own rate in force for ``model`` at ``ts``, or None (the table prices it)."""
        name = model.lower()
        entries = next((rates for key, rates in self.models if key == name), None)
        if entries is None:
            entries = next(
                (rates for key, rates in self.models if _is_glob(key) and fnmatch.fnmatchcase(name, key)),
                None,
            )
        if entries is None:
            return None
        day = (ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)).date()
        current = [r for r in entries if r.since is None or r.since <= day]
        if not current:
            return None
        return max(current, key=lambda r: r.since or date.min)

    def alias(self, model: str) -> Alias | None:
        name = model.lower()
        return next((a for key, a in self.aliases if key == name), None)

    def canonical(self) -> dict[str, Any]:
        """Everything that changes a price, in a stable form (for the fingerprint)."""
        return {
            "models": [[name, [_rate_json(r) for r in rates]] for name, rates in self.models],
            "aliases": [[name, [a.model, a.provider]] for name, a in self.aliases],
        }


NONE = Overrides()


def parse(section: Any) -> Overrides:
    """The ``[prices]`` table of the configuration (None or absent: no overrides).
    Raises ConfigError naming the entry and what is wrong with it."""
    if section is None:
        return NONE
    if not isinstance(section, dict):
        raise ConfigError("[prices] must be a table")
    unknown = set(section) - {"models", "aliases"}
    if unknown:
        raise ConfigError(f"[prices]: unknown key(s) {', '.join(sorted(unknown))} (models, aliases)")
    models = section.get("models", {})
    aliases = section.get("aliases", {})
    if not isinstance(models, dict) or not isinstance(aliases, dict):
        raise ConfigError("[prices.models] and [prices.aliases] must be tables")
    parsed_models: list[tuple[str, tuple[Rate, ...]]] = []
    seen: set[str] = set()
    for name, value in models.items():
        key = _name(name, "[prices.models]")
        if key in seen:
            raise ConfigError(f'[prices.models]: "{name}" is given twice (names ignore case)')
        seen.add(key)
        entries = value if isinstance(value, list) else [value]
        where = f'[prices.models."{name}"]'
        rates = tuple(_rate(entry, where) for entry in entries)
        if len({r.since for r in rates}) != len(rates):
            raise ConfigError(f"{where}: two entries with the same since")
        parsed_models.append((key, rates))
    parsed_aliases = tuple(
        (_name(name, "[prices.aliases]"), _alias(name, value)) for name, value in aliases.items()
    )
    return Overrides(tuple(parsed_models), parsed_aliases)


def fingerprint(table: PriceTable | None, overrides: Overrides) -> str:
    """A stable digest of everything a stored cost depends on: the table (its bytes),
    the overrides, and the pricing code's version. Stored beside the costs, it tells
    that history must be priced again when it changes."""
    doc = {
        "pricing": PRICING_VERSION,
        "table": table.digest if table is not None else None,
        "overrides": overrides.canonical(),
    }
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: a model name must be a non-empty string")
    return name.strip().lower()


def _is_glob(key: str) -> bool:
    return any(c in key for c in "*?[")


def _rate(entry: Any, where: str) -> Rate:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table of rates (input, output, ...)")
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        keys = ", ".join(sorted(_ENTRY_KEYS))
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} ({keys})")
    for needed in ("input", "output"):
        if needed not in entry:
            raise ConfigError(f"{where}: {needed} is required (USD per million tokens)")
    flat = {RATE_KEYS[k]: _usd(entry[k], f"{where} {k}") for k in RATE_KEYS if k in entry}
    since = entry.get("since")
    if since is not None and (not isinstance(since, date) or isinstance(since, datetime)):
        raise ConfigError(f"{where}: since must be a date (since = 2026-01-01)")
    tiers = _tiers(entry.get("tiers", []), where)
    for _, rates in tiers:
        missing = {k for k, v in RATE_KEYS.items() if v in rates and v not in flat}
        if missing:
            raise ConfigError(f"{where}: a tier prices {', '.join(sorted(missing))}, which has no base rate")
    prices: dict[str, Price] = {}
    for key, base in flat.items():
        steps = tuple((above, rates[key]) for above, rates in tiers if key in rates)
        prices[key] = Tiered(base, steps) if steps else base
    return Rate(prices, since)


def _tiers(value: Any, where: str) -> list[tuple[int, dict[str, Decimal]]]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: tiers must be a list of {{ above = N, input = ..., ... }}")
    tiers: list[tuple[int, dict[str, Decimal]]] = []
    for tier in value:
        if not isinstance(tier, dict) or not isinstance(tier.get("above"), int):
            raise ConfigError(f"{where}: each tier needs above = <input tokens>")
        above = tier["above"]
        if isinstance(above, bool) or above < 0:
            raise ConfigError(f"{where}: a tier's above must be a count of tokens")
        unknown = set(tier) - {"above", *RATE_KEYS}
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) in a tier: {', '.join(sorted(unknown))}")
        rates = {RATE_KEYS[k]: _usd(tier[k], f"{where} tier {k}") for k in RATE_KEYS if k in tier}
        tiers.append((above, rates))
    if len({above for above, _ in tiers}) != len(tiers):
        raise ConfigError(f"{where}: two tiers start above the same count")
    return sorted(tiers, key=lambda t: t[0])


def _usd(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where} must be a number (USD per million tokens)")
    try:
        usd = Decimal(str(value))
    except InvalidOperation:
        raise ConfigError(f"{where} must be a number") from None
    if not usd.is_finite() or usd < 0:
        raise ConfigError(f"{where} must be a finite number >= 0")
    return usd


def _alias(name: str, value: Any) -> Alias:
    where = f'[prices.aliases] "{name}"'
    if isinstance(value, str) and value.strip():
        return Alias(value.strip())
    if isinstance(value, dict):
        model = value.get("model")
        provider = value.get("provider")
        if set(value) - {"model", "provider"}:
            raise ConfigError(f"{where}: only model and provider may be given")
        if isinstance(model, str) and model.strip() and (provider is None or isinstance(provider, str)):
            return Alias(model.strip(), provider.strip().lower() if provider else None)
    raise ConfigError(f'{where} must name a model: "name" or {{ model = "name", provider = "id" }}')


def _rate_json(rate: Rate) -> dict[str, Any]:
    def one(price: Price) -> Any:  # 1, 1.0 and 1.00 dollars are one price
        if isinstance(price, Tiered):
            return {"base": _plain(price.base), "tiers": [[s, _plain(p)] for s, p in price.tiers]}
        return _plain(price)

    return {
        "since": rate.since.isoformat() if rate.since else None,
        "prices": {k: one(v) for k, v in sorted(rate.prices.items())},
    }


def _plain(value: Decimal) -> str:
    return str(value.normalize())
