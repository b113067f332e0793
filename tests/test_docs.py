"""The docs keep up with the code: every socket method has its section in
docs/protocol.md, and every module of the package is in docs/architecture.md's table."""

from __future__ import annotations

import re
from pathlib import Path

from agentsrc_daemon.rpc.methods import build_methods

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "agentsrc_daemon"


def socket_methods() -> set[str]:
    # subscribe is served by the transport itself (it turns the connection into a stream).
    return set(build_methods(lambda reader: {})) | {"subscribe"}


def documented_methods() -> set[str]:
    text = (REPO / "docs" / "protocol.md").read_text()
    names: set[str] = set()
    for heading in re.findall(r"^## (.+)$", text, flags=re.M):
        names.update(n.strip() for n in heading.split(","))
    return names


def test_every_socket_method_is_documented() -> None:
    methods = socket_methods()
    assert "sessions.list" in methods and "status" in methods  # the listing is real
    assert sorted(methods - documented_methods()) == []


def test_every_documented_method_exists() -> None:
    sections = documented_methods() - {"Errors", "Conventions"}
    assert sorted(sections - socket_methods()) == []


def package_modules() -> set[str]:
    """Module paths relative to the package, e.g. ``ingest/tail.py``; package
    ``__init__.py`` files count only where they hold code beyond a docstring."""
    out: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if path.name == "__init__.py" and rel != "__init__.py":
            body = [ln for ln in path.read_text().splitlines() if ln.strip()]
            if all(ln.startswith(('"""', "    ")) or ln.endswith('"""') for ln in body):
                continue
        if path.name == "__main__.py":
            continue
        out.add(rel)
    return out


def documented_modules() -> set[str]:
    """Every `path.py` named in the first column of the modules table, with a
    ``dir/`` prefix in that cell applied to the bare names that follow it."""
    text = (REPO / "docs" / "architecture.md").read_text()
    table = text.split("## Modules", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for row in re.findall(r"^\| (.+?) \|", table, flags=re.M):
        prefix = ""
        for token in re.findall(r"`([^`]+)`", row):
            if token.endswith("/"):
                prefix = token
                continue
            if "/" in token:
                prefix = token.rsplit("/", 1)[0] + "/"
                names.add(token)
            else:
                names.add(prefix + token)
    return names


def test_every_module_is_in_the_architecture_table() -> None:
    modules = package_modules()
    assert "ingest/tail.py" in modules and "events.py" in modules
    assert sorted(modules - documented_modules()) == []


def test_the_architecture_table_names_no_missing_module() -> None:
    assert sorted(documented_modules() - package_modules()) == []
