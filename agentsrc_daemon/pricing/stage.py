"""The ingest's pricing stage: each usage event priced as it is read (in a backfill
worker too), its cost carried beside it to the commit (``Event.cost``, stored in
``usage_costs``, never in the event's data); and the same pricing of a stored usage
event, for the store (a claim that rewrote one, the re-price).

A cost travels as a plain tuple (store/costs.CostRow): nano-dollars shown (the agent's
own when it reported one, else ours; None when unpriced), its kind, our estimate in
nano-dollars (None when unpriced), and the tokens the shown figure leaves out."""

from __future__ import annotations

from typing import Any

import orjson

from ..events import USAGE, Event
from .overrides import NONE, Overrides, fingerprint
from .price import Pricer, RequestCost
from .table import PriceTable
from .usage import normalize

CostRow = tuple[int | None, str, int | None, int]


def stored(priced: RequestCost) -> CostRow:
    shown = priced.cost
    return (shown.nano_usd, shown.kind, priced.estimate.nano_usd, shown.unpriced_tokens)


class PriceStage:
    """Prices usage events with one table and one set of overrides (a new table or
    new overrides make a new stage, with a new ``fingerprint``). Picklable: a backfill
    worker is handed the daemon's, so both price alike."""

    def __init__(self, table: PriceTable | None, overrides: Overrides | None = None) -> None:
        self.pricer = Pricer(table, overrides or NONE)
        self.fingerprint = fingerprint(table, overrides or NONE)

    def __call__(self, event: Event) -> None:
        """A usage event's cost, set on it (other kinds pass untouched)."""
        if event.kind == USAGE:
            event.cost = self.price(event.adapter, event.data, event.ts)

    def price(self, adapter: str, data: dict[str, Any], ts: str | None) -> CostRow:
        return stored(self.pricer.price(normalize(adapter, data, ts)))

    def cost_of(self, adapter: str, data: bytes | str, ts: str | None) -> CostRow:
        """A stored usage event's cost, from its data as stored (JSON)."""
        parsed = orjson.loads(data)
        return self.price(adapter, parsed if isinstance(parsed, dict) else {}, ts)
