"""The scanner's fast path loses nothing: it reports exactly the (type, line, value hash)
set that detect-secrets' own line-by-line scan (every plugin on every line, same filters)
reports on the same text. Checked on Hypothesis-generated texts mixing planted secrets
with noise, on the real corpus, and on a planted set of secrets of many types.

The comparisons run with ``widen_values=False`` (detect-secrets' values as reported) and
with the default widening, which both paths apply alike."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.secrets import prefilter
from agentsrc_daemon.secrets.engine import Finding, SecretScanner

from corpus import corpus_files
from fake_secrets import fragments as _j

KEY = bytes(range(32))


def _b64url(obj: dict[str, Any]) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")




# Fake secrets, written for these tests in the shapes detect-secrets' plugins accept
# (as its own test fixtures do). None is real (see _j).
_JWT = (
    _b64url({"alg": "HS256", "typ": "JWT"})
    + "."
    + _b64url({"sub": "4711", "name": "Planted Tester", "iat": 1700000000})
    + _j(".", "Xq3vN8rT", "2mW9yL5k", "P1sD7fG4", "hJ6zC0bV", "2nM8qR5t", "Y1u")
)
_AZURE = _j(
    "Qm9vZ3Vz", "S2V5Rm9y", "VGVzdGlu", "Z1B1cnBv", "c2VzT25s", "eU5vdFJl",
    "YWw4d2Q3", "ZjZnNWg0", "ajNrMmwx", "bTBuOWI4", "djdjNnhR",
)  # fmt: skip
_HEX64 = _j(
    "9f2c7a1e", "5b8d3f60", "a4c9e2b7", "d1f5a8c3", "e6b9d2f7", "a0c4e8b1", "d5f9a3c7", "e2b6d0f4"
)
_HEX48 = _j("3f9a7c1e", "5b2d8f4a", "6c0e9b3d", "7f1a5c8e", "2b6d0f4a", "9c3e7b1d")
_HEX32 = _j("7f3a9c2e", "1b5d8f4a", "6c0e9b3d", "7f1a5c8e")
_HEX16 = _j("8f3a9c2e", "7b1d6f40")
_HEX = _j("8f3a9c2e", "7b1d6f40", "a5c8e2b9", "d3f7a1c6")
_ALNUM64 = _j(
    "q7z2x9l4", "n8k3w6y1", "i5p0s2f4", "h6j8k0l2", "z4x6c8v0", "b2n4m6q8", "w0e2r4t6", "y8u0i2o4"
)
_PYPI_TAIL = _j(
    "Qw7Er2Ty", "9Ui4Op8A", "s3Df6Gh1", "Jk5Lz0Xc", "2VbNm4",
    "Qw7Er2Ty", "9Ui4Op8A", "s3Df6Gh1", "Jk5Lz0Xc", "2VbNm4",
)  # fmt: skip
_AWS_ID = _j("AK", "IA", "QW7RZ3KX", "9PLM2VNB")
_AWS_SECRET = _j("Zq8Lw3Rt", "9Yu2Io5P", "a7Sd1Fg4", "Hj6Kl0Zx", "8Cv3Bn5M")
_ARTIFACTORY = _j("AK", "Cp", "8jQ7b2Xv", "9LmN4rT6", "yW")
_DB_URL = _j("postgres://", "admin:", "Vq7rPz2m", "Kx9w", "@db.internal.example:5432/app")
_DISCORD = _j(
    "MTk4NjIy", "NDgzNDcx", "OTI1MjQ4", ".Cl2FMQ.", "ZnCjm1XV", "W7vRze4b", "7Cq4se7k", "KWs"
)
_GITHUB = _j("gh", "p_", "R8sT2vW5", "yZ9bC3dF", "6gH1jK4m", "N7pQ0rS2", "uV5x")
_GITLAB = _j("gl", "pat-", "Xy7Zq2Wv", "9Rt4Lm8N", "p3Ks")
_BASE64 = _j("q7Zr2Xv9", "Lm4Np8Ks", "3Wt6Yu1I", "o5Pa0Sd+", "Fg/Hj==")
_IBM_KEY = _j("Zk8Qw2Er", "7Ty4Ui9O", "p3As6Df1", "Gh5Jk0Lz", "2Xc8Vb4N", "m7Qa")
_PASSWORD = _j("Tr0ub4", "dor&3-planted")
_NPM = _j("np", "m_", "Qw7Er2Ty", "9Ui4Op8A", "s3Df6Gh1", "Jk5Lz0Xc", "2Vb")
_OPENAI = _j(
    "sk", "-", "Zq8Lw3Rt", "9Yu2Io5P", "a7Sd", "T3Bl", "bkFJ", "1Fg4Hj6K", "l0Zx8Cv3", "Bn5M"
)
_RSA_HEADER = _j("-----BEGIN RSA ", "PRIVATE KEY-----")
_PYPI = _j("py", "pi-", "AgEIcHlw", "aS5vcmc", _PYPI_TAIL)
_SENDGRID = _j(
    "SG", ".", "Qw7Er2Ty", "9Ui4Op8A", "s3Df6G",
    ".", "h1Jk5Lz0", "Xc2VbNm4", "Qw7Er2Ty", "9Ui4Op8A", "s3Df6Gh1", "Jk5L",
)  # fmt: skip
_SLACK = _j(
    "xo", "xb-", "12345678", "9012-", "12345678", "90123-", "Qw7Er2Ty", "9Ui4Op8A", "s3Df6Gh1"
)
_SLACK_HOOK = _j(
    "https://hooks.", "slack.com/services/", "T0PLANTED/", "B0PLANTED/",
    "Qw7Er2Ty", "9Ui4Op8A", "s3Df6Gh1",
)  # fmt: skip
_SQUARE = _j("sq", "0csp-", "Qw7Er2Ty", "9Ui4Op8A", "s3Df6Gh1", "Jk5Lz0Xc", "2VbNm4", "Qw7Er")
_STRIPE = _j("sk", "_live_", "Qw7Er2Ty", "9Ui4Op8A", "s3Df6Gh1")
_STRIPE_RESTRICTED = _j("rk", "_live_", "Qw7Er2Ty", "9Ui4Op8A", "s3Df6Gh1")
_TELEGRAM = _j("12345678", "9:", "AA", "Qw7Er2Ty", "9Ui4Op8A", "s3Df6Gh1", "Jk5Lz0Xc", "2")

# (expected type, a line that holds the secret)
PLANTED: list[tuple[str, str]] = [
    ("AWS Access Key", f"aws_access_key_id = {_AWS_ID}"),
    ("AWS Access Key", f'aws_secret_access_key = "{_AWS_SECRET}"'),
    ("Artifactory Credentials", f"artifactory: {_ARTIFACTORY}"),
    (
        "Azure Storage Account access key",
        f"DefaultEndpointsProtocol=https;AccountName=planted;AccountKey={_AZURE};",
    ),
    ("Basic Auth Credentials", f"DATABASE_URL={_DB_URL}"),
    ("Cloudant Credentials", f'cloudant_password = "{_HEX64}"'),
    ("Discord Bot Token", f"DISCORD_TOKEN={_DISCORD}"),
    ("GitHub Token", f"export GH_TOKEN={_GITHUB}"),
    ("GitLab Token", f"token: {_GITLAB}"),
    ("Base64 High Entropy String", f'blob = "{_BASE64}"'),
    ("Hex High Entropy String", f'checksum = "{_HEX}"'),
    ("IBM Cloud IAM Key", f'ibm_cloud_iam_api_key = "{_IBM_KEY}"'),
    ("IBM COS HMAC Credentials", f'cos_hmac_secret_access_key = "{_HEX48}"'),
    ("JSON Web Token", f"Authorization: Bearer {_JWT}"),
    ("Secret Keyword", f'password = "{_PASSWORD}"'),
    ("Mailchimp Access Key", f"MAILCHIMP_KEY={_HEX32}-us14"),
    ("NPM tokens", f"//registry.npmjs.org/:_authToken={_NPM}"),
    ("OpenAI Token", f"OPENAI_API_KEY={_OPENAI}"),
    ("Private Key", _RSA_HEADER),
    ("PyPI Token", f"password = {_PYPI}"),
    ("SendGrid API Key", f"SENDGRID_API_KEY={_SENDGRID}"),
    ("Slack Token", f"SLACK_BOT_TOKEN={_SLACK}"),
    ("Slack Token", f"webhook {_SLACK_HOOK}"),
    ("SoftLayer Credentials", f'softlayer_api_key = "{_ALNUM64}"'),
    ("Square OAuth Secret", f"SQUARE_SECRET={_SQUARE}"),
    ("Stripe Access Key", f"STRIPE_KEY={_STRIPE}"),
    ("Telegram Bot Token", f"TELEGRAM={_TELEGRAM}"),
    ("Twilio API Key", f"TWILIO_ACCOUNT_SID=AC{_HEX32}"),
]

# Bare values of many shapes, for the generated texts (some pass a plugin only in some
# contexts, some never: both kinds are wanted).
VALUES = [
    _AWS_ID,
    _AWS_SECRET,
    _ARTIFACTORY,
    _j("AP", "6xK9mQ2v", "L8rT4yZ"),
    _AZURE,
    _HEX64,
    _HEX48,
    _HEX32,
    _HEX16,
    "abcdef01",
    "0123456789",
    _DISCORD,
    _GITHUB,
    _j("gh", "o_", "Zz8sT2vW", "5yZ9bC3d", "F6gH1jK4", "mN7pQ0rS", "2uV5"),
    _GITLAB,
    _j("gl", "cbt-", "2a_", "Xy7Zq2Wv", "9Rt4Lm8N", "p3Ks"),
    _j("GR", "1348941", "Xy7Zq2Wv", "9Rt4Lm8N", "p3Ks"),
    _BASE64,
    _IBM_KEY,
    _JWT,
    _j("ey", "JhbGciOi", "Jub25lIn", "0.e30."),
    _PASSWORD,
    "hunter2",
    f"{_HEX32}-us14",
    _NPM,
    _OPENAI,
    _j("-----BEGIN OPENSSH ", "PRIVATE KEY-----"),
    _j("PuTTY-User-", "Key-File-2: ssh-rsa"),
    _PYPI,
    _SENDGRID,
    _SLACK,
    _SLACK_HOOK,
    _ALNUM64,
    _SQUARE,
    _STRIPE,
    _STRIPE_RESTRICTED,
    _TELEGRAM,
    f"AC{_HEX32}",
    f"SK{_HEX32}",
    "203.0.113.77",
    "8.8.8.8:53",
    "550e8400-e29b-41d4-a716-446655440000",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "${SECRET_FROM_ENV}",
    "<your-token-here>",
    "$dollar_prefixed_value",
    "*****",
]

# Contexts a value is put in. {v}: the value, {k}: a keyword-ish word.
CONTEXTS = [
    "{v}",
    '"{v}"',
    "'{v}'",
    '{k} = "{v}"',
    "{k}='{v}'",
    '{k}: "{v}"',
    "{k}: {v}",
    '"{k}": "{v}",',
    "{k} = {v}",
    '{k} == "{v}"',
    "{k} !== '{v}'",
    '{k} => "{v}"',
    '"{v}" == {k}',
    "'{v}' != my_{k}_var",
    '{k} "{v}";',
    '{k}_value "{v}";',
    '{k}[] = @"{v}"',
    '{k} := "{v}"',
    "https://user:{v}@example.com/path",
    "{k}={v} # pragma: allowlist secret",
    "//registry.npmjs.org/:_authToken={v}",
    "aws_secret_key = '{v}'",
    "cloudant_api_key = '{v}'",
    'softlayer_password: "{v}"',
    'ibm_iam_api_key = "{v}"',
    "cos_hmac_secret_access_key: '{v}'",
    'user_id = "{v}"',
    '{k} = get_{k}("{v}")',
    "export {k}=`{v}`",
]

KEYWORDS = [
    "password",
    "PassWord",
    "PASSWORD",
    "passwd",
    "db_pass",
    "key_pass",
    "api_key",
    "apikey",
    "API_KEY",
    "private_key",
    "client_key",
    "secret",
    "Secret_Token",
    "pwd",
    "contraseña",
    "CONTRASEÑA",
    "contrasena",
    "token",
    "key",
    "paſſword",  # long s: matches 's' case-insensitively
    "api_\u212aey",  # Kelvin sign: matches 'k' case-insensitively
    "\u0130d_secret",
    "ſecret",
    "passw\u00f6rd",
    "name",
]

# Noise: characters and words that touch the prefilter's edge cases (case-folding
# specials, Latin-1 and wider characters, Unicode digits and spaces, quotes, operators).
NOISE_CHARS = (
    "abcxyzKSTAPGsk09 \t\"'`=:!;,.-_/+\\[](){}$<>#@?*ſKİıéñÑ—١٢٣\x1c\xa0\u2028\u3000中文😀"
)
NOISE_WORDS = [
    "",
    " ",
    "# pragma: allowlist secret",
    "// pragma: whitelist secret",
    "=",
    "==",
    "!=",
    ":",
    ";",
    '"',
    "'",
    "`",
    "id=",
    "_id:",
    "get_secret()",
    "request.headers['apikey']",
    "key",
    "pass",
    "secret",
    "aws",
    "eyJ",
    "://",
    "@",
    "AKIA",
    "ghp_",
    "xoxb-",
    "sq0csp-",
    "k_live_",
    "T3BlbkFJ",
    "PRIVATE KEY",
    "1.2.3.4",
    "AccountKey=",
    "-us1",
]

noise = st.one_of(
    st.text(alphabet=NOISE_CHARS, max_size=30),
    st.sampled_from(NOISE_WORDS),
)
secret_fragment = st.builds(
    lambda c, v, k: c.format(v=v, k=k),
    st.sampled_from(CONTEXTS),
    st.sampled_from(VALUES),
    st.sampled_from(KEYWORDS),
)
fragment = st.one_of(noise, secret_fragment, secret_fragment)


@st.composite
def lines(draw: st.DrawFn) -> str:
    parts = draw(st.lists(fragment, min_size=0, max_size=5))
    line = draw(st.sampled_from(["", " ", "  ", "\t"])).join(parts)
    if draw(st.integers(0, 20)) == 0:  # past detect-secrets' 1000-character filter bound
        line = line + draw(st.text(alphabet="ab =:'\"", min_size=1, max_size=3)) * 400
    if draw(st.integers(0, 12)) == 0:
        line = "# pragma: allowlist nextline secret"
    return line + draw(st.sampled_from(["", " ", "\t", "\xa0", "\x0c"]))


@st.composite
def texts(draw: st.DrawFn) -> str:
    body = draw(st.lists(lines(), min_size=1, max_size=8))
    separators = draw(
        st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=len(body), max_size=len(body))
    )
    out = "".join(line + sep for line, sep in zip(body, separators, strict=True))
    return out if draw(st.booleans()) else out.rstrip("\r\n")


def keys(findings: list[Finding]) -> set[tuple[str, int, str]]:
    return {(f.type, f.line, f.value_hash) for f in findings}


@pytest.fixture(scope="module")
def raw_scanner() -> SecretScanner:
    """detect-secrets' values as reported: the strict comparison."""
    return SecretScanner(None, {}, KEY, cache_size=0, widen_values=False)


@pytest.fixture(scope="module")
def scanner() -> SecretScanner:
    return SecretScanner(None, {}, KEY, cache_size=0)


def assert_same(scanner: SecretScanner, text: str) -> None:
    fast, naive = scanner.scan(text), scanner.scan_naive(text)
    assert keys(fast) == keys(naive)
    assert len(fast) == len(naive)


# --------------------------------------------------------------------------- generated


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts())
def test_fast_path_equals_naive_on_generated_texts(raw_scanner: SecretScanner, text: str) -> None:
    assert_same(raw_scanner, text)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts())
def test_widened_values_equal_too(scanner: SecretScanner, text: str) -> None:
    assert_same(scanner, text)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=300))
def test_fast_path_equals_naive_on_any_unicode(raw_scanner: SecretScanner, text: str) -> None:
    assert_same(raw_scanner, text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(texts(), min_size=0, max_size=6))
def test_scan_many_equals_scan_one_by_one(scanner: SecretScanner, batch: list[str]) -> None:
    assert scanner.scan_many(batch) == [scanner.scan(t) for t in batch]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(texts(), st.text(max_size=200)))
def test_short_texts_quick_check_selects_the_same_lines(raw_scanner: SecretScanner, text: str) -> None:
    """A short text is first searched with every gate of a view joined in one regex: the
    lines and plugins selected are exactly those of every gate searched one by one."""
    pf = raw_scanner._prefilter
    assert pf.quick  # the check is there to be compared
    one_by_one = prefilter.Prefilter(pf.gates, pf.entropy, pf.every_line, quick=[])
    views = prefilter.make_views(text)
    assert pf.candidates(views) == one_by_one.candidates(views)
    quick = dict(pf.quick)
    for gate in pf.gates:  # what the check rests on, gate by gate
        data = views.folded if gate.folded else views.exact
        if gate.regex.search(data):
            assert quick[gate.folded].search(data)


def test_each_planted_value_alone_is_selected_as_one_by_one(raw_scanner: SecretScanner) -> None:
    """Each planted secret alone (a short text: most match one gate only)."""
    pf = raw_scanner._prefilter
    one_by_one = prefilter.Prefilter(pf.gates, pf.entropy, pf.every_line, quick=[])
    selected = 0
    for value in VALUES:
        views = prefilter.make_views(value)
        got = pf.candidates(views)
        assert got == one_by_one.candidates(views)
        selected += bool(got)
    assert selected >= len(VALUES) // 2


def test_entropy_patterns_start_with_their_quote(raw_scanner: SecretScanner) -> None:
    """A text without either quote skips the entropy patterns: each needs its quote."""
    rules = raw_scanner._prefilter.entropy
    assert rules
    for rule in rules:
        assert sorted(p.pattern[:1] for p in rule.patterns) == sorted(prefilter.ENTROPY_QUOTES)


def test_generated_texts_do_find_secrets(raw_scanner: SecretScanner) -> None:
    """The grammar is not vacuous: one fixed text built from it has findings of many types,
    and the fast path reports them all."""
    text = "\n".join(
        context.format(v=value, k="password") for context in CONTEXTS[:6] for value in VALUES
    )
    found = raw_scanner.scan(text)
    assert keys(found) == keys(raw_scanner.scan_naive(text))
    assert len({f.type for f in found}) >= 18


# --------------------------------------------------------------------------- planted


def test_planted_set_is_large_enough() -> None:
    assert len(PLANTED) >= 20
    assert len({t for t, _ in PLANTED}) >= 12


@pytest.mark.parametrize(("expected", "line"), PLANTED, ids=[t for t, _ in PLANTED])
def test_each_planted_secret_is_found_with_its_type(
    raw_scanner: SecretScanner, expected: str, line: str
) -> None:
    found = raw_scanner.scan(line)
    assert expected in {f.type for f in found}
    assert all(f.line == 1 for f in found)
    assert keys(found) == keys(raw_scanner.scan_naive(line))


def test_planted_secrets_in_one_text_with_noise(scanner: SecretScanner) -> None:
    filler = "ordinary output line, nothing to see: 42 items, ok\n" * 3
    text = "".join(filler + line + "\n" for _, line in PLANTED) + filler
    found = scanner.scan(text)
    assert keys(found) == keys(scanner.scan_naive(text))
    for number, (expected, _) in enumerate(PLANTED):
        line_no = 4 * number + 4  # three filler lines before each planted line
        assert expected in {f.type for f in found if f.line == line_no}, expected
    assert {f.line for f in found} == {4 * n + 4 for n in range(len(PLANTED))}


# --------------------------------------------------------------------------- corpus

# The naive scan runs at well under 1 MB/s: by default each corpus file contributes its
# first 24 KB of raw lines and a sample of its decoded text values. AGENTSRC_SCAN_FULL_CORPUS=1
# compares every byte (about a minute).
FULL = os.environ.get("AGENTSRC_SCAN_FULL_CORPUS") == "1"
HEAD_CHARS = 24_000


def _decoded_values(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if len(value) >= 64:
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _decoded_values(v)
    elif isinstance(value, list):
        for v in value:
            yield from _decoded_values(v)


def _corpus_samples(path: Path) -> list[str]:
    raw = path.read_text(encoding="utf-8", errors="surrogateescape")
    samples = [raw if FULL else raw[:HEAD_CHARS]]
    values: list[str] = []
    for line in raw.splitlines():
        try:
            values.extend(_decoded_values(json.loads(line)))
        except ValueError:
            continue
    samples.extend(values if FULL else values[:: max(1, len(values) // 25)])
    return samples


def test_fast_path_equals_naive_on_the_corpus(raw_scanner: SecretScanner) -> None:
    files = corpus_files()
    assert len(files) >= 20
    compared = 0
    for path in files:
        for sample in _corpus_samples(path):
            assert keys(raw_scanner.scan(sample)) == keys(raw_scanner.scan_naive(sample)), path.name
            compared += len(sample)
    assert compared > 500_000


def test_corpus_has_findings_and_scan_many_agrees(scanner: SecretScanner) -> None:
    """The corpus comparison is not vacuous (its encrypted reasoning blobs are quoted
    high-entropy strings), and the batch path agrees with the per-text path on it."""
    samples = [s for path in corpus_files() for s in _corpus_samples(path)]
    one_by_one = [scanner.scan(s) for s in samples]
    assert scanner.scan_many(samples) == one_by_one
    assert sum(len(f) for f in one_by_one) > 50
