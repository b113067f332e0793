"""genai-prices' data written as the table ``pricing.table`` reads: the library's
bundled data, or the newest data it publishes (``agentsrc prices update``).

This is the one module that imports genai-prices (and with it pydantic and httpx2,
about 31 MB and 0.28 s): it runs in a process of its own (``python -m
agentsrc_daemon.pricing.export PATH``, or the CLI's command), never in the daemon,
which reads only the file it writes.

The table keeps the library's structure (providers, match clauses, conditional prices,
variants, tiers) and its decimals as strings, restricted to the units a coding agent's
usage can fill (``table.UNITS``); tests/test_pricing_table.py prices every model of
the bundled data both ways and finds the same dollars."""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from datetime import date, time
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from .table import FORMAT, PRICE_KEYS

LIBRARY = "genai-prices"


def library_version() -> str:
    from importlib.metadata import version

    return version(LIBRARY)


def installed_version() -> str | None:
    """The installed library's version without importing it or importlib.metadata (the
    daemon asks at start whether its table is the installed library's): the name of
    its ``.dist-info`` directory beside the package; None when it is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("genai_prices")
    if spec is None or spec.origin is None:
        return None
    site = Path(spec.origin).parent.parent
    found = sorted(site.glob("genai_prices-*.dist-info"))
    return found[-1].name[len("genai_prices-") : -len(".dist-info")] if found else None


def bundled_table() -> bytes:
    """The table of the installed library's bundled data."""
    from genai_prices.data import providers

    return table_bytes(providers, {"library": LIBRARY, "version": library_version(), "data": "bundled"})


def fetched_table(url: str | None = None, timeout_s: float = 30.0) -> bytes:
    """The table of the newest data the library publishes (its ``UpdatePrices`` source,
    or ``url``): fetched and validated by the library itself, so a format it cannot
    read is refused here, before anything is written."""
    import httpx2
    from genai_prices import UpdatePrices
    from genai_prices.update_prices import DEFAULT_UPDATE_URL

    source = url or DEFAULT_UPDATE_URL
    updater = UpdatePrices(url=source, request_timeout=httpx2.Timeout(timeout=timeout_s))
    snapshot = updater.fetch()
    if snapshot is None:
        raise ValueError(f"{LIBRARY}: no prices at {source}")
    meta = {"library": LIBRARY, "version": library_version(), "data": source}
    return table_bytes(snapshot.providers, meta)


def update_table(path: Path, url: str | None = None, timeout_s: float = 30.0) -> dict[str, Any]:
    """``agentsrc prices update``: the newest published data, validated by the library,
    written as the table at ``path`` (atomically; on any failure the table in place is
    left as it was). Returns what the new table came from, with its number of models.
    The daemon prices with it from its next start (a new fingerprint: history is
    priced again)."""
    raw = fetched_table(url, timeout_s)
    new = loads_checked(raw)
    write(path, raw)
    return new.source | {"models": sum(len(p["models"]) for p in new.providers)}


def loads_checked(raw: bytes) -> Any:
    """The table read back as the daemon will read it, before it replaces anything."""
    from .table import loads

    table = loads(raw)
    if not table.providers:
        raise ValueError(f"{LIBRARY}: the fetched prices have no provider")
    return table


def table_bytes(providers: list[Any], source: dict[str, Any]) -> bytes:
    doc = {"format": FORMAT, "source": source, "providers": [_provider(p) for p in providers]}
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def write(path: Path, raw: bytes) -> None:
    """Write the table atomically (a reader sees the old file or the new one), owner-only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".prices-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _provider(provider: Any) -> dict[str, Any]:
    return {
        "id": provider.id,
        "model_match": _clause(provider.model_match),
        "provider_match": _clause(provider.provider_match),
        "fallback": list(provider.fallback_model_providers or ()),
        "models": [_model(m) for m in provider.models],
    }


def _model(model: Any) -> dict[str, Any]:
    if isinstance(model.prices, list):
        prices = [[_constraint(c.constraint), _prices(c.prices)] for c in model.prices]
    else:
        prices = [[None, _prices(model.prices)]]
    out: dict[str, Any] = {"id": model.id, "match": _clause(model.match), "prices": prices}
    variants = [
        {"when": dict(v.when), "constraint": _constraint(v.constraint), "prices": _prices(v.prices)}
        for v in model.price_variants or ()
    ]
    if variants:
        out["variants"] = variants
    return out


def _prices(model_price: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in vars(model_price).items():
        if value is None or key not in PRICE_KEYS:
            continue
        if isinstance(value, Decimal):
            out[key] = str(value)
        else:  # TieredPrices
            out[key] = {
                "base": str(value.base),
                "tiers": [[tier.start, str(tier.price)] for tier in value.tiers],
            }
    return out


def _constraint(constraint: Any) -> dict[str, str] | None:
    if constraint is None:
        return None
    start = getattr(constraint, "start_date", None)
    if isinstance(start, date):
        return {"start_date": start.isoformat()}
    start_time, end_time = constraint.start_time, constraint.end_time
    assert isinstance(start_time, time) and isinstance(end_time, time)
    return {"start_time": start_time.isoformat(), "end_time": end_time.isoformat()}


def _clause(clause: Any) -> dict[str, Any] | None:
    """A match clause as the library's JSON writes it: ``{"starts_with": "claude"}``,
    ``{"or": [...]}``."""
    if clause is None:
        return None
    ((name, value),) = ((f.name, getattr(clause, f.name)) for f in dataclasses.fields(clause))
    if name in ("or_", "and_"):
        return {name.rstrip("_"): [_clause(c) for c in value]}
    return {name: value}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m agentsrc_daemon.pricing.export PATH", file=sys.stderr)
        return 2
    write(Path(argv[0]), bundled_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
