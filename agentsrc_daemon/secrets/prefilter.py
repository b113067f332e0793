"""The scanner's fast path: which lines of a text could make an enabled detect-secrets
plugin fire, found with a few cheap passes over the whole text.

Only the lines this module selects are handed to detect-secrets (see scan.py), and on each
only the plugins selected for it, so the selection must be a SUPERSET: if a plugin can
report anything on a line, that line is selected for that plugin. Each anchor below is a
necessary condition derived from the plugin's own regexes in detect-secrets 1.5
(detect_secrets/plugins/*.py): if the plugin reports a value on a line, the anchor matches
inside that same line (and so does the anchor's line check, if it has one). The comment
beside each anchor says why. The equivalence tests (tests/test_scan_equivalence.py) check
the claim against detect-secrets' own line-by-line scan.

How the passes see the text
---------------------------
A line is what detect-secrets gets when it reads a file: the text split at ``\\n``, ``\\r``
and ``\\r\\n`` (universal newlines), then right-stripped. The passes do not split the text;
they run over two byte strings with exactly one byte per character of the text, so byte
offsets are character offsets:

* ``exact``: the text encoded as Latin-1, every character outside Latin-1 replaced by
  ``?``, except the four characters that Python's ``re.IGNORECASE`` matches to an ASCII
  letter (U+0130 and U+0131 match ``i``, U+017F matches ``s``, U+212A matches ``k``; none is
  in Latin-1), which become that letter first. Latin-1 holds no other character that a
  plugin's ASCII literals or ASCII classes could match, and no decimal digit but 0-9.
* ``folded``: ``exact`` lower-cased (ASCII letters only, so it stays one byte per
  character).

An anchor for a case-insensitive plugin regex is written in lower case and runs on
``folded``; so may an anchor for a case-sensitive one (matching it without case only
widens it). Where a plugin regex can match a character outside ASCII (``\\d``, ``\\w``,
``\\s``, negated classes), the anchor's class takes ``?``, the Latin-1 bytes it could be and
the four letters as well. No anchor or line check can match ``\\n`` or ``\\r``, so every match
lies inside one line.

Speed: anchors are grouped into a few gates (one regex per group of anchors that start
with the same literal character, so that the regex engine skips quickly to that
character). A gate's match marks its line; then each anchor of the gate is tried on that
line alone. Most texts have no match at all, and cost one search per gate.

Plugins this module has no anchor for (a custom plugin, or a plugin whose regexes changed
in another detect-secrets version: see ``PLUGIN_FINGERPRINTS``) run on every line: slower,
never lossy.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

EXACT = "exact"
FOLDED = "folded"

# Non-ASCII characters that re.IGNORECASE matches to an ASCII letter (computed over all of
# Unicode with Python 3.11's re). Mapping them to that letter keeps ``folded`` a superset.
CASE_FOLD_SPECIALS = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}

# The texts up to this long are first searched with every gate of a view joined in one
# regex. Only short ones: the joined regex loses the gates' skip to their first literal
# (8 bytes: 0.7 us against 2.4 for the gates one by one; 2,000 bytes: 100 us against 30).
QUICK_CHECK_BYTES = 128

# The quotes an entropy plugin's value sits between (its regex's ``([\'"])``).
ENTROPY_QUOTES = _DQ, _SQ = (b'"', b"'")

# Floating-point slack for the entropy bounds: the plugin sums its terms in another order,
# so a value whose exact entropy equals the limit may come out a hair above it.
ENTROPY_SLACK = 1e-9

# An anchor: (view, pattern, line check or None).
Anchor = tuple[str, bytes, bytes | None]

# Byte classes that stand, on a view, for the plugins' Unicode classes inside one line.
# A '?' may be any character outside Latin-1, so each class that could match one has '?'.
_W = rb"[0-9a-z_\x80-\xff?]"  # \w, on ``folded`` (no ASCII upper case is left there)
_S = rb"[ \t\x0b\x0c\x1c-\x1f\x85\xa0?]"  # \s, less the line breaks
_X = rb"[^ \t\n\r\x0b\x0c\x1c-\x1f\x85\xa0]"  # [^\s]
_Q = rb"[\"'`]"  # the keyword plugin's QUOTE

# --- KeywordDetector -----------------------------------------------------------------
# Its keywords (detect_secrets.plugins.keyword.DENYLIST, IGNORECASE):
#   api_?key auth_?key service_?key account_?key db_?key database_?key priv_?key
#   private_?key client_?key db_?pass database_?pass key_?pass password passwd pwd secret
#   contraseña contrasena
# ('.' stands for the ñ, one Latin-1 byte in the views.)
_KEYWORD = (
    rb"(?:(?:api|auth|service|account|db|database|priv|private|client)_?key"
    rb"|(?:db|database|key)_?pass|password|passwd|pwd|secret|contrase.a)"
)
# fmt: off
_KEY_PREFIXES = (
    b"api", b"auth", b"service", b"account", b"db", b"database", b"priv", b"private", b"client"
)
# fmt: on
_PASS_PREFIXES = (b"db", b"database", b"key")


def _lookbehinds(word: bytes, prefixes: tuple[bytes, ...]) -> bytes:
    """'(?<=apikey)|(?<=api_key)|...': 'word' preceded by a prefix, with or without '_'."""
    return b"|".join(b"(?<=" + p + sep + word + b")" for p in prefixes for sep in (b"", b"_"))


# For a file with no extension the plugin tries its QUOTES_REQUIRED regexes (K: a keyword
# and \w*; C: []'"]{0,2}; Q: a quote; V: the secret):
#   (1) K C? : \s* Q V Q           (3) K C? \s* (={1,3}|!==?) \s* Q V Q
#   (5) K C? \s* =>? \s* Q V Q      (4) K [^\s]{0,50}? \s* Q V Q ;
#   (2) Q V Q \s* [!=]{2,3} \s* \w* K   (this one case-sensitive)
# The anchors find a keyword quickly (each starts with a literal; what must come before
# 'key' or 'pass' is checked by fixed-width lookbehinds). The line check asks for the
# shape of one of (1)-(5) around a keyword: (1), (3), (5) all have, after K C? \s*, one of
# [:=!], at most two of [=>], \s* and a quote.
# fmt: off
_KEYWORD_LINE_CHECK = (
    _KEYWORD + _W + rb"*(?:[\]'\"]{0,2}" + _S + rb"*[:=!][=>]{0,2}" + _S + rb"*" + _Q
    + rb"|" + _X + rb"{0,50}" + _S + rb"*" + _Q + rb"[^;\n\r]*+;)"
    + rb"|[!=]{2}" + _S + rb"*" + _W + rb"*" + _KEYWORD
)
# fmt: on
_KEYWORD_ANCHORS: tuple[Anchor, ...] = tuple(
    (FOLDED, anchor, _KEYWORD_LINE_CHECK)
    for anchor in (
        b"key(?:" + _lookbehinds(b"key", _KEY_PREFIXES) + b")",
        # password, passwd; or db_?pass, database_?pass, key_?pass
        b"pass(?:w|" + _lookbehinds(b"pass", _PASS_PREFIXES) + b")",
        b"pwd",
        b"secret",
        b"contrase",  # starts both spellings
    )
)

# --- build_assignment_regex() plugins (Cloudant, IBM, Softlayer) ---------------------------
# The tail it puts between a keyword and the secret: an optional quote, an optional ']',
# spaces, one of = : := => ' +' ::, spaces, an optional quote.
_ASSIGN_TAIL = rb"[\"']?\]?[ ]*(?:=|:|:=|=>|[ ]+|::)[ ]*[\"']?"

# --- Line checks: a plugin's regex with \s, \d and the lookarounds' \w widened to the views
# (a widened negative lookaround only rejects what the plugin's rejects).
_ARTIFACTORY_LINE_CHECK = (
    rb"(?:^|[=:\"]|" + _S + rb")"
    rb"(?:AKC[a-zA-Z0-9]{10,}|AP[0-9A-F?][a-zA-Z0-9]{8,})"
    rb"(?:[\"]|" + _S + rb"|$)"
)
_OCTET = rb"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_IP_LINE_CHECK = (
    rb"(?<![0-9A-Za-z_.])(?!192\.168\.|127\.|10\.|172\.(?:1[6-9]|2[0-9]|3[01]))"
    rb"(?:" + _OCTET + rb"\.){3}" + _OCTET + rb"(?::[0-9?]{1,5})?(?![0-9A-Za-z_.])"
)

# Anchors per plugin class.
ANCHORS: dict[str, tuple[Anchor, ...]] = {
    # (?:\s|=|:|"|^)AKC[a-zA-Z0-9]{10,}(?:\s|"|$) and the same with AP[\dABCDEF]...{8,}.
    "ArtifactoryDetector": (
        (EXACT, rb"AKC[a-zA-Z0-9]{10}", _ARTIFACTORY_LINE_CHECK),
        (EXACT, rb"AP[0-9A-F?][a-zA-Z0-9]{8}", _ARTIFACTORY_LINE_CHECK),
    ),
    # The key id regex (A3T.|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}, factored; the secret key
    # regex aws.{0,20}?(key|pwd|pw|password|pass|token).{0,20}?['"]...['"] is IGNORECASE
    # ('pw' covers pwd, 'pass' covers password; '.' never matches a line break in a line).
    "AWSKeyDetector": (
        (EXACT, rb"A(?:3T[A-Z0-9]|BIA|CCA|KIA|SIA)[0-9A-Z]{16}", None),
        (FOLDED, rb"aws[^\n\r]{0,20}?(?:key|pw|pass|token)", None),
    ),
    "AzureStorageKeyDetector": ((EXACT, rb"AccountKey=[a-zA-Z0-9+/=]{88}", None),),
    # ://[^R\s]+:([^R\s]+)@ where R holds ':' '/' '@' (and more): ours excludes fewer.
    "BasicAuthDetector": ((EXACT, rb"://[^\s:@/]+:[^\s:@/]+@", None),),
    # build_assignment_regex((cloudant|cl|clou), (api)?(key|pwd|pw|password|pass|token), ..)
    # and https?://...:...@...cloudant.com, all IGNORECASE.
    "CloudantDetector": (
        (FOLDED, rb"cl(?:oudant|(?:ou)?[_-]?(?:api)?(?:key|pw|pass|token))", None),
    ),
    # [MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}
    "DiscordBotTokenDetector": ((EXACT, rb"\.[a-zA-Z0-9_?\-]{6}\.[a-zA-Z0-9_?\-]{27}", None),),
    # (ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}
    "GitHubTokenDetector": ((FOLDED, rb"gh[pousr]_[a-z0-9_]{36}", None),),
    # (glpat|gldt|glft|glsoat|glrt)-..., GR1348941..., glcbt-..., glimt-..., glptt-...,
    # glagent-..., gloas-...
    "GitLabTokenDetector": (
        (FOLDED, rb"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-", None),
        (FOLDED, rb"gr1348941", None),
    ),
    # build_assignment_regex(ibm/cloud/iam prefix or nothing, (key|pwd|password|pass|token),
    # [a-zA-Z0-9_\-]{44}), IGNORECASE: the keyword, the assignment, 44 secret characters.
    "IbmCloudIamDetector": tuple(
        (FOLDED, keyword + _ASSIGN_TAIL + rb"[a-z0-9_\-]{44}", None)
        for keyword in (rb"key", rb"pwd", rb"pass(?:word)?", rb"token")
    ),
    # build_assignment_regex(.., secret[-_]?(access)?[-_]?key, [a-f0-9]{48}), IGNORECASE.
    "IbmCosHmacDetector": ((FOLDED, rb"secret[-_]?(?:access)?[-_]?key", None),),
    # Four dotted octets of ASCII digits: from the first dot to the last octet's first digit.
    "IPPublicDetector": ((EXACT, rb"\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]", _IP_LINE_CHECK),),
    # eyJ[A-Za-z0-9-_=]+\.[A-Za-z0-9-_=]+\.?...
    "JwtTokenDetector": ((FOLDED, rb"eyj", None),),
    "KeywordDetector": _KEYWORD_ANCHORS,
    # [0-9a-z]{32}-us[0-9]{1,2}
    "MailchimpDetector": ((EXACT, rb"-us[0-9]", None),),
    # \/\/.+\/:_authToken=\s*...
    "NpmDetector": ((EXACT, rb"/:_authToken=", None),),
    # sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}
    "OpenAIDetector": ((FOLDED, rb"t3blbkfj", None),),
    # Every header it knows contains 'PRIVATE KEY', or is PuTTY's key-file header (version 2).
    "PrivateKeyDetector": ((FOLDED, rb"p(?:rivate key|utty-user-key-file-2)", None),),
    # pypi-AgEIcHlwaS5vcmc... and pypi-AgENdGVzdC5weXBpLm9yZw...
    "PypiTokenDetector": ((FOLDED, rb"pypi-age", None),),
    "SendGridDetector": ((EXACT, rb"SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}", None),),
    # xox[abposr]-... and https://hooks.slack.com/services/T..., both IGNORECASE.
    "SlackDetector": (
        (FOLDED, rb"xox[abposr]-", None),
        (FOLDED, rb"hooks\.slack\.com/services/t", None),
    ),
    # build_assignment_regex((softlayer|sl)[_-]?(api)?, (key|pwd|password|pass|token), ..)
    # and https?://api.softlayer.com/soap/..., both IGNORECASE.
    "SoftlayerDetector": ((FOLDED, rb"s(?:oftlayer|l[_-]?(?:api)?(?:key|pwd|pass|token))", None),),
    # sq0csp-[0-9A-Za-z\\\-_]{43}
    "SquareOAuthDetector": ((FOLDED, rb"sq0csp-", None),),
    # (?:r|s)k_live_[0-9a-zA-Z]{24}
    "StripeDetector": ((FOLDED, rb"k_live_[0-9a-z]{24}", None),),
    # \d{8,10}:[0-9A-Za-z_-]{35}: from the colon (\d may be a non-ASCII digit).
    "TelegramBotTokenDetector": ((EXACT, rb":[0-9A-Za-z_-]{35}", rb"[0-9?]{8}:[0-9A-Za-z_-]{35}"),),
    "TwilioKeyDetector": (
        (EXACT, rb"AC[a-z0-9]{32}", None),
        (EXACT, rb"SK[a-z0-9]{32}", None),
    ),
}

# Plugins that cannot report anything while a filter is active: the public-IP plugin's
# value is digits, dots and a colon, and is_not_alphanumeric_string drops every value
# without an ASCII letter. (detect-secrets' default filters include it.)
NEVER_REPORTED_UNDER: dict[str, str] = {
    "IPPublicDetector": "detect_secrets.filters.heuristic.is_not_alphanumeric_string",
}

# The high-entropy plugins are anchored by their own rule instead: a value is a run of the
# plugin's charset between two equal quotes, reported when its entropy is above the limit.
ENTROPY_PLUGINS = frozenset({"Base64HighEntropyString", "HexHighEntropyString"})

# Fingerprints of the plugin regexes the anchors were derived from (detect-secrets 1.5.0).
# A plugin whose fingerprint differs runs on every line instead.
PLUGIN_FINGERPRINTS: dict[str, str] = {
    "ArtifactoryDetector": "5d4a6d17110af66f",
    "AWSKeyDetector": "0deeb94ddc566d4e",
    "AzureStorageKeyDetector": "1452f7871c342615",
    "BasicAuthDetector": "1371b6c5908f24ae",
    "CloudantDetector": "c64d70d1dead6d6d",
    "DiscordBotTokenDetector": "7950eb1d865960f3",
    "GitHubTokenDetector": "751e951ce363c521",
    "GitLabTokenDetector": "d8488c1c3a7e93db",
    "Base64HighEntropyString": "8499c8fc00f3d8fe",
    "HexHighEntropyString": "c9f1ab0076359918",
    "IbmCloudIamDetector": "9118e0dbdb9654c1",
    "IbmCosHmacDetector": "84e2b9544433d8f3",
    "IPPublicDetector": "10814e0ad0cce934",
    "JwtTokenDetector": "8c0bf4737a03c6c8",
    "KeywordDetector": "c24f0d8e8ab1140b",
    "MailchimpDetector": "3035dc5a75b747d9",
    "NpmDetector": "67bc10e084c90258",
    "OpenAIDetector": "d75ea82ef88b0d4d",
    "PrivateKeyDetector": "c8d2bfcb8e73e376",
    "PypiTokenDetector": "f2dbcfda8fe43a13",
    "SendGridDetector": "6ca9ab1a4762bb98",
    "SlackDetector": "e85d4c95a585cceb",
    "SoftlayerDetector": "d457ab1430821a70",
    "SquareOAuthDetector": "ba51c59f2081ed1d",
    "StripeDetector": "ce4e4e92854c38b4",
    "TelegramBotTokenDetector": "99397e77cfd24809",
    "TwilioKeyDetector": "75a32b7f43e72c1a",
}


def plugin_fingerprint(plugin: Any) -> str:
    """A short hash of what a plugin matches with: its regexes and flags (for the entropy
    plugins, charset and regex; for the keyword plugin, the keyword list and its
    quotes-required regexes). Regex changes are what the anchors depend on."""
    name = type(plugin).__name__
    parts: list[str] = [name]
    if name in ENTROPY_PLUGINS:
        parts += [
            str(getattr(plugin, "charset", "")),
            _pattern_text(getattr(plugin, "regex", None)),
        ]
    elif name == "KeywordDetector":
        from detect_secrets.plugins import keyword

        parts.append(repr(keyword.DENYLIST))
        regex_to_group = keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
        parts += [f"{_pattern_text(r)}#{g}" for r, g in regex_to_group.items()]
    else:
        parts += [_pattern_text(r) for r in getattr(plugin, "denylist", ())]
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:16]


def _pattern_text(regex: Any) -> str:
    if regex is None:
        return ""
    return f"{regex.pattern}/{int(regex.flags)}"


@dataclass(slots=True)
class TextViews:
    """The byte views of one text (see the module docstring)."""

    exact: bytes
    folded: bytes
    has_cr: bool


def make_views(text: str) -> TextViews:
    if text.isascii():
        exact = text.encode("ascii")
    else:
        for special, letter in CASE_FOLD_SPECIALS.items():
            if special in text:
                text = text.replace(special, letter)
        exact = text.encode("latin-1", "replace")
    return TextViews(exact, exact.lower(), b"\r" in exact)  # by position: made for every text


@dataclass(slots=True)
class _Member:
    plugin_index: int
    pattern: re.Pattern[bytes]
    line_check: re.Pattern[bytes] | None


@dataclass(slots=True)
class _Gate:
    """Anchors on one view that start with the same literal, searched as one regex."""

    folded: bool
    regex: re.Pattern[bytes]
    members: list[_Member]


@dataclass(slots=True)
class _EntropyRule:
    plugin_index: int
    patterns: tuple[re.Pattern[bytes], ...]  # one per quote character
    min_len: int
    limit: float


@dataclass(slots=True)
class Prefilter:
    """Anchors compiled for one ordered list of plugins. ``candidates()`` maps the start
    offset of each selected line to the indices of the plugins to run on it."""

    gates: list[_Gate] = field(default_factory=list)
    entropy: list[_EntropyRule] = field(default_factory=list)
    every_line: list[int] = field(default_factory=list)  # plugins with no sound anchor
    # Every gate of a view as one regex: a short text none of them matches costs one
    # search per view, not one per gate (QUICK_CHECK_BYTES says why only short ones).
    quick: list[tuple[bool, re.Pattern[bytes]]] = field(default_factory=list)

    @classmethod
    def for_plugins(
        cls, plugins: Sequence[Any], active_filters: Collection[str] = ()
    ) -> tuple[Prefilter, list[str]]:
        """Build the prefilter for these plugins under these detect-secrets filters (their
        import paths); also return the names of plugins that fell back to every-line
        scanning (unknown plugin, or regexes unlike the ones the anchors were written for)."""
        pf = cls()
        fallbacks: list[str] = []
        groups: dict[tuple[str, bytes], list[tuple[int, bytes, bytes | None]]] = {}
        for index, plugin in enumerate(plugins):
            name = type(plugin).__name__
            known = PLUGIN_FINGERPRINTS.get(name) == plugin_fingerprint(plugin)
            if known and NEVER_REPORTED_UNDER.get(name, "") in active_filters:
                continue  # can never report: no line needs it
            if not known:
                pf.every_line.append(index)
                fallbacks.append(name)
            elif name in ENTROPY_PLUGINS:
                pf.entropy.append(_entropy_rule(index, plugin))
            else:
                for view, pattern, check in ANCHORS[name]:
                    groups.setdefault((view, _first_literal(pattern)), []).append(
                        (index, pattern, check)
                    )
        for (view, _), anchors in groups.items():
            members = [
                _Member(i, re.compile(p), re.compile(c) if c is not None else None)
                for i, p, c in anchors
            ]
            regex = re.compile(b"|".join(b"(?:" + p + b")" for _, p, _ in anchors))
            pf.gates.append(_Gate(view == FOLDED, regex, members))
        for folded in (False, True):
            patterns = [g.regex.pattern for g in pf.gates if g.folded is folded]
            if patterns:
                pf.quick.append((folded, re.compile(b"|".join(b"(?:" + p + b")" for p in patterns))))
        return pf, fallbacks

    def candidates(self, views: TextViews) -> dict[int, set[int]]:
        hits: dict[int, set[int]] = {}
        exact, folded, has_cr = views.exact, views.folded, views.has_cr
        gates = self.gates
        if self.quick and len(exact) <= QUICK_CHECK_BYTES:
            for on_folded, regex in self.quick:
                if regex.search(folded if on_folded else exact):
                    break
            else:
                gates = []  # a match of any gate is a match of its view's quick regex
        for gate in gates:
            data = folded if gate.folded else exact
            m = gate.regex.search(data)  # most texts: no match, one call
            while m is not None:
                start, end = _line_bounds(data, m.start(), has_cr)
                line = data[start:end]
                for member in gate.members:
                    if (len(gate.members) == 1 or member.pattern.search(line)) and (
                        member.line_check is None or member.line_check.search(line)
                    ):
                        hits.setdefault(start, set()).add(member.plugin_index)
                m = gate.regex.search(data, end + 1)  # this line is done
        # Each entropy pattern starts with its quote character: without one, no run.
        entropy = self.entropy if (_DQ in exact or _SQ in exact) else ()
        for rule in entropy:
            for pattern in rule.patterns:
                for start in _entropy_line_starts(rule, pattern, exact, has_cr):
                    hits.setdefault(start, set()).add(rule.plugin_index)
        if self.every_line:
            for start in all_line_starts(exact, has_cr):
                hits.setdefault(start, set()).update(self.every_line)
        return hits


def _first_literal(pattern: bytes) -> bytes:
    """The literal character a pattern starts with (grouping key; b'' when unsure).
    Grouping only affects speed: a gate matches wherever any of its anchors does."""
    if pattern[:1] == b"\\" and pattern[1:2] in (b".", b"-", b"/"):
        first, rest = pattern[1:2], pattern[2:]
    else:
        first, rest = pattern[:1], pattern[1:]
    if not (first.isalnum() or first in (b":", b".", b"-", b"/")) or rest[:1] in (b"?", b"*", b"{"):
        return b""
    return first


def _entropy_rule(index: int, plugin: Any) -> _EntropyRule:
    charset: str = plugin.charset
    limit = float(plugin.entropy_limit)
    # Entropy is at most log2(len): a value can only pass with len > 2**limit (less slack).
    min_len = max(1, math.floor(2 ** (limit - ENTROPY_SLACK)) + 1)
    # The plugin's regex is ([\'"])([charset]+)(\1), used with findall. Each value it
    # yields is a maximal run of the charset between two equal quotes (quotes are not in
    # the charset). These patterns find every such run, one quote character each (the
    # closing quote is only looked at, so it can open the next run): a superset of what
    # findall yields, whatever its overlaps. The charset is ASCII: the views keep it.
    klass = re.escape(charset).encode("ascii")
    patterns = tuple(
        re.compile(quote + b"([" + klass + b"]{%d,}+)(?=" % min_len + quote + b")")
        for quote in ENTROPY_QUOTES
    )
    return _EntropyRule(index, patterns, min_len, limit)


def entropy_upper(run: bytes) -> float:
    """Shannon entropy of the run over its own characters: what the plugin computes (its
    charset holds every character of the run), before the hex plugin's discount for
    all-digit values (which only lowers it)."""
    n = len(run)
    total = 0.0
    for byte in set(run):
        p = run.count(byte) / n
        total -= p * math.log2(p)
    return total


def _line_bounds(data: bytes, pos: int, has_cr: bool) -> tuple[int, int]:
    """Start and end (exclusive, before the line break) of the line holding ``pos``."""
    start = data.rfind(b"\n", 0, pos) + 1
    end = data.find(b"\n", pos)
    if end < 0:
        end = len(data)
    if has_cr:
        start = max(start, data.rfind(b"\r", 0, pos) + 1)
        cr = data.find(b"\r", pos, end)
        if cr >= 0:
            end = cr
    return start, end


def _entropy_line_starts(
    rule: _EntropyRule, pattern: re.Pattern[bytes], data: bytes, has_cr: bool
) -> Iterable[int]:
    floor = rule.limit - ENTROPY_SLACK
    m = pattern.search(data)
    while m is not None:
        run = m.group(1)
        # Entropy is at most log2(distinct characters): count them first (cheap).
        if len(set(run)) >= rule.min_len and entropy_upper(run) > floor:
            start, end = _line_bounds(data, m.start(), has_cr)
            yield start
            m = pattern.search(data, end + 1)
        else:
            m = pattern.search(data, m.end())  # the closing quote may open the next run


def all_line_starts(data: bytes, has_cr: bool) -> Iterable[int]:
    """Start offsets of every line, as detect-secrets would read them (a text that ends
    with a line break has no empty line after it)."""
    if not data:
        return
    yield 0
    size = len(data)
    if not has_cr:
        pos = data.find(b"\n")
        while 0 <= pos < size - 1:
            yield pos + 1
            pos = data.find(b"\n", pos + 1)
        return
    for m in re.finditer(rb"\r\n|\r|\n", data):
        if m.end() < size:
            yield m.end()


def count_line_breaks(data: bytes, start: int, end: int, has_cr: bool) -> int:
    """Line breaks in data[start:end]; start and end must be line starts (or 0 or len), so
    that no \\r\\n pair straddles a boundary."""
    n = data.count(b"\n", start, end)
    if has_cr:
        n += data.count(b"\r", start, end) - data.count(b"\r\n", start, end)
    return n
