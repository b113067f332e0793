"""The secret scanner's contract: findings carry type, line and a keyed hash, never the
value; redaction; the per-install key; sensitive paths and exclusion globs; user patterns;
plugin subsets; detect-secrets' process-global settings; the worker pool."""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import os
import stat
from pathlib import Path

import pytest
from detect_secrets.settings import get_settings, transient_settings
from hypothesis import given
from hypothesis import strategies as st

from agentsrc_daemon.config import ScanConfig
from agentsrc_daemon.errors import ConfigError
from agentsrc_daemon.events import TOOL_RESULT, Event
from agentsrc_daemon.secrets import engine
from agentsrc_daemon.secrets import prefilter as scan_prefilter
from agentsrc_daemon.secrets.engine import (
    BUILTIN_SENSITIVE_PATHS,
    HASH_KEY_FILE,
    Finding,
    SecretScanner,
    default_plugin_names,
    is_excluded_path,
    is_excluded_session,
    is_sensitive_path,
    load_or_create_hash_key,
    path_matches,
)
from agentsrc_daemon.secrets.stage import SecretStage

from fake_secrets import fragments as _j

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))




# Fake secrets in shapes detect-secrets accepts (none is real; see _j).
AWS_ID = _j("AK", "IA", "QW7RZ3KX", "9PLM2VNB")
GH_1 = _j("gh", "p_", "R8sT2vW5", "yZ9bC3dF", "6gH1jK4m", "N7pQ0rS2", "uV5x")
GH_2 = _j("gh", "p_", "Zz8sT2vW", "5yZ9bC3d", "F6gH1jK4", "mN7pQ0rS", "2uV5")
STRIPE = _j("sk", "_live_", "Qw7Er2Ty", "9Ui4Op8A", "s3Df6Gh1")
PASSWORD = _j("Tr0ub4", "dor&3-planted")
HEX = _j("8f3a9c2e", "7b1d6f40", "a5c8e2b9", "d3f7a1c6")
PEM = _j(
    "-----BEGIN RSA ", "PRIVATE KEY-----\n",
    "MIIBOgIB", "AAJBAKj3", "4GkxFhD9", "0vcNLYLI", "nFEX6Ppy", "1tPf9Cnz", "j4p4WGeK", "Ls1Pt8Qu",
    "\n",
    "KUpRKfFL", "fRYC9AIK", "jbJTWit+", "CqvjWYzv", "QwECAwEA", "AQJAIJLi", "xBy2qpFo", "S4DSmoEm",
    "\n",
    "-----END RSA ", "PRIVATE KEY-----",
)  # fmt: skip


def mac(value: str, key: bytes = KEY) -> str:
    return hmac.new(key, value.encode(), hashlib.sha256).hexdigest()


@pytest.fixture(scope="module")
def scanner() -> SecretScanner:
    return SecretScanner(None, {}, KEY)


# --------------------------------------------------------------------------- findings


def test_findings_carry_type_line_hash_and_span(scanner: SecretScanner) -> None:
    text = f'first line\nexport AWS_ACCESS_KEY_ID={AWS_ID}\npassword = "{PASSWORD}"\n'
    found = scanner.scan(text)
    assert found == [
        Finding("AWS Access Key", 2, mac(AWS_ID), 36, 56),
        Finding("Secret Keyword", 3, mac(PASSWORD), 69, 88),
    ]
    assert text[36:56] == AWS_ID and text[69:88] == PASSWORD


def test_hash_is_keyed(scanner: SecretScanner) -> None:
    same = scanner.scan(f"a {STRIPE}\nb {STRIPE}\n")
    assert [f.value_hash for f in same] == [mac(STRIPE), mac(STRIPE)]
    other = SecretScanner(None, {}, OTHER_KEY).scan(f"a {STRIPE}")
    assert other[0].value_hash == mac(STRIPE, OTHER_KEY) != mac(STRIPE)
    assert scanner.value_hash(STRIPE) == mac(STRIPE)


def test_finding_holds_no_value(scanner: SecretScanner) -> None:
    text = f'token={GH_1}\npassword = "{PASSWORD}"\nx = "{HEX}"\n{PEM}\n'
    found = scanner.scan(text)
    assert [f.type for f in found] == [
        "GitHub Token",
        "Secret Keyword",
        "Hex High Entropy String",
        "Private Key",
    ]
    dumped = repr(found) + str(found) + repr([f.__slots__ for f in found])
    for value in (
        GH_1,
        GH_1[:3],
        PASSWORD,
        HEX,
        _j("MIIBOgIB", "AAJBAKj3", "4GkxFhD9", "0vcN"),
        "BEGIN RSA",
    ):
        assert value not in dumped
    assert Finding.__slots__ == ("type", "line", "value_hash", "start", "end")


def test_prefix_capturing_plugins_are_widened(scanner: SecretScanner) -> None:
    """detect-secrets reports only 'ghp' for every GitHub token (its regex captures the
    prefix): widened, two tokens on one line are two findings with their own hashes."""
    line = f"old={GH_1} new={GH_2}"
    assert scanner.scan(line) == [
        Finding("GitHub Token", 1, mac(GH_1), 4, 44),
        Finding("GitHub Token", 1, mac(GH_2), 49, 89),
    ]
    raw = SecretScanner(None, {}, KEY, widen_values=False).scan(line)
    assert raw == [Finding("GitHub Token", 1, mac("ghp"), 4, 7)]


def test_private_key_value_is_the_whole_block(scanner: SecretScanner) -> None:
    text = f"cat id_rsa\n{PEM}\ndone\n"
    [finding] = scanner.scan(text)
    assert (finding.type, finding.line) == ("Private Key", 2)
    assert text[finding.start : finding.end] == PEM
    assert finding.value_hash == mac(PEM)


def test_private_key_block_without_end_marker_stops_at_an_empty_line_or_next_key(
    scanner: SecretScanner,
) -> None:
    truncated = PEM.rsplit("\n", 1)[0]  # no END line
    text = f"{truncated}\n\nnext paragraph\n"
    [finding] = scanner.scan(text)
    assert text[finding.start : finding.end] == truncated
    two = f"{truncated}\n{PEM}\n"
    first, second = scanner.scan(two)
    assert two[first.start : first.end] == truncated
    assert two[second.start : second.end] == PEM
    assert (first.line, second.line) == (1, 4)


def test_putty_key_block(scanner: SecretScanner) -> None:
    putty = _j(
        "PuTTY-User-", "Key-File-2: ssh-rsa\nEncryption: none\nComment: planted\n",
        "Public-Lines: 1\n", "AAAAB3Nz", "aC1yc2EA", "AAABJQAA", "AIEAplanted\n",
        "Private-Lines: 1\n", "AAAAgQCp", "lantedprivatepart\n",
        "Private-MAC: ", "01234567", "89abcdef", "01234567", "89abcdef", "01234567",
    )  # fmt: skip
    redacted, [finding] = scanner.redact(f"{putty}\ntrailing text\n")
    assert finding.type == "Private Key"
    assert redacted == "[REDACTED:Private Key]\ntrailing text\n"


def test_empty_and_clean_texts(scanner: SecretScanner) -> None:
    assert scanner.scan("") == []
    assert scanner.scan("nothing here\nat all 1.2.3.4 key pass\r\n") == []
    assert scanner.scan_many(["", "x", f"k {STRIPE}"])[2][0].type == "Stripe Access Key"


def test_cache_returns_the_same_findings() -> None:
    s = SecretScanner(None, {}, KEY)
    text = ("filler line\n" * 30) + f"STRIPE={STRIPE}\n"
    first = s.scan(text)
    assert s.stats.cache_hits == 0
    assert s.scan(text) == first
    assert s.stats.cache_hits == 1
    assert first == [Finding("Stripe Access Key", 31, mac(STRIPE), 367, 399)]


def test_findings_keep_the_label_of_the_content_they_are_in(scanner: SecretScanner) -> None:
    """An event's contents are (label, text) pairs: the scan stage's findings say which."""
    result = Event(key="t1", session_id="codex:s1", kind=TOOL_RESULT, ts=None, adapter="codex",
                   source_path="/x/rollout.jsonl", offset=0,
                   contents=[("stdout", "ok"), ("file", f"\nk={STRIPE}")])
    found = SecretStage(scanner, ScanConfig()).process([result])
    assert [(e.data["label"], e.data["type"], e.data["line"]) for e in found] == [
        ("file", "Stripe Access Key", 2)
    ]


def test_a_huge_text_is_scanned_in_slices_with_little_memory_beside_it(scanner: SecretScanner) -> None:
    """A 12 MB tool output (a 50 MB line's is scanned beside the line's own string, at
    the daemon's peak): at most about 3 MB more than the text while it is scanned (4 MiB
    slices held a slice, its encoding and the engine's copy: 12.9 MB for the 50 MB
    line), and its secrets found at their lines across the slices."""
    import tracemalloc

    filler = "x" * 99 + "\n"
    text = filler * 60_000 + f"k={STRIPE}\n" + filler * 60_000
    result = Event(key="t1", session_id="codex:s1", kind=TOOL_RESULT, ts=None, adapter="codex",
                   source_path="/x/rollout.jsonl", offset=0, contents=[("stdout", text)])
    stage = SecretStage(scanner, ScanConfig())
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        found = stage.process([result])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(e.data["label"], e.data["type"], e.data["line"]) for e in found] == [
        ("stdout", "Stripe Access Key", 60_001)
    ]
    assert peak - base < 3.5 * 1024 * 1024


# --------------------------------------------------------------------------- redaction


def test_redact_replaces_each_value(scanner: SecretScanner) -> None:
    text = f'export AWS_ACCESS_KEY_ID={AWS_ID}\npassword = "{PASSWORD}"\nmy token {GH_1} ok\n'
    redacted, found = scanner.redact(text)
    assert redacted == (
        "export AWS_ACCESS_KEY_ID=[REDACTED:AWS Access Key]\n"
        'password = "[REDACTED:Secret Keyword]"\n'
        "my token [REDACTED:GitHub Token] ok\n"
    )
    assert [f.type for f in found] == ["AWS Access Key", "Secret Keyword", "GitHub Token"]


def test_redact_long_values_everywhere_short_ones_on_their_line(scanner: SecretScanner) -> None:
    text = _j(
        f"STRIPE={STRIPE}\n",
        f"echo {STRIPE} | tool\n",  # the same value where no plugin fires: redacted too
        'pwd = "' + "abc" + '123"\n',  # short keyword value: only on its own line
        "abc123 is also a word elsewhere\n",
    )
    redacted, _ = scanner.redact(text)
    assert redacted == (
        "STRIPE=[REDACTED:Stripe Access Key]\n"
        "echo [REDACTED:Stripe Access Key] | tool\n"
        'pwd = "[REDACTED:Secret Keyword]"\n'
        "abc123 is also a word elsewhere\n"
    )


def test_redact_names_the_specific_type_when_plugins_overlap(scanner: SecretScanner) -> None:
    line = f'aws_secret_access_key = "{_j("Zq8Lw3Rt", "9Yu2Io5P", "a7Sd1Fg4", "Hj6Kl0Zx", "8Cv3Bn5M")}"'
    found = scanner.scan(line)
    assert {f.type for f in found} == {
        "AWS Access Key",
        "Base64 High Entropy String",
        "Secret Keyword",
    }
    redacted, _ = scanner.redact(line)
    assert redacted == 'aws_secret_access_key = "[REDACTED:AWS Access Key]"'


def test_redact_private_key_block(scanner: SecretScanner) -> None:
    redacted, _ = scanner.redact(f"before\n{PEM}\nafter")
    assert redacted == "before\n[REDACTED:Private Key]\nafter"


def test_redact_without_secrets_is_identity(scanner: SecretScanner) -> None:
    text = "plain\r\ntext with ünïcödé and 'quotes'\r"
    assert scanner.redact(text) == (text, [])


# --------------------------------------------------------------------------- user patterns


def test_user_patterns() -> None:
    s = SecretScanner(
        None,
        {"internal_token": r"itk_[A-Za-z0-9]{32}", "ticket": r"TICKET-(?P<secret>\d{6})\b"},
        KEY,
    )
    token = "itk_" + _j("Ab3De6Gh", "9Jk2Mn5P", "q8St1Vw4", "Yz7Bc0Ef")
    text = f"one\ntwo {token} three\r\nref TICKET-123456 and TICKET-99\n"
    found = s.scan(text)
    assert found == [
        Finding("User Pattern: internal_token", 2, mac(token), 8, 44),
        Finding("User Pattern: ticket", 3, mac("123456"), 63, 69),
    ]
    redacted, _ = s.redact(text)
    assert redacted == (
        "one\ntwo [REDACTED:User Pattern: internal_token] three\r\n"
        "ref TICKET-[REDACTED:User Pattern: ticket] and TICKET-99\n"
    )


def test_user_pattern_matches_do_not_span_lines() -> None:
    s = SecretScanner([], {"pair": r"a\s+b"}, KEY)
    assert [(f.type, f.line) for f in s.scan("a\nb\na  b")] == [("User Pattern: pair", 3)]


def test_bad_user_pattern_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="scan.user_patterns.broken"):
        SecretScanner(None, {"broken": "(unclosed"}, KEY)


# --------------------------------------------------------------------------- plugins


def test_plugin_subset() -> None:
    s = SecretScanner(["StripeDetector", "AWSKeyDetector"], {}, KEY)
    assert s.plugin_names == ["StripeDetector", "AWSKeyDetector"]
    text = f'{STRIPE}\n{AWS_ID}\npassword = "{PASSWORD}"\n{GH_1}\n'
    assert [(f.type, f.line) for f in s.scan(text)] == [
        ("Stripe Access Key", 1),
        ("AWS Access Key", 2),
    ]
    assert {(f.type, f.line) for f in s.scan_naive(text)} == {
        ("Stripe Access Key", 1),
        ("AWS Access Key", 2),
    }


def test_default_plugins_are_detect_secrets_defaults() -> None:
    names = default_plugin_names()
    assert len(names) == 27
    assert {"KeywordDetector", "Base64HighEntropyString", "PrivateKeyDetector"} <= set(names)
    assert SecretScanner(None, {}, KEY).plugin_names == names
    assert SecretScanner([], {}, KEY).plugin_names == names


def test_unknown_plugin_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="NoSuchDetector"):
        SecretScanner(["NoSuchDetector"], {}, KEY)


def test_short_hash_key_is_refused() -> None:
    with pytest.raises(ValueError):
        SecretScanner(None, {}, b"short")


def test_plugin_with_unknown_regexes_runs_on_every_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin whose regexes differ from the ones the anchors were written for (another
    detect-secrets version) falls back to every line: same findings, no loss."""
    monkeypatch.setitem(scan_prefilter.PLUGIN_FINGERPRINTS, "StripeDetector", "changed")
    s = SecretScanner(None, {}, KEY)
    assert s.fallback_plugins == ["StripeDetector"]
    text = f"a\nb {STRIPE}\r\nc\n"
    assert [(f.type, f.line) for f in s.scan(text)] == [("Stripe Access Key", 2)]
    assert s.stats.candidate_lines == 3


def test_every_anchor_matches_its_own_planted_secret() -> None:
    """Each plugin in the default set has anchors (no fallback) and its fingerprint is the
    one recorded: a detect-secrets upgrade that changes a regex shows up here."""
    s = SecretScanner(None, {}, KEY)
    assert s.fallback_plugins == []
    assert set(scan_prefilter.PLUGIN_FINGERPRINTS) == set(default_plugin_names())


# --------------------------------------------------------------------------- settings


def test_settings_changed_by_someone_else_are_reinstalled(scanner: SecretScanner) -> None:
    text = f'password = "{PASSWORD}"\n'
    expected = scanner.scan_naive(text)
    # Something else in the process switches detect-secrets to other settings for good.
    with transient_settings({"plugins_used": [{"name": "AWSKeyDetector"}]}) as other:
        pass
    get_settings().set(other)
    get_settings().disable_filters("detect_secrets.filters.heuristic.is_templated_secret")
    fresh = SecretScanner(None, {}, KEY, cache_size=0)  # re-installs the full set
    get_settings().disable_filters("detect_secrets.filters.allowlist.is_line_allowlisted")
    assert fresh.scan(text) == expected
    assert fresh.scan_naive(text) == expected
    assert scanner.scan(text + "\n") == expected
    assert "detect_secrets.filters.allowlist.is_line_allowlisted" in get_settings().filters


def test_no_network_verification_filter(scanner: SecretScanner) -> None:
    scanner.scan("x")
    assert (
        "detect_secrets.filters.common.is_ignored_due_to_verification_policies"
        not in get_settings().filters
    )


# --------------------------------------------------------------------------- hash key


def test_hash_key_is_created_once_0600(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    key = load_or_create_hash_key(data_dir)
    path = data_dir / HASH_KEY_FILE
    assert len(key) == 32
    assert path.read_bytes() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_hash_key(data_dir) == key
    assert [p.name for p in data_dir.iterdir()] == [HASH_KEY_FILE]  # no temp file left


def test_hash_key_keeps_an_existing_key_and_tightens_mode(tmp_path: Path) -> None:
    path = tmp_path / HASH_KEY_FILE
    path.write_bytes(b"\x07" * 32)
    os.chmod(path, 0o644)
    assert load_or_create_hash_key(tmp_path) == b"\x07" * 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_hash_key_of_wrong_size_is_an_error(tmp_path: Path) -> None:
    (tmp_path / HASH_KEY_FILE).write_bytes(b"short")
    with pytest.raises(ConfigError, match="holds 5 bytes"):
        load_or_create_hash_key(tmp_path)


# --------------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("path", "sensitive"),
    [
        ("/home/u/project/.env", True),
        (".env", True),
        ("/srv/app/.env.production", True),
        ("/srv/app/.env.local", True),
        ("/srv/app/.envrc", False),
        ("/srv/app/env.py", False),
        ("/etc/ssl/private/server.pem", True),
        ("certs/site.key", True),
        ("/home/u/.ssh/id_rsa", True),
        ("/home/u/.ssh/known_hosts", True),
        ("/home/u/backup/id_ed25519", True),
        ("/home/u/backup/id_ecdsa", True),
        ("/home/u/backup/id_rsa.pub", False),
        ("/home/u/.aws/credentials", True),
        ("/home/u/.aws/config", True),
        ("/home/u/aws/config", False),
        ("/opt/gcloud/credentials", True),
        ("/home/u/.netrc", True),
        ("/home/u/.npmrc", True),
        ("/home/u/.pypirc", True),
        ("/home/u/.gnupg/private-keys-v1.d/ab.key", True),
        ("/home/u/.gnupg/pubring.kbx", True),
        ("/repo/secrets/prod.yaml", True),
        ("/repo/config/secrets/db/pass.txt", True),
        ("/repo/secrets", False),  # the directory itself: 'secrets/**' is what is inside
        ("/repo/secrets.md", False),
        ("/repo/src/keyboard.py", False),
        ("C:\\Users\\u\\.ssh\\id_rsa", True),
        ("relative/.aws/credentials", True),
        ("", False),
    ],
)
def test_builtin_sensitive_paths(path: str, sensitive: bool) -> None:
    assert is_sensitive_path(path, None) is sensitive
    assert is_sensitive_path(path, []) is sensitive


_PATH_PARTS = st.sampled_from(
    ["", ".", "~", "home", "u", ".ssh", ".aws", "secrets", "id_rsa", ".env", ".env.prod",
     "a.pem", "credentials", "etc", "shadow", "vault", "token", "x.key", "C:\\Users"])
_GLOBS = st.sampled_from(
    ["*.pem", ".env.*", "/etc/shadow", "~/.ssh/**", "vault/**/token", "secrets/**", "**",
     "/**", "id_*", "/", "", "~/", "a/*/b", "**/credentials"])


def _path_matches_reference(path: str, pattern: str) -> bool:
    """path_matches as it was before it split each pattern once (the reference)."""
    segs = engine._segments(path)
    if not segs:
        return False
    anchored = pattern.startswith("/")
    if pattern.startswith("~/"):
        pattern = pattern[2:]
    pats = engine._segments(pattern)
    if not pats:
        return False
    if len(pats) == 1 and not anchored:
        return fnmatch.fnmatchcase(segs[-1], pats[0])
    if anchored:
        return engine._match_segments(segs, pats)
    return any(engine._match_segments(segs[i:], pats) for i in range(len(segs)))


@given(parts=st.lists(_PATH_PARTS, max_size=6), sep=st.sampled_from(["/", "\\"]),
       patterns=st.one_of(st.none(), st.lists(_GLOBS, max_size=4)))
def test_sensitive_path_cached_equals_matching_each_pattern(
    parts: list[str], sep: str, patterns: list[str] | None
) -> None:
    """is_sensitive_path splits the path once and remembers answers: the same as
    path_matches against each pattern."""
    path = sep.join(parts)
    globs = patterns or BUILTIN_SENSITIVE_PATHS
    want = any(_path_matches_reference(path, p) for p in globs)
    assert [path_matches(path, p) for p in globs] == [_path_matches_reference(path, p) for p in globs]
    assert is_sensitive_path(path, patterns) is want
    assert is_sensitive_path(path, patterns) is want  # the remembered answer


def test_builtin_sensitive_path_list() -> None:
    assert BUILTIN_SENSITIVE_PATHS == (
        ".env", ".env.*", "*.pem", "*.key", "id_rsa", "id_ed25519", "id_ecdsa", "credentials",
        ".netrc", ".npmrc", ".pypirc", ".aws/**", ".ssh/**", ".gnupg/**", "secrets/**",
    )  # fmt: skip


def test_configured_sensitive_paths_replace_the_builtin_list() -> None:
    patterns = ["*.tfstate", "/etc/shadow", "~/.config/gh/hosts.yml", "vault/**/token"]
    assert is_sensitive_path("/infra/prod/terraform.tfstate", patterns)
    assert is_sensitive_path("/etc/shadow", patterns)
    assert not is_sensitive_path("/chroot/etc/shadow", patterns)
    assert is_sensitive_path("/home/u/.config/gh/hosts.yml", patterns)
    assert is_sensitive_path("/x/vault/token", patterns)
    assert is_sensitive_path("/x/vault/a/b/token", patterns)
    assert not is_sensitive_path("/x/vault/a/b/token.txt", patterns)
    assert not is_sensitive_path("/home/u/.env", patterns)


def test_exclusion_globs() -> None:
    assert is_excluded_path("/repo/tests/fixtures/keys.txt", ["**/fixtures/**"])
    assert is_excluded_path("/repo/tests/fixtures/keys.txt", ["fixtures/**"])
    assert not is_excluded_path("/repo/src/keys.txt", ["**/fixtures/**"])
    assert not is_excluded_path("/repo/src/keys.txt", [])
    assert is_excluded_session("codex:019a17ae-caf0", ["codex:*"])
    assert is_excluded_session("claude-code:f84b640b", ["claude-code:f84b*", "muse:x"])
    assert not is_excluded_session("claude-code:f84b640b", ["codex:*"])


# --------------------------------------------------------------------------- batches


def test_scan_many_with_a_user_pattern_matches_the_scanner(scanner: SecretScanner) -> None:
    """A batch finds what one scan at a time finds, a user pattern adds its own findings
    only, and redaction is the same with or without it."""
    texts = [f"a\nSTRIPE={STRIPE}\n", "nothing", f'password = "{PASSWORD}"']
    with_pattern = SecretScanner(None, {"itk": r"itk_[0-9]{4}"}, KEY)
    scanned = with_pattern.scan_many([*texts, "x itk_1234"])
    assert scanned[:3] == [scanner.scan(t) for t in texts]
    assert [(f.type, f.value_hash) for f in scanned[3]] == [("User Pattern: itk", mac("itk_1234"))]
    assert with_pattern.redact(texts[0]) == scanner.redact(texts[0])
