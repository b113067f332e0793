"""Secret scanning: find secrets in the text a model saw or wrote, keep only what is safe.

detect-secrets is the engine: its plugins and filters decide what a secret is. This module
makes it fast enough for a backfill without changing its answers:

1. A prefilter (scan_prefilter.py) makes a few cheap passes over the whole text and picks
   the only lines where an enabled plugin can fire, and which plugins can fire there.
2. On those lines, and only those plugins, detect-secrets' own per-line analysis runs: the
   same calls its file scan makes (``_scan_line`` and ``_is_filtered_out`` from
   detect_secrets.core.scan), with the same line filters, secret filters and context.
3. Results are cached by a hash of the text (tool outputs repeat); ``scan_many`` runs the
   prefilter once over many texts. (Scanning off the ingest thread is the backfill
   worker's: ingest/workers.py runs the whole stage chain in a second process.)

``SecretScanner.scan_naive`` is the reference the fast path is tested against: detect-secrets'
``_process_line_based_plugins`` over every line, as ``scan_file`` does.

Two deliberate differences from detect-secrets' raw values, applied alike to the fast
path and the reference (``widen_values=False`` turns them off): GitHub and GitLab tokens
and private keys are reported whole, not as the prefix or header detect-secrets reports
(see ``SecretScanner._widen``).

What leaves this module: a ``Finding`` per secret with the detect-secrets type name, the
1-based line within the text, an HMAC-SHA256 of the value under a per-install key, and the
value's character span in the text (for redaction; never persisted). The value itself never
leaves, except as its HMAC.

detect-secrets keeps its configuration (plugins, filters) in process-global state. A scanner
installs its configuration when built, the way detect-secrets' own CLI does
(``transient_settings`` then ``get_settings().set``), and re-installs it before a scan if
something else in the process changed it. Two scanners with different plugin sets in one
process work, but the reference scan of one re-installs settings after the other; the
daemon builds one scanner per process (the backfill worker builds its own).

Lines are read the way detect-secrets reads a file: split at \\n, \\r and \\r\\n, then
right-stripped. Content is scanned as a file with no extension would be (the keyword plugin
uses its quotes-required regexes; no file-name filters apply; no network verification).

Long on purpose (about 730 lines): the scanner, its cache and the reference path it is
tested against must call detect-secrets' internals the same way, so they stay together.
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import fnmatch
import functools
import hashlib
import hmac
import io
import itertools
import os
import re
import secrets as _random
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from .. import lean_imports
from ..errors import ConfigError
from .prefilter import Prefilter, count_line_breaks, make_views

# detect-secrets without requests (about 10 MB resident, for the network verification
# this engine never runs): see lean_imports.py. Before the imports below.
lean_imports.import_detect_secrets()

from detect_secrets.core.plugins.util import (  # noqa: E402
    get_mapping_from_secret_type_to_class,
)
from detect_secrets.core.scan import (  # noqa: E402
    _is_filtered_out,
    _process_line_based_plugins,
    _scan_line,
    get_filters_with_parameter,
)
from detect_secrets.settings import (  # noqa: E402
    get_filters,
    get_plugins,
    get_settings,
    transient_settings,
)
from detect_secrets.util.code_snippet import CodeSnippet  # noqa: E402
from detect_secrets.util.inject import call_function_with_arguments  # noqa: E402

log = structlog.get_logger("agentsrc.scan")

# The file name detect-secrets is told the content comes from. No extension: the keyword
# plugin uses its generic (quotes-required) regexes and no file-type special case applies.
CONTENT_FILENAME = "agentsrc-content"

HASH_KEY_FILE = "hash.key"
HASH_KEY_BYTES = 32
USER_PATTERN_PREFIX = "User Pattern: "

# A found value at least this long is redacted wherever it occurs in the text; a shorter
# one (e.g. a keyword value such as password = "abc") only on the line it was found on,
# so that a short common word is not blanked all over a prompt.
REDACT_EVERYWHERE_MIN_CHARS = 8

DEFAULT_CACHE_ENTRIES = 4096
CACHE_MIN_CHARS = 256  # smaller texts scan faster than they hash

# Generic detectors: when one value is found by several plugins, redaction names the
# specific one.
_GENERIC_TYPES = frozenset(
    {"Secret Keyword", "Base64 High Entropy String", "Hex High Entropy String"}
)

# Plugins whose regexes capture only a prefix of the secret, and the private-key plugin
# (reports the header): see SecretScanner._widen.
_PREFIX_CAPTURING_PLUGINS = ("GitHubTokenDetector", "GitLabTokenDetector")
_PRIVATE_KEY_TYPE = "Private Key"

_VERIFICATION_FILTER = "detect_secrets.filters.common.is_ignored_due_to_verification_policies"

# The allowlist filter searches the line and the line before with a dozen regexes, each
# of which needs the literal "pragma:" (case-sensitive: detect_secrets.filters.allowlist
# get_allowlist_regexes, "pragma: ?"). Where neither line holds it the filter is False,
# and skipping it saves its searches (the most costly step of the scan on long lines).
_ALLOWLIST_FILTER = "detect_secrets.filters.allowlist.is_line_allowlisted"
_PRAGMA = "pragma:"

BUILTIN_SENSITIVE_PATHS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".aws/**",
    ".ssh/**",
    ".gnupg/**",
    "secrets/**",
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret in one text. Holds no part of the value: only its keyed hash."""

    type: str  # detect-secrets' secret_type, or "User Pattern: <name>"
    line: int  # 1-based line within the text
    value_hash: str  # HMAC-SHA256 hex of the value under the per-install key
    start: int  # character span of the value's first occurrence on that line, in the
    end: int  # whole text (for redaction; never persisted)


@dataclass(slots=True)
class ScanStats:
    texts: int = 0
    chars: int = 0
    cache_hits: int = 0
    candidate_lines: int = 0
    findings: int = 0
    seconds: float = 0.0


# --------------------------------------------------------------------------- keys


def load_or_create_hash_key(data_dir: Path) -> bytes:
    """The per-install HMAC key: data_dir/hash.key, 32 random bytes, created 0600 and
    atomically (a concurrent creator's key wins and both return it)."""
    path = data_dir / HASH_KEY_FILE
    try:
        return _read_hash_key(path)
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = data_dir / f".{HASH_KEY_FILE}.{os.getpid()}.{_random.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_random.token_bytes(HASH_KEY_BYTES))
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileExistsError):  # a key exists: never replace it
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(data_dir)
    return _read_hash_key(path)


def _read_hash_key(path: Path) -> bytes:
    key = path.read_bytes()
    if len(key) != HASH_KEY_BYTES:
        raise ConfigError(
            f"{path} holds {len(key)} bytes, not {HASH_KEY_BYTES}. Remove it to create a "
            "new key (secrets hashed before will then not match the ones hashed after)."
        )
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o600)
    return key


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- paths


def _segments(path: str) -> list[str]:
    return [s for s in path.replace("\\", "/").split("/") if s not in ("", ".")]


def _match_segments(segs: Sequence[str], pats: Sequence[str]) -> bool:
    """Glob over path segments: '**' matches any number of segments (at least one when it
    ends the pattern, so 'dir/**' means things inside dir), other segments fnmatch."""
    if not pats:
        return not segs
    head = pats[0]
    if head == "**":
        rest = pats[1:]
        first = 1 if not rest else 0
        return any(_match_segments(segs[i:], rest) for i in range(first, len(segs) + 1))
    return bool(segs) and fnmatch.fnmatchcase(segs[0], head) and _match_segments(segs[1:], pats[1:])


def path_matches(path: str, pattern: str) -> bool:
    """Does a path match a glob? A pattern without '/' matches the basename, at any depth
    ('*.pem', 'id_rsa'). A pattern with '/' matches a run of trailing segments anywhere
    in the path ('.aws/**' matches any path inside a '.aws' directory); a leading '/' anchors
    it at the root and a leading '~/' is dropped (home directories differ). Case-sensitive."""
    segs = _segments(path)
    return bool(segs) and _segments_match(segs, pattern)


@functools.lru_cache(maxsize=1024)
def _pattern_segments(pattern: str) -> tuple[bool, tuple[str, ...]]:
    """A glob's (anchored, segments): split once per pattern, not once per path tested
    against it (a read is tested against every sensitive pattern)."""
    anchored = pattern.startswith("/")
    if pattern.startswith("~/"):
        pattern = pattern[2:]
    return anchored, tuple(_segments(pattern))


_GLOB_CHARS = frozenset("*?[")


@functools.lru_cache(maxsize=1024)
def _pattern_kind(pattern: str) -> tuple[int, str]:
    """The shapes most patterns have, told apart once per pattern (a new path is tested
    against every sensitive pattern, a read of a new file at a time): (BASENAME, name)
    for a literal file name, (INSIDE, dir) for a literal ``dir/**``, else (GLOB, "")."""
    anchored, pats = _pattern_segments(pattern)
    if anchored or not pats or len(pats) > 2 or _GLOB_CHARS.intersection(pats[0]):
        return _GLOB, ""
    if len(pats) == 1:
        return _BASENAME, pats[0]  # fnmatchcase without a glob character: equality
    if pats[1] == "**":
        return _INSIDE, pats[0]
    return _GLOB, ""


_GLOB, _BASENAME, _INSIDE = range(3)


def _segments_match(segs: list[str], pattern: str) -> bool:
    """path_matches on a path already split (non-empty ``segs``)."""
    kind, name = _pattern_kind(pattern)
    if kind == _BASENAME:
        return segs[-1] == name
    if kind == _INSIDE:
        return name in segs[:-1]  # the directory, with something inside it
    return _segments_match_glob(segs, pattern)


def _segments_match_glob(segs: list[str], pattern: str) -> bool:
    """_segments_match by the glob rules themselves (every pattern's reference)."""
    anchored, pats = _pattern_segments(pattern)
    if not pats:
        return False
    if len(pats) == 1 and not anchored:
        return fnmatch.fnmatchcase(segs[-1], pats[0])
    if anchored:
        return _match_segments(segs, pats)
    return any(_match_segments(segs[i:], pats) for i in range(len(segs)))


def is_sensitive_path(path: str, patterns: list[str] | None = None) -> bool:
    """Is reading this path a sensitive read? ``patterns`` replaces the built-in list
    when given and non-empty."""
    return _is_sensitive(path, tuple(patterns or BUILTIN_SENSITIVE_PATHS))


# Agents read the same files again and again: a path's answer is remembered (bounded),
# and a new path is split once for all the patterns.
@functools.lru_cache(maxsize=4096)
def _is_sensitive(path: str, patterns: tuple[str, ...]) -> bool:
    segs = _segments(path)
    return bool(segs) and any(_segments_match(segs, p) for p in patterns)


def is_excluded_path(path: str, globs: Iterable[str]) -> bool:
    """scan.exclude_paths: the same glob rules as sensitive paths."""
    return any(path_matches(path, g) for g in globs)


def is_excluded_session(session_id: str, globs: Iterable[str]) -> bool:
    """scan.exclude_sessions: fnmatch over our session ids ('codex:*', 'claude-code:1f2e*')."""
    return any(fnmatch.fnmatchcase(session_id, g) for g in globs)


# --------------------------------------------------------------------------- engine


def default_plugin_names() -> list[str]:
    """detect-secrets' default plugin set: every built-in plugin, as `detect-secrets scan`
    and ``default_settings()`` use."""
    classes: list[type] = list(get_mapping_from_secret_type_to_class().values())
    return [cls.__name__ for cls in classes]


def _install_detect_secrets(plugin_names: list[str]) -> None:
    """Make ``plugin_names`` with detect-secrets' default filters the process's settings.
    transient_settings() builds the configuration and restores the old one on exit; the
    built one is then made permanent, as detect-secrets' CLI does."""
    with transient_settings({"plugins_used": [{"name": n} for n in plugin_names]}) as built:
        pass
    settings = get_settings()
    settings.set(built)
    # Verification calls the vendors' APIs over the network: never.
    settings.disable_filters(_VERIFICATION_FILTER)
    get_plugins.cache_clear()
    get_filters.cache_clear()


def _compile_user_patterns(user_patterns: dict[str, str]) -> list[tuple[str, re.Pattern[str]]]:
    compiled = []
    for name, regex in sorted(user_patterns.items()):
        try:
            compiled.append((USER_PATTERN_PREFIX + name, re.compile(regex, re.MULTILINE)))
        except re.error as exc:
            raise ConfigError(f"scan.user_patterns.{name}: not a valid regex: {exc}") from None
    return compiled


@dataclass(slots=True)
class _Hit:
    """A secret with its value: lives only inside this module."""

    type: str
    line: int
    value: str
    start: int  # offset of the value in the text


class SecretScanner:
    """Scans texts with detect-secrets (fast path) plus user patterns. Not thread-safe:
    use one per thread."""

    def __init__(
        self,
        plugins: list[str] | None,
        user_patterns: dict[str, str] | None,
        hash_key: bytes,
        *,
        cache_size: int = DEFAULT_CACHE_ENTRIES,
        widen_values: bool = True,
    ) -> None:
        if len(hash_key) < 16:
            raise ValueError("hash_key must be at least 16 bytes")
        known = default_plugin_names()
        names = list(dict.fromkeys(plugins)) if plugins else known
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ConfigError(
                f"scan.plugins: unknown detect-secrets plugin(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        self.plugin_names = names
        self._key = bytes(hash_key)
        self._user_patterns = _compile_user_patterns(user_patterns or {})
        self._install()
        self._prefilter, self.fallback_plugins = Prefilter.for_plugins(
            self._plugins, active_filters=set(self._settings_filters)
        )
        if self.fallback_plugins:
            log.warning(
                "scan_prefilter_fallback",
                plugins=self.fallback_plugins,
                detail="no sound anchor for these plugins: they run on every line (slow)",
            )
        self.widen_values = widen_values
        self._prefix_regexes: dict[str, list[re.Pattern[str]]] = {
            plugin.secret_type: list(plugin.denylist)
            for plugin in self._plugins
            if type(plugin).__name__ in _PREFIX_CAPTURING_PLUGINS
        }
        self._cache: OrderedDict[bytes, tuple[Finding, ...]] = OrderedDict()
        self._cache_size = cache_size
        self.stats = ScanStats()

    # -- settings

    def _install(self) -> None:
        _install_detect_secrets(self.plugin_names)
        settings = get_settings()
        self._settings_plugins = copy.deepcopy(settings.plugins)
        self._settings_filters = copy.deepcopy(settings.filters)
        self._plugins = list(get_plugins())

    def _ensure_settings(self, *, plugins_too: bool = False) -> None:
        """Re-install our settings if something else in the process changed them. The
        fast path passes its own plugin objects, so only the filters matter to it."""
        settings = get_settings()
        if settings.filters != self._settings_filters or (
            plugins_too and settings.plugins != self._settings_plugins
        ):
            _install_detect_secrets(self.plugin_names)

    # -- public API

    def value_hash(self, value: str) -> str:
        return hmac.new(
            self._key, value.encode("utf-8", "surrogatepass"), hashlib.sha256
        ).hexdigest()

    def scan(self, text: str) -> list[Finding]:
        """Every secret in ``text``: detect-secrets findings and user-pattern findings,
        sorted by line and position."""
        return self.scan_many([text])[0]

    def scan_many(self, texts: Sequence[str]) -> list[list[Finding]]:
        """``scan`` for several texts at once: the prefilter then makes its passes once
        over all of them (joined by line breaks, so that no line spans two texts), which
        saves the per-call cost that dominates small texts. Same results as ``scan``."""
        began = time.perf_counter()
        results: list[list[Finding]] = [[] for _ in texts]
        keys: list[bytes | None] = [None] * len(texts)
        todo: list[int] = []
        stats = self.stats
        stats.texts += len(texts)
        for i, text in enumerate(texts):
            stats.chars += len(text)
            if not text:
                continue
            if self._cache_size > 0 and len(text) >= CACHE_MIN_CHARS:
                digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16)
                keys[i] = key = digest.digest()
                cached = self._cache.get(key)
                if cached is not None:
                    self._cache.move_to_end(key)
                    self.stats.cache_hits += 1
                    results[i] = list(cached)
                    continue
            todo.append(i)
        if todo:
            batch = [texts[i] for i in todo]
            for i, text, hits in zip(todo, batch, self._scan_fast_many(batch), strict=True):
                # (no hit and no user pattern: no finding, nearly every text)
                findings = self._finalize(text, hits + self._scan_user_patterns(text)) if (
                    hits or self._user_patterns) else []
                results[i] = findings
                self.stats.findings += len(findings)
                cache_key = keys[i]
                if cache_key is not None:
                    self._cache[cache_key] = tuple(findings)
                    if len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
        self.stats.seconds += time.perf_counter() - began
        return results

    def scan_naive(self, text: str) -> list[Finding]:
        """The reference: detect-secrets' line-by-line scan of every line with every plugin
        (``_process_line_based_plugins``, the loop scan_file runs), plus user patterns."""
        if not text:
            return []
        self._ensure_settings(plugins_too=True)
        lines = io.StringIO(text, newline=None).readlines()
        starts = _line_start_offsets(text)
        hits = []
        for secret in _process_line_based_plugins(
            lines=list(enumerate(lines, start=1)), filename=CONTENT_FILENAME
        ):
            value = str(secret.secret_value)
            start = starts[secret.line_number - 1]
            offset = lines[secret.line_number - 1].index(value)
            hits.append(_Hit(secret.type, secret.line_number, value, start + offset))
        return self._finalize(text, hits + self._scan_user_patterns(text))

    def redact(self, text: str) -> tuple[str, list[Finding]]:
        """``text`` with every secret value replaced by [REDACTED:<type>], and the findings.
        A value of REDACT_EVERYWHERE_MIN_CHARS or more is replaced wherever it occurs; a
        shorter one on the lines where it was found."""
        findings = self.scan(text)
        return self.apply_redaction(text, findings), findings

    def apply_redaction(self, text: str, findings: Sequence[Finding]) -> str:
        """``text`` with the values of ``findings`` (from scanning this same text)
        replaced by [REDACTED:<type>]: see ``redact``."""
        if not findings:
            return text
        spans: list[tuple[int, int, int, str]] = []
        for f in findings:
            value = text[f.start : f.end]
            if not value:
                continue
            if len(value) >= REDACT_EVERYWHERE_MIN_CHARS:
                lo, hi = 0, len(text)
            else:
                lo, hi = _str_line_bounds(text, f.start)
            rank = 1 if f.type in _GENERIC_TYPES else 0
            at = text.find(value, lo, hi)
            while at >= 0:
                spans.append((at, at + len(value), rank, f.type))
                at = text.find(value, at + 1, hi)
        spans.sort()
        parts: list[str] = []
        pos = 0
        current: list[Any] | None = None  # [start, end, rank, type] of the open span
        for start, end, rank, type_ in spans:
            if current is not None and start < current[1]:
                current[1] = max(current[1], end)
                if start == current[0] and rank < current[2]:
                    current[2], current[3] = rank, type_
                continue
            if current is not None:
                parts.append(text[pos : current[0]])
                parts.append(f"[REDACTED:{current[3]}]")
                pos = current[1]
            current = [start, end, rank, type_]
        if current is not None:
            parts.append(text[pos : current[0]])
            parts.append(f"[REDACTED:{current[3]}]")
            pos = current[1]
        parts.append(text[pos:])
        return "".join(parts)

    # -- internals

    def _finalize(self, text: str, hits: list[_Hit]) -> list[Finding]:
        """Hits to Findings: values widened where detect-secrets reports a fragment of the
        secret (see _widen), de-duplicated, sorted, hashed."""
        if not hits:
            return []  # nearly every text
        if self.widen_values:
            hits = [wide for hit in hits for wide in self._widen(text, hit)]
        seen: set[tuple[str, int, str]] = set()
        out = []
        for h in sorted(hits, key=lambda h: (h.line, h.start, h.type)):
            if (h.type, h.line, h.value) in seen:
                continue
            seen.add((h.type, h.line, h.value))
            end = h.start + len(h.value)
            out.append(Finding(h.type, h.line, self.value_hash(h.value), h.start, end))
        return out

    def _widen(self, text: str, hit: _Hit) -> list[_Hit]:
        """The whole secret where detect-secrets reports a fragment of it, so that the hash
        tells secrets apart and redaction removes all of it:

        * GitHub and GitLab tokens: their regexes capture the prefix ('ghp', 'glpat'), and
          detect-secrets reports the capture (Yelp/detect-secrets#858): every such token
          would hash alike. The value becomes each whole regex match on the line whose
          capture is the reported value.
        * Private keys: the plugin reports its header text (the BEGIN ... line). The
          value becomes the key block: from the header's dashes to the END line (PuTTY:
          the Private-MAC line), else to the first empty line, else to the end of the text.
        """
        if hit.type in self._prefix_regexes:
            line_start, line_end = _str_line_bounds(text, hit.start)
            line = text[line_start:line_end].rstrip()
            wide = [
                _Hit(hit.type, hit.line, m.group(0), line_start + m.start())
                for regex in self._prefix_regexes[hit.type]
                for m in regex.finditer(line)
                if hit.value in _findall_values(m)
            ]
            return wide or [hit]
        if hit.type == _PRIVATE_KEY_TYPE:
            start, end = _private_key_block(text, hit.start, hit.value)
            return [_Hit(hit.type, hit.line, text[start:end], start)]
        return [hit]

    def _scan_fast_many(self, texts: list[str]) -> list[list[_Hit]]:
        """The fast path over several texts: prefilter passes over all of them joined by
        '\n', then detect-secrets on each selected line with the selected plugins."""
        combined = texts[0] if len(texts) == 1 else "\n".join(texts)
        views = make_views(combined)
        candidates = self._prefilter.candidates(views)
        out: list[list[_Hit]] = [[] for _ in texts]
        if not candidates:
            return out  # no line could make a plugin fire (most rounds)
        self._ensure_settings()  # what the plugins run with (the prefilter reads none)
        bases = list(itertools.accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
        data, has_cr = views.exact, views.has_cr
        current, base, line_no, counted_to = -1, 0, 1, 0
        for start in sorted(candidates):
            index = bisect.bisect_right(bases, start) - 1
            if index != current:  # first selected line of this text: count from its start
                current, base = index, bases[index]
                line_no, counted_to = 1, base
            if start - base >= len(texts[index]):
                continue  # the empty line after the text's last line break: not a line
            line_no += count_line_breaks(data, counted_to, start, has_cr)
            counted_to = start
            end = _line_end(data, start, has_cr)
            line = combined[start:end].rstrip()
            context = _context(combined, data, start, line, line_no, has_cr)
            self.stats.candidate_lines += 1
            for type_, value in self._analyze_line(line, line_no, context, candidates[start]):
                out[index].append(_Hit(type_, line_no, value, start - base + line.index(value)))
        return out

    def _analyze_line(
        self, line: str, line_no: int, context: CodeSnippet, plugin_indices: set[int]
    ) -> set[tuple[str, str]]:
        """detect-secrets' per-line analysis, as in core.scan._process_line_based_plugins,
        restricted to the plugins that can fire on this line."""
        found: set[tuple[str, str]] = set()
        pragma = _PRAGMA in line or _PRAGMA in context.previous_line
        if _filtered_out(
            ("line",), pragma,
            filename=CONTENT_FILENAME,
            line=line,
            context=context,
        ):
            return found
        for index in sorted(plugin_indices):
            plugin = self._plugins[index]
            for secret in _scan_line(
                plugin=plugin,
                filename=CONTENT_FILENAME,
                line=line,
                line_number=line_no,
                context=context,
            ):
                if _filtered_out(
                    ("context",), pragma,
                    filename=secret.filename,
                    secret=secret.secret_value,
                    plugin=plugin,
                    line=line,
                    context=context,
                ):
                    continue
                found.add((secret.type, str(secret.secret_value)))
        return found

    def _scan_user_patterns(self, text: str) -> list[_Hit]:
        """User patterns: searched over the whole text (MULTILINE, so ^ and $ are per line);
        a match that spans a line break is ignored. The value is the group named 'secret'
        if the pattern has one, else the whole match."""
        if not self._user_patterns:
            return []
        hits = []
        for type_, pattern in self._user_patterns:
            group = "secret" if "secret" in pattern.groupindex else 0
            line_no, counted_to = 1, 0
            for m in pattern.finditer(text):
                value = m.group(group)
                if not value or "\n" in value or "\r" in value:
                    continue
                value_start = m.start(group)
                line_start = _str_line_bounds(text, value_start)[0]
                line_no += _str_count_breaks(text, counted_to, line_start)
                counted_to = line_start
                hits.append(_Hit(type_, line_no, value, value_start))
        return hits


def _filtered_out(required: tuple[str, ...], pragma: bool, **kwargs: Any) -> bool:
    """detect-secrets' ``_is_filtered_out``; without a pragma in the line or the line
    before, the allowlist filter (False there, see _ALLOWLIST_FILTER) is not run."""
    if pragma:
        return bool(_is_filtered_out(required_filter_parameters=required, **kwargs))
    for filter_fn in get_filters_with_parameter(*required):
        if filter_fn.path == _ALLOWLIST_FILTER:
            continue
        try:
            if call_function_with_arguments(filter_fn, **kwargs):
                return True
        except TypeError:  # as _is_filtered_out: a filter this call cannot feed
            pass
    return False


def _findall_values(m: re.Match[str]) -> list[str]:
    """What RegexBasedDetector.analyze_string yields for one match (findall semantics)."""
    if m.re.groups == 0:
        return [m.group(0)]
    if m.re.groups == 1:
        return [m.group(1) or ""]
    return [g for g in m.groups() if g]


_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----")
_PUTTY_END = re.compile(r"Private-MAC:[^\n\r]*")
# Where a key block without its end marker stops: an empty line, or the next key's header.
_BLOCK_STOP = re.compile(
    r"(?:\r\n|\r|\n)(?:[ \t]*(?:\r\n|\r|\n)|-*BEGIN [A-Z0-9 ]*PRIVATE KEY|PuTTY-User-Key-File-)"
)


def _private_key_block(text: str, header_at: int, header: str) -> tuple[int, int]:
    """The span of the key whose header the plugin reported (see SecretScanner._widen)."""
    start = header_at
    while start > 0 and text[start - 1] == "-":
        start -= 1
    after = header_at + len(header)
    stop = _BLOCK_STOP.search(text, after)
    limit = stop.start() if stop else len(text.rstrip())
    end_marker = _PUTTY_END if header.startswith("PuTTY") else _PEM_END
    m = end_marker.search(text, after, limit)
    return start, m.end() if m else limit


def _line_end(data: bytes, start: int, has_cr: bool) -> int:
    end = data.find(b"\n", start)
    if end < 0:
        end = len(data)
    if has_cr:
        cr = data.find(b"\r", start, end)
        if cr >= 0:
            end = cr
    return end


def _context(
    text: str, data: bytes, start: int, line: str, line_no: int, has_cr: bool
) -> CodeSnippet:
    """The code snippet detect-secrets' filters see. Of the snippet, the active filters
    read only the target line and the line before it (the allowlist 'nextline' pragma),
    which detect-secrets passes as read from the file: with its line break."""
    if line_no == 1:
        return CodeSnippet(snippet=[line], start_line=0, target_index=0)
    prev_end = start - 1
    if has_cr and data[prev_end : prev_end + 1] == b"\n" and data[prev_end - 1 : prev_end] == b"\r":
        prev_end -= 1
    prev_start = data.rfind(b"\n", 0, prev_end) + 1
    if has_cr:
        prev_start = max(prev_start, data.rfind(b"\r", 0, prev_end) + 1)
    previous = text[prev_start:prev_end] + "\n"
    return CodeSnippet(snippet=[previous, line], start_line=line_no - 2, target_index=1)


def _line_start_offsets(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]


def _str_line_bounds(text: str, pos: int) -> tuple[int, int]:
    start = max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1
    ends = [e for e in (text.find("\n", pos), text.find("\r", pos)) if e >= 0]
    return start, min(ends) if ends else len(text)


def _str_count_breaks(text: str, start: int, end: int) -> int:
    return (
        text.count("\n", start, end) + text.count("\r", start, end) - text.count("\r\n", start, end)
    )
