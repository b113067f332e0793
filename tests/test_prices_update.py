"""``agentsrc prices update``'s core (pricing/export.update_table) against a local HTTP
server on the loopback (no network): the library's own updater fetches and validates
its published JSON format, the table is written atomically and owner-only, and a
payload the library refuses leaves the table in place untouched."""

from __future__ import annotations

import http.server
import stat
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from agentsrc_daemon.pricing import export, table
from agentsrc_daemon.pricing.price import Pricer
from agentsrc_daemon.pricing.usage import RequestUsage

# The library's published format (prices/new_data/v2/data.json): a list of providers.
PUBLISHED = [
    {
        "id": "anthropic",
        "name": "Anthropic",
        "api_pattern": "https://api\\\\.anthropic\\\\.com",
        "model_match": {"contains": "claude"},
        "models": [
            {
                "id": "claude-test-9",
                "match": {"or": [{"starts_with": "claude-test-9"}, {"equals": "test9"}]},
                "prices": [
                    {"prices": {"input_mtok": 2, "output_mtok": 10, "cache_read_mtok": "0.2",
                                "cache_write_mtok": "2.5", "cache_write_1h_mtok": 4}},
                    {"constraint": {"start_date": "2026-12-01"},
                     "prices": {"input_mtok": {"base": 1, "tiers": [{"start": 200000, "price": 2}]},
                                "output_mtok": 5}},
                ],
            }
        ],
    }
]


class _Handler(http.server.BaseHTTPRequestHandler):
    payload = b""

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.payload)))
        self.end_headers()
        self.wfile.write(self.payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[http.server.HTTPServer]:
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def url(httpd: http.server.HTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}/data.json"


def test_an_update_is_fetched_validated_and_written(server: http.server.HTTPServer, tmp_path: Path) -> None:
    _Handler.payload = orjson.dumps(PUBLISHED)
    path = tmp_path / "prices.json"
    source = export.update_table(path, url(server), timeout_s=5)
    assert source == {"library": "genai-prices", "version": export.library_version(),
                      "data": url(server), "models": 1}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = table.load(path)
    pricer = Pricer(loaded)
    before = RequestUsage("claude-test-9-20261101", datetime(2026, 11, 30, tzinfo=UTC), 1_000,
                          2_000, 300, 400, 50)
    assert pricer.price(before).cost.usd == (
        1_000 * 2 + 2_000 * Decimal("0.2") + 300 * Decimal("2.5") + 400 * 4 + 50 * 10) / 1_000_000
    after = RequestUsage("test9", datetime(2026, 12, 1, tzinfo=UTC), 200_001, output_tokens=10)
    # "test9" names no provider (the provider matches names containing "claude")...
    assert pricer.price(after).cost.kind == "unpriced"
    # ...with the agent's provider, the December prices: no cache rates, a tier
    claude = RequestUsage("test9", datetime(2026, 12, 1, tzinfo=UTC), 200_001, output_tokens=10,
                          provider="anthropic")
    assert pricer.price(claude).cost.usd == (200_001 * 2 + 10 * 5) / Decimal(1_000_000)


def test_a_payload_the_library_refuses_changes_nothing(
    server: http.server.HTTPServer, tmp_path: Path
) -> None:
    path = tmp_path / "prices.json"
    path.write_bytes(export.bundled_table())
    kept = path.read_bytes()
    for payload in (b"not json", b'{"a": 1}', orjson.dumps([{"id": "x", "models": [{"id": 1}]}]),
                    b"[]"):
        _Handler.payload = payload
        with pytest.raises(Exception):  # noqa: B017 - the library's own errors, whatever they are
            export.update_table(path, url(server), timeout_s=5)
        assert path.read_bytes() == kept
    assert [p.name for p in tmp_path.iterdir()] == ["prices.json"]  # no temporary left


def test_the_installed_version_is_known_without_importing_the_library() -> None:
    import subprocess
    import sys

    code = ("import sys; from agentsrc_daemon.pricing import export; v = export.installed_version(); "
            "print(v, 'genai_prices' in sys.modules, 'pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [export.library_version(), "False", "False"]
