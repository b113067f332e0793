"""One health check's answer: what ``doctor`` prints for each thing it looks at, and what
``doctor --json`` returns (system/doctor.py and the web page's service check)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    warning: bool = False  # ok, but worth a look

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
