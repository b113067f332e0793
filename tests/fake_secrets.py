"""Fake secrets for tests, assembled at run time."""

from __future__ import annotations


def fragments(*parts: str) -> str:
    """Join the fragments of a fake secret.

    Fake secrets in tests are written as fragments, joined at run time, so that no
    secret-shaped string appears in the source: secret scanners (GitHub push protection,
    detect-secrets, tests/test_repo_has_no_secrets.py) cannot tell a fake token from a real
    one. Each vendor prefix is split, and high-entropy runs are cut into pieces of at most
    8 characters (below detect-secrets' entropy limits)."""
    return "".join(parts)
