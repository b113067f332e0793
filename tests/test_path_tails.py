"""A project-relative path filter narrowed by the path's last name (store/where.py
``relative_tail``, the index events_path_tails of schema 10) matches exactly what the
filter matched without it: the narrowing is implied by the filter, for any stored path
and project root (Hypothesis), posix and Windows, whatever the case and separators."""

from __future__ import annotations

import apsw
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.derive.projects import relative_to_project, resolve_path
from agentsrc_daemon.store.vocabulary import PATH_TAIL
from agentsrc_daemon.store.where import Where, path_filter, relative_tail

# Names with the characters that matter: case, dots, both separators, LIKE's wildcards
# and escape, non-ASCII (LIKE and lower() fold ASCII only).
_NAME = st.text(alphabet="aAbB.\\_%é ", min_size=1, max_size=4)


@st.composite
def _stored(draw: st.DrawFn) -> tuple[str, str | None]:
    """A stored path (as the derive stage writes it) and its event's project root."""
    names = draw(st.lists(_NAME, min_size=1, max_size=4))
    if draw(st.booleans()):
        path = resolve_path("/" + "/".join(names), None)
        root_names = names[: draw(st.integers(0, len(names)))]
        root = "/" + "/".join(root_names) if root_names else None
    else:
        sep = draw(st.sampled_from(["\\", "/"]))
        trailing = draw(st.sampled_from(["", "\\", "\\.", "/"]))
        path = "C:" + sep + sep.join(names) + trailing  # kept as written
        root_names = names[: draw(st.integers(0, len(names)))]
        root = "c:\\" + "\\".join(root_names) if root_names else None
    return path, root


def _table(rows: list[tuple[str, str | None]]) -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, path TEXT, data BLOB);"
        f" CREATE INDEX events_path_tails ON events(lower({PATH_TAIL}), kind)"
        "  WHERE kind = 'read' OR kind = 'edit';"
    )
    for path, root in rows:
        data = {"path": path, "rel_path": relative_to_project(path, root), "project_root": root}
        conn.execute("INSERT INTO events(kind, path, data) VALUES ('read', ?, ?)",
                     (path, orjson.dumps(data)))
    return conn


def _ids(conn: apsw.Connection, condition: str, args: list[object]) -> list[int]:
    return [r[0] for r in conn.execute(
        f"SELECT e.id FROM events e WHERE e.kind = 'read' AND {condition} ORDER BY e.id", args)]


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(_stored(), min_size=1, max_size=8), data=st.data())
def test_the_tail_narrowing_changes_no_answer(
    rows: list[tuple[str, str | None]], data: st.DataObject
) -> None:
    conn = _table(rows)
    rels = [r for p, root in rows if (r := relative_to_project(p, root))]
    suffixes = [s for p, _ in rows for sep in "/\\" if (s := p.rsplit(sep, 1)[-1])]
    query = data.draw(st.sampled_from(rels + suffixes) | _NAME | st.builds(
        lambda a, b: a + "/" + b, _NAME, _NAME))
    plain, plain_args = path_filter(query)
    narrowed = Where()
    narrowed.path_matches(query)
    assert _ids(conn, " AND ".join(narrowed.conditions), narrowed.args) == _ids(
        conn, plain, plain_args)


def test_the_tail_is_used_only_where_it_is_implied() -> None:
    assert relative_tail("src/App.py") == "App.py"
    assert relative_tail("./x.ts") == "x.ts"
    assert relative_tail("a\\b.c") == "b.c"
    assert [relative_tail(p) for p in (".", "a/..", "x.", "a/", "/abs/x.py", "C:\\x.py",
                                       "*.py", "src/*.py")] == [None] * 8


def test_a_relative_path_is_an_index_range() -> None:
    conn = _table([("/p/src/a.py", "/p"), ("/p/src/b.py", "/p")])
    where = Where()
    where.add("e.kind = 'read'")
    where.path_matches("src/a.py")
    plan = [r[3] for r in conn.execute(
        f"EXPLAIN QUERY PLAN SELECT e.id FROM events e{where.sql()} ORDER BY e.id", where.args)]
    assert plan == ["SEARCH e USING INDEX events_path_tails (<expr>=? AND kind=?)"]
    assert [r[0] for r in conn.execute(
        f"SELECT e.id FROM events e{where.sql()} ORDER BY e.id", where.args)] == [1]
