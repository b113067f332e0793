"""apply_patch parsing: hand-written forms, then every apply_patch call in the corpus
checked against an independent header regex (nothing of the corpus is printed)."""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

import pytest

from agentsrc_daemon.derive.patch import PatchFile, parse_patch, patch_text_of
from agentsrc_daemon.derive.shellparse import argv_to_script, parse_command

from corpus import corpus_home

UPDATE = (
    "*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    old()\n+    new()\n"
    "*** End Patch"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(UPDATE, [PatchFile("update", "src/app.py")], id="update"),
        pytest.param(
            "*** Begin Patch\n*** Add File: docs/new.md\n+# Title\n+*** Update File: fake\n"
            "*** End Patch\n",
            [PatchFile("add", "docs/new.md")],
            id="add-with-header-like-content",
        ),
        pytest.param(
            "*** Begin Patch\n*** Delete File: old/thing.txt\n*** End Patch",
            [PatchFile("delete", "old/thing.txt")],
            id="delete",
        ),
        pytest.param(
            "*** Begin Patch\n*** Update File: a/old.py\n*** Move to: b/new.py\n@@\n-x\n+y\n"
            "*** End Patch",
            [PatchFile("move", "a/old.py", "b/new.py")],
            id="move",
        ),
        pytest.param(
            "*** Begin Patch\n*** Add File: one.txt\n+1\n*** Update File: /abs/two.txt\n@@\n"
            " ctx\n-a\n+b\n*** End of File\n*** Delete File: three.txt\n*** End Patch",
            [
                PatchFile("add", "one.txt"),
                PatchFile("update", "/abs/two.txt"),
                PatchFile("delete", "three.txt"),
            ],
            id="several-files-and-end-of-file-marker",
        ),
        pytest.param(
            "*** Begin Patch\r\n*** Update File: win\\path.ts\r\n@@\r\n-a\r\n+b\r\n*** End Patch\r\n",
            [PatchFile("update", "win\\path.ts")],
            id="crlf",
        ),
        pytest.param(
            "*** Add File: no-markers.txt\n+x\n",
            [PatchFile("add", "no-markers.txt")],
            id="no-begin-marker",
        ),
        pytest.param(
            "*** Begin Patch\n*** Move to: orphan.txt\n*** End Patch",
            [],
            id="move-without-update-ignored",
        ),
        pytest.param(
            "*** Begin Patch\n *** Update File: context-line.txt\n*** Add File: \n*** End Patch",
            [],
            id="indented-or-empty-headers-ignored",
        ),
        pytest.param(
            "*** Begin Patch\n*** Update File: name with spaces.md  \n@@\n-a\n+b\n*** End Patch",
            [PatchFile("update", "name with spaces.md")],
            id="spaces-in-path",
        ),
        pytest.param("", [], id="empty"),
    ],
)
def test_parse_patch(text: str, expected: list[PatchFile]) -> None:
    assert parse_patch(text) == expected


@pytest.mark.parametrize(
    ("value", "found"),
    [
        pytest.param(UPDATE, True, id="raw-text"),
        pytest.param(json.dumps({"input": UPDATE}), True, id="json-arguments-input"),
        pytest.param(json.dumps({"patch": UPDATE}), True, id="json-arguments-patch"),
        pytest.param(json.dumps(UPDATE), True, id="json-string"),
        pytest.param({"input": UPDATE}, True, id="dict-input"),
        pytest.param({"raw": UPDATE}, True, id="dict-raw"),
        pytest.param(["apply_patch", UPDATE], True, id="argv"),
        pytest.param({"command": ["apply_patch", UPDATE]}, True, id="shell-input"),
        pytest.param({"input": "echo hi"}, False, id="not-a-patch"),
        pytest.param(42, False, id="not-text"),
    ],
)
def test_patch_text_of(value: object, found: bool) -> None:
    text = patch_text_of(value)
    if found:
        assert text == UPDATE
        assert parse_patch(text) == [PatchFile("update", "src/app.py")]
    else:
        assert text is None


def test_broken_json_arguments_yield_no_garbage() -> None:
    broken = '{"input": "*** Begin Patch\\n*** Add File: a.txt\\n+x\\n*** End Patch"'  # no }
    text = patch_text_of(broken)
    # The undecodable envelope is returned as is; its escaped "\n" never starts a header.
    assert text == broken
    assert parse_patch(text) == []


@pytest.mark.parametrize(
    ("script", "writes"),
    [
        pytest.param(
            "apply_patch <<'PATCH'\n" + UPDATE + "\nPATCH\n",
            [("/w/src/app.py", "update")],
            id="heredoc-quoted-tag",
        ),
        pytest.param(
            "apply_patch << 'PATCH'\n" + UPDATE, [("/w/src/app.py", "update")],
            id="heredoc-unterminated",
        ),
        pytest.param(
            "cd /w/pkg && apply_patch <<EOF\n" + UPDATE + "\nEOF",
            [("/w/pkg/src/app.py", "update")],
            id="heredoc-after-cd",
        ),
        pytest.param(
            argv_to_script(["apply_patch", UPDATE]), [("/w/src/app.py", "update")], id="argv",
        ),
        pytest.param(
            "applypatch <<'EOF'\n*** Begin Patch\n*** Update File: m.py\n*** Move to: n.py\n"
            "*** End Patch\nEOF",
            [("/w/m.py", "move"), ("/w/n.py", "move")],
            id="applypatch-alias-move",
        ),
    ],
)
def test_patch_through_the_shell(script: str, writes: list[tuple[str, str]]) -> None:
    assert parse_command(script, "/w").writes == writes


# --- the corpus -----------------------------------------------------------------------

# Independent of patch.py: every header line, in order, with move targets in place.
_HEADER = re.compile(r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.*?)\s*$", re.M)


def _header_paths(text: str) -> list[str]:
    return _HEADER.findall(text)


def _parsed_paths(entries: list[PatchFile]) -> list[str]:
    out: list[str] = []
    for entry in entries:
        out.append(entry.path)
        if entry.move_to:
            out.append(entry.move_to)
    return out


class _Texts(list[str]):
    """Transcript texts whose repr never shows them (pytest prints fixture values and
    compared operands on failure; real people's logs must not end up in test output)."""

    def __repr__(self) -> str:
        return f"<{len(self)} corpus texts>"


def _corpus_patch_calls(home: Path) -> dict[str, _Texts]:
    """apply_patch texts (custom tool, argv) and shell scripts carrying one, by form."""
    forms = {form: _Texts() for form in ("custom_tool_call", "function_call", "argv", "script")}
    for path in sorted((home / ".codex").rglob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                item = obj.get("payload", obj) if isinstance(obj, dict) else None
                if not isinstance(item, dict):
                    continue
                kind = item.get("type")
                if kind == "custom_tool_call" and item.get("name") == "apply_patch":
                    forms["custom_tool_call"].append(item.get("input", ""))
                elif kind == "function_call" and item.get("name") == "apply_patch":
                    forms["function_call"].append(item.get("arguments", ""))
                elif kind == "function_call":
                    try:
                        args = json.loads(item.get("arguments", ""))
                    except ValueError:
                        continue
                    if not isinstance(args, dict):
                        continue
                    cmd = args.get("command", args.get("cmd"))
                    if isinstance(cmd, list) and cmd and cmd[0] == "apply_patch":
                        forms["argv"].append(argv_to_script(cmd))
                    elif isinstance(cmd, list) and cmd and "*** Begin Patch" in cmd[-1]:
                        forms["script"].append(argv_to_script(cmd))
                    elif isinstance(cmd, str) and "*** Begin Patch" in cmd:
                        forms["script"].append(cmd)
    return forms


@pytest.fixture(scope="module")
def corpus_forms() -> dict[str, _Texts]:
    return _corpus_patch_calls(corpus_home())


def test_corpus_form_counts(corpus_forms: dict[str, _Texts]) -> None:
    counts = {form: len(texts) for form, texts in corpus_forms.items()}
    assert counts == {"custom_tool_call": 58, "function_call": 0, "argv": 54, "script": 188}


def test_corpus_custom_tool_patches(corpus_forms: dict[str, _Texts]) -> None:
    total = 0
    for text in corpus_forms["custom_tool_call"] + corpus_forms["function_call"]:
        patch = patch_text_of(text)
        found = patch is not None
        assert found
        parsed = _parsed_paths(parse_patch(patch or ""))
        expected = _header_paths(patch or "")
        assert parsed == expected
        assert len(parsed) >= 1  # every call in the corpus touches at least one file
        total += len(parsed)
    assert total == 112


@pytest.mark.parametrize("form", ["argv", "script"])
def test_corpus_shell_patches(corpus_forms: dict[str, _Texts], form: str) -> None:
    total = 0
    for script in corpus_forms[form]:
        effects = parse_command(script, None)
        patch_count = len(effects.patches)
        assert patch_count == 1
        parsed = _parsed_paths(parse_patch(effects.patches[0]))
        expected = _header_paths(script)
        assert parsed == expected
        # and each header path comes out of the shell parser as an edit
        written = {p for p, _ in effects.writes}
        assert written == {posixpath.normpath(p) for p in parsed}
        total += len(parsed)
    assert total == {"argv": 54, "script": 188}[form]
