"""What a request cost: the price table, one request's usage in one shape, its price.

Pure, and light enough for the daemon: nothing here imports pydantic or the price
library itself (docs/architecture.md, "Prices"). The modules, toward the pure pieces:

* ``cost``: a cost and its kind (estimated, reported, unpriced, mixed), how costs add,
  their JSON shape;
* ``usage``: what each agent's usage event holds, as one request's usage
  (``RequestUsage``), per agent's counting conventions;
* ``table``: the price table (exported from genai-prices' data): finding a model,
  the prices in force at a time;
* ``overrides``: the ``[prices]`` configuration (a model's own rates, aliases) and the
  fingerprint that says history must be priced again;
* ``price``: one request priced at its time, tiers and cache-write lifetimes included;
* ``blocks``: Anthropic's 5-hour plan windows over timed costs;
* ``export`` (imports genai-prices; run in a process of its own, never the daemon's):
  the library's bundled data, or an update of it, written as the table ``table`` reads.
"""
