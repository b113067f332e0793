"""The price table: genai-prices' providers, models and prices, read from the JSON file
``export`` writes, without the library (docs/architecture.md, "Prices": the library
with its models costs the daemon about 31 MB and 0.28 s to import; this file, a few).

The file keeps the library's own structure and rules, so a model is found and priced
here as the library finds and prices it (tests/test_pricing_table.py checks both agree
for every model of the table):

* a provider is found by its id (or its ``provider_match``), else by its
  ``model_match`` on the model name; a model by its ``match`` clause (starts_with,
  ends_with, contains, regex, equals, or, and; case-insensitive but for regex), then
  in the providers it falls back to, then with a compact date (``-20251211``) written
  with dashes;
* a model's prices are a list of (constraint, prices): the last whose constraint
  holds at the request's time applies (a start date, or a time of day), else the
  first; variants (``when`` a request's context matches, e.g. Anthropic's fast mode)
  override single prices;
* a price is a decimal (USD per ``per`` units) or tiers (``base`` and ``[start,
  price]`` pairs: past a tier's start, the whole request is priced at that tier).

Only the units a coding agent's usage can have are kept: input, output, cache reads,
cache writes (5-minute and 1-hour), reasoning output, and a price per request."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

FORMAT = 1

# The library's units that agents' usage can fill (its data_units), by usage key:
# (price key, per how many units the price is, dimensions). A unit descends from
# another when its dimensions include the other's: its tokens are priced at its own
# rate and taken out of its ancestor's count.
UNITS: dict[str, tuple[str, int, dict[str, str]]] = {
    "input_tokens": ("input_mtok", 1_000_000, {"family": "tokens", "direction": "input"}),
    "output_tokens": ("output_mtok", 1_000_000, {"family": "tokens", "direction": "output"}),
    "cache_read_tokens": (
        "cache_read_mtok",
        1_000_000,
        {"family": "tokens", "direction": "input", "token_type": "cache_read"},
    ),
    "cache_write_tokens": (
        "cache_write_mtok",
        1_000_000,
        {"family": "tokens", "direction": "input", "token_type": "cache_write"},
    ),
    "cache_write_5m_tokens": (
        "cache_write_5m_mtok",
        1_000_000,
        {"family": "tokens", "direction": "input", "token_type": "cache_write", "cache_ttl": "5m"},
    ),
    "cache_write_1h_tokens": (
        "cache_write_1h_mtok",
        1_000_000,
        {"family": "tokens", "direction": "input", "token_type": "cache_write", "cache_ttl": "1h"},
    ),
    "output_reasoning_tokens": (
        "output_reasoning_mtok",
        1_000_000,
        {"family": "tokens", "direction": "output", "token_type": "reasoning"},
    ),
    "requests": ("requests_kcount", 1_000, {"family": "requests"}),
}
PRICE_KEYS = {price_key: usage_key for usage_key, (price_key, _, _) in UNITS.items()}

_COMPACT_DATE = re.compile(r"(-)(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)")


@dataclass(frozen=True, slots=True)
class Tiered:
    base: Decimal
    tiers: tuple[tuple[int, Decimal], ...]  # (start, price), ascending

    def at(self, prompt_tokens: int) -> Decimal:
        """The price for a request with this many input tokens: the highest tier whose
        start it is past (strictly), else the base."""
        for start, price in reversed(self.tiers):
            if prompt_tokens > start:
                return price
        return self.base


Price = Decimal | Tiered


@dataclass(frozen=True, slots=True)
class Model:
    """One model of the table as found for a request: its ids, and its price entries."""

    provider: str
    id: str
    prices: tuple[tuple[Any, dict[str, Price]], ...]  # (constraint or None, prices)
    variants: tuple[tuple[dict[str, str], Any, dict[str, Price]], ...] = ()  # when, constraint
    # Found among the provider's own models, not a provider it falls back to: only
    # then do the variants apply (the library's rule: another provider's tier rates
    # are not the fallback's).
    native: bool = True

    def prices_at(self, ts: datetime, context: dict[str, str] | None = None) -> dict[str, Price]:
        """The prices in force at ``ts`` (aware or UTC), with the variants whose ``when``
        the context matches laid over them, as the library's ``get_prices``."""
        chosen = self.prices[0][1]
        for constraint, prices in reversed(self.prices):
            if constraint is None or _active(constraint, ts):
                chosen = prices
                break
        if not context or not self.native:
            return chosen
        overrides: dict[str, Price] = {}
        for when, constraint, prices in self.variants:
            if constraint is not None and not _active(constraint, ts):
                continue
            if all(context.get(k) == v for k, v in when.items()):
                for key, value in prices.items():
                    overrides.setdefault(key, value)
        return chosen | overrides


@dataclass(slots=True)
class PriceTable:
    """The providers and models of one export, with what it came from."""

    providers: list[dict[str, Any]]
    source: dict[str, Any]  # library, version, data ("bundled" or where an update came from)
    digest: str = ""  # of the file's bytes: part of the pricing fingerprint
    _found: dict[tuple[str | None, str], Model | None] = field(default_factory=dict)

    def find(self, model_ref: str, provider_id: str | None = None) -> Model | None:
        """The model a request names, as the library's ``find_provider_model`` finds it
        with that provider id (None: by the model name alone); None when not found."""
        key = (provider_id, model_ref)
        if key not in self._found:
            if len(self._found) >= 4096:  # model names are few; a bound all the same
                self._found.clear()
            self._found[key] = self._find(model_ref.lower(), provider_id)
        return self._found[key]

    def _find(self, ref: str, provider_id: str | None) -> Model | None:
        if provider_id and provider_id.lower() == "litellm" and "/" in ref:
            head, rest = ref.split("/", 1)
            if head and self._provider_by_id(head) is not None:
                provider_id, ref = head, rest
        provider = self._provider(ref, provider_id)
        if provider is None:
            return None
        found = self._match_model(provider, ref, fallback=True)
        if found is None:
            dashed = _COMPACT_DATE.sub(_dashed_date, ref)
            if dashed != ref:
                found = self._match_model(provider, dashed, fallback=True)
        if found is None:
            return None
        model, native = found
        return Model(
            provider["id"],
            model["id"],
            tuple((c, _prices(p)) for c, p in _held(model["prices"])),
            tuple(
                (v["when"], v.get("constraint"), _prices(v["prices"]))
                for v in _held(model.get("variants")) or ()
            ),
            native,
        )

    def _provider(self, ref: str, provider_id: str | None) -> dict[str, Any] | None:
        if provider_id is not None:
            provider = self._provider_by_id(provider_id)
            if provider is not None or provider_id.lower() != "litellm":
                return provider
        for provider in self.providers:
            clause = provider.get("model_match")
            if clause is not None and matches(clause, ref):
                return provider
        return None

    def _provider_by_id(self, provider_id: str) -> dict[str, Any] | None:
        wanted = provider_id.lower().strip()
        for provider in self.providers:
            if provider["id"] == wanted:
                return provider
        for provider in self.providers:
            clause = provider.get("provider_match")
            if clause is not None and matches(clause, wanted):
                return provider
        return None

    def _match_model(
        self, provider: dict[str, Any], ref: str, *, fallback: bool
    ) -> tuple[dict[str, Any], bool] | None:
        """The first of the provider's models whose clause matches, else the first of
        a provider it falls back to (one step); and whether it is the provider's own."""
        for model in provider["models"]:
            if matches(model["match"], ref):
                return model, True
        if fallback:
            for other_id in provider.get("fallback") or ():
                other = next((p for p in self.providers if p["id"] == other_id), None)
                if other is not None:
                    found = self._match_model(other, ref, fallback=False)
                    if found is not None:
                        return found[0], False
        return None


def load(path: Path) -> PriceTable:
    """The table in a file ``export`` wrote. Raises ValueError when it is not one."""
    return loads(path.read_bytes())


def loads(raw: bytes) -> PriceTable:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"price table: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"price table: not a table of format {FORMAT}")
    providers = doc.get("providers")
    if not isinstance(providers, list) or not all(
        isinstance(p, dict) and isinstance(p.get("models"), list) for p in providers
    ):
        raise ValueError("price table: providers must be a list of providers with models")
    digest = hashlib.blake2b(raw, digest_size=16).hexdigest()
    for provider in providers:
        for model in provider["models"]:
            _hold(model)
    return PriceTable(providers, dict(doc.get("source") or {}), digest)


def _hold(model: Any) -> None:
    """A model's prices and variants kept as JSON until it is found (``_held``): of the
    table's 3.6 MB as parsed objects (2,344 models), 1.5 MB. Copied at their exact size
    (orjson's bytes keep the room of its buffer)."""
    if isinstance(model, dict):
        for key in ("prices", "variants"):
            if key in model:
                model[key] = bytes(memoryview(orjson.dumps(model[key])))


def _held(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, bytes) else value


def matches(clause: dict[str, Any], text: str) -> bool:
    """Whether a model (or provider) name matches the library's match clause."""
    ((op, arg),) = clause.items()
    if op == "starts_with":
        return text.lower().startswith(arg.lower())
    if op == "ends_with":
        return text.lower().endswith(arg.lower())
    if op == "contains":
        return arg.lower() in text.lower()
    if op == "equals":
        return text.lower() == arg.lower()
    if op == "regex":
        return re.search(arg, text) is not None
    if op == "or":
        return any(matches(c, text) for c in arg)
    if op == "and":
        return all(matches(c, text) for c in arg)
    raise ValueError(f"price table: unknown match clause {op!r}")


def _prices(raw: dict[str, Any]) -> dict[str, Price]:
    """A model's prices parsed once, when the model is first found (the table keeps
    them as JSON: parsing 2,344 models' decimals up front would cost the memory)."""
    return {key: _price(value) for key, value in raw.items()}


def _price(value: Any) -> Price:
    if isinstance(value, dict):
        tiers = tuple(sorted((int(start), Decimal(p)) for start, p in value["tiers"]))
        return Tiered(Decimal(value["base"]), tiers)
    return Decimal(value)


def _active(constraint: dict[str, Any], ts: datetime) -> bool:
    """A price's constraint at ``ts``: a start date (the UTC date on or after it), or a
    daily interval of UTC time (which may wrap past midnight)."""
    ts = ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
    if "start_date" in constraint:
        return ts.date() >= date.fromisoformat(constraint["start_date"])
    now = ts.timetz()
    start = _utc_time(constraint["start_time"])
    end = _utc_time(constraint["end_time"])
    if end < start:
        return now >= start or now < end
    return start <= now < end


def _utc_time(text: str) -> time:
    value = time.fromisoformat(text)
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return datetime.combine(date(1970, 1, 1), value).astimezone(UTC).timetz()


def _dashed_date(match: re.Match[str]) -> str:
    year, month, day = (int(match.group(i)) for i in range(2, 5))
    try:
        date(year, month, day)
    except ValueError:
        return match.group(0)
    return f"{match.group(1)}{year:04d}-{month:02d}-{day:02d}"
