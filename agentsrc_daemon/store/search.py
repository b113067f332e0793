"""Full-text search: what is indexed, the text the index is given, and the query
language (parsed here, so a bad query gets a clear message, never SQLite's).

The index is SQLite's FTS5 with the unicode61 tokenizer, given a rewritten copy of each
text (``index_text``) and queries rewritten the same way (``compile_query``):

* identifiers split into their pieces: unicode61 already separates ``rate_limiter`` and
  ``src/rate/limiter.py`` at ``_``, ``/`` and ``.``; camelCase is split here
  (``RateLimiter`` -> ``Rate Limiter``), so ``rate limiter`` finds all three and the
  exact string (a phrase of the same pieces) finds each;
* CJK runs (which unicode61 does not segment: a run is one token) become overlapping
  bigrams (``数据库`` -> ``数据 据库``): a query of two characters is one bigram, a query of
  three or more is the phrase of its bigrams (docs/performance.md has the measurement
  against the trigram tokenizer).

The query language: words (all must match), ``"a phrase"``, ``prefix*``, ``AND``,
``OR``, ``NOT`` (binary: ``a NOT b``) and parentheses. Every word is turned into an
FTS5 phrase of its pieces, so no character of a query reaches FTS5 unquoted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import AgentsrcError

# The event kinds indexed, and where their text is.
INDEXED_KINDS = ("prompt", "message", "command", "read", "edit", "tool_call")
TITLE_KIND = "title"  # a session's title: a hit with no event

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
)
_CJK_RUN = re.compile(f"[{_CJK}]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_TOKEN = re.compile(r"[^\W_]+")


class QuerySyntaxError(AgentsrcError):
    """A search query that does not parse; the message says what is wrong, and where."""


def _bigrams(match: re.Match[str]) -> str:
    run = match.group(0)
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "


def index_text(text: str) -> str:
    """The copy of a text the index is given (see the module docstring)."""
    if not text:
        return ""
    text = _CAMEL.sub(" ", text)
    return _CJK_RUN.sub(_bigrams, text)


def tokens(text: str) -> list[str]:
    """The index's tokens of a text (as unicode61 would split ``index_text``)."""
    return _TOKEN.findall(index_text(text))


def body_of(kind: str, tool: str | None, path: str | None, data: bytes) -> str | None:
    """The text an event is indexed under, or None when it is not indexed. Only what the
    store keeps (already redacted): never tool output or file contents."""
    if kind in ("read", "edit"):
        return path
    if kind == "tool_call":
        return tool
    if kind in ("prompt", "message", "command"):
        d = orjson.loads(data)
        value = d.get("command" if kind == "command" else "text")
        return value if isinstance(value, str) and value else None
    return None


# ---- the query language ------------------------------------------------------------------


@dataclass(slots=True)
class _Tok:
    kind: str  # word | phrase | and | or | not | lparen | rparen
    text: str
    pos: int
    prefix: bool = False


_OPERATORS = {"AND": "and", "OR": "or", "NOT": "not"}


def _lex(q: str) -> list[_Tok]:
    out: list[_Tok] = []
    i, n = 0, len(q)
    while i < n:
        c = q[i]
        if c.isspace():
            i += 1
        elif c == "(":
            out.append(_Tok("lparen", c, i))
            i += 1
        elif c == ")":
            out.append(_Tok("rparen", c, i))
            i += 1
        elif c == '"':
            end = q.find('"', i + 1)
            if end < 0:
                raise QuerySyntaxError(f"unclosed quote: the phrase at position {i + 1} has no closing \"")
            prefix = end + 1 < n and q[end + 1] == "*"
            out.append(_Tok("phrase", q[i + 1 : end], i, prefix))
            i = end + 2 if prefix else end + 1
        else:
            j = i
            while j < n and not q[j].isspace() and q[j] not in '()"':
                j += 1
            word = q[i:j]
            if word in _OPERATORS:
                out.append(_Tok(_OPERATORS[word], word, i))
            else:
                prefix = word.endswith("*")
                out.append(_Tok("word", word.rstrip("*"), i, prefix))
            i = j
    return out


def _phrase(tok: _Tok) -> str:
    pieces = tokens(tok.text)
    if not pieces:
        what = "phrase" if tok.kind == "phrase" else "word"
        raise QuerySyntaxError(
            f"the {what} {tok.text!r} at position {tok.pos + 1} has no letters or digits to search for"
        )
    quoted = '"' + " ".join(pieces) + '"'
    return quoted + " *" if tok.prefix else quoted


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.i = 0

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expr(self) -> str:
        parts = [self.and_expr()]
        while (t := self.peek()) is not None and t.kind == "or":
            self.take()
            parts.append(self.and_expr(after=t))
        return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"

    def and_expr(self, after: _Tok | None = None) -> str:
        parts = [self.not_expr(after)]
        while (t := self.peek()) is not None and t.kind in ("and", "word", "phrase", "lparen"):
            if t.kind == "and":
                self.take()
                parts.append(self.not_expr(after=t))
            else:
                parts.append(self.not_expr())
        return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"

    def not_expr(self, after: _Tok | None = None) -> str:
        left = self.primary(after)
        while (t := self.peek()) is not None and t.kind == "not":
            self.take()
            left = f"({left} NOT {self.primary(after=t)})"
        return left

    def primary(self, after: _Tok | None) -> str:
        t = self.peek()
        if t is None:
            if after is not None:
                raise QuerySyntaxError(f"{after.text} at position {after.pos + 1} needs a term after it")
            raise QuerySyntaxError("the query is empty")
        if t.kind in ("word", "phrase"):
            self.take()
            return _phrase(t)
        if t.kind == "lparen":
            self.take()
            if (nxt := self.peek()) is not None and nxt.kind == "rparen":
                raise QuerySyntaxError(f"empty parentheses at position {t.pos + 1}")
            inner = self.expr()
            close = self.peek()
            if close is None or close.kind != "rparen":
                raise QuerySyntaxError(f"unclosed parenthesis: the one at position {t.pos + 1} has no )")
            self.take()
            return f"({inner})"
        if t.kind == "rparen":
            raise QuerySyntaxError(f"unexpected ) at position {t.pos + 1}")
        raise QuerySyntaxError(
            f"{t.text} at position {t.pos + 1} needs a term before it"
            + (" (NOT excludes: a NOT b)" if t.kind == "not" else "")
        )


def compile_query(q: str) -> str:
    """A user query -> an FTS5 MATCH expression, or QuerySyntaxError."""
    toks = _lex(q)
    if not toks:
        raise QuerySyntaxError("the query is empty")
    p = _Parser(toks)
    out = p.expr()
    if p.peek() is not None:
        t = p.take()
        raise QuerySyntaxError(f"unexpected {t.text} at position {t.pos + 1}")
    return out


def positive_terms(q: str) -> list[list[str]]:
    """The token sequences of the words and phrases a query asks for (not those after
    NOT): what a snippet marks."""
    out: list[list[str]] = []
    skip_next = False
    for t in _lex(q):
        if t.kind == "not":
            skip_next = True
            continue
        if t.kind in ("word", "phrase"):
            if not skip_next:
                pieces = [p.lower() for p in tokens(t.text)]
                if pieces:
                    out.append(pieces)
            skip_next = False
    return out


def snippet(text: str, q: str, width: int = 160) -> dict[str, Any]:
    """A window of ``text`` around the first match of the query's terms, and the
    [start, end) character ranges of the matches in it."""
    flat = " ".join(text.split())
    lowered = flat.lower()
    needles: list[str] = []
    for seq in positive_terms(q):
        needles.extend(seq)
    spans: list[tuple[int, int]] = []
    for needle in sorted(set(needles), key=len, reverse=True):
        start = 0
        while (k := lowered.find(needle, start)) >= 0:
            spans.append((k, k + len(needle)))
            start = k + len(needle)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    lo = 0
    if merged and merged[0][0] > width // 3:
        lo = merged[0][0] - width // 3
    hi = min(len(flat), lo + width)
    prefix = "…" if lo > 0 else ""
    suffix = "…" if hi < len(flat) else ""
    shift = len(prefix) - lo
    marks = [[s + shift, min(e, hi) + shift] for s, e in merged if s >= lo and s < hi]
    return {"snippet": prefix + flat[lo:hi] + suffix, "marks": marks}
