"""Static reading of shell command lines: which files a command reads and writes.

Nothing is ever executed. The result is a best-effort *lower bound*: a path is reported
only when the text names it plainly (no unexpanded variable, no glob) as the operand of a
command whose meaning we know. Unknown commands (python, make, find, xargs, ssh, docker,
PowerShell cmdlets...) yield nothing rather than guesses.

Two stages:

1. ``_Lexer`` turns the script into simple commands (words, redirections, heredoc
   bodies, nested ``$(...)``/backtick/``<(...)`` scripts) split on newlines, ``|``,
   ``||``, ``&&``, ``;``, ``&`` and parentheses, following the POSIX quoting rules.
2. ``_Analyzer`` walks those commands with a working directory that ``cd``/``pushd``
   move (scoped to parentheses and substitutions), skips prefixes (assignments, shell
   keywords, wrappers such as sudo/env/timeout) and applies the per-command table.

Pure: imports nothing from the daemon's I/O stages.

Long on purpose (about 1,200 lines): the lexer, the analyzer and the per-command table
share private types, and most of the length is the table of commands and their operands;
split, each part would export what only the other uses.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from .patch import BEGIN_MARKER, MOVE, parse_patch
from .projects import is_windows_path, resolve_path

# Edit operations (see docs/formats-derived.md).
OP_ADD = "add"
OP_UPDATE = "update"
OP_DELETE = "delete"
OP_MOVE = "move"
OP_WRITE = "write"

# Nesting limit for $(...), backticks and `bash -c`: deeper text is skipped, so that
# adversarial input can neither recurse without bound nor raise.
_MAX_DEPTH = 12

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox-sh"})
FOREIGN_SHELLS = frozenset({"pwsh", "powershell", "cmd"})  # not POSIX: never parsed


@dataclass(slots=True)
class ShellEffects:
    reads: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)  # (path, op)
    patches: list[str] = field(default_factory=list)  # apply_patch texts found in the script

    def add_read(self, path: str) -> None:
        if path not in self.reads:
            self.reads.append(path)

    def add_write(self, path: str, op: str) -> None:
        if (path, op) not in self.writes:
            self.writes.append((path, op))


# ---------------------------------------------------------------------------------------
# Stage 1: lexing
# ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class Word:
    text: str  # after quote removal; known expansions applied, unknown ones kept raw
    plain: bool = True  # False: holds an unexpanded variable, substitution or glob
    quoted: bool = False  # some part was quoted or escaped (so never a keyword)
    assign: bool = False  # NAME=value


@dataclass(slots=True)
class _Redirect:
    op: str  # "<" (read), ">" (write), ">>" (append)
    target: Word


@dataclass(slots=True)
class _Command:
    words: list[Word] = field(default_factory=list)
    redirects: list[_Redirect] = field(default_factory=list)
    heredocs: list[str] = field(default_factory=list)
    nested: list[list[_Command | str]] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.words or self.redirects or self.heredocs or self.nested)


_Item = _Command | str  # a command, or "(" / ")" marking a subshell scope

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?")
# Characters that need no special handling inside an unquoted word.
_ORDINARY_RUN = re.compile(r"[^\s;&|()<>\\'\"$`*?\[{}=~#]+")
_TILDE = re.compile(r"~([A-Za-z0-9_.-]*)")
_WORD_END = frozenset(" \t\r\n;&|()<>")
_REDIRECT = re.compile(
    r"(?P<fd>\d+|\{[A-Za-z_][A-Za-z0-9_]*\})?"
    r"(?P<op>&>>|&>|>>|>&|>\||<<<|<<-|<<|<&|<>|>|<)"
)


class _Lexer:
    def __init__(self, src: str, home: str | None, depth: int, pos: int = 0) -> None:
        self.src = src
        self.n = len(src)
        self.pos = pos
        self.home = home
        self.depth = depth
        # heredocs announced on the current line: (delimiter, strip tabs, owner)
        self.pending: list[tuple[str, bool, _Command]] = []

    # -- top level ---------------------------------------------------------------------

    def parse(self, in_substitution: bool = False) -> list[_Item]:
        """Commands up to the end of the text or, inside ``$(``, the closing ``)``."""
        items: list[_Item] = []
        cmd = _Command()
        open_parens = 0
        src, n = self.src, self.n

        def finish() -> None:
            nonlocal cmd
            if not cmd.is_empty():
                items.append(cmd)
            cmd = _Command()

        while self.pos < n:
            c = src[self.pos]
            if c in " \t\r":
                self.pos += 1
            elif c == "\n":
                finish()
                self.pos += 1
                self._read_heredoc_bodies()
            elif c == "#":
                end = src.find("\n", self.pos)
                self.pos = n if end < 0 else end
            elif c == "\\" and src.startswith("\\\n", self.pos):
                self.pos += 2
            elif c == "(":
                finish()
                items.append("(")
                open_parens += 1
                self.pos += 1
            elif c == ")":
                finish()
                self.pos += 1
                if open_parens == 0 and in_substitution:
                    return items
                if open_parens > 0:
                    open_parens -= 1
                    items.append(")")
            elif c in "<>" and src.startswith(("<(", ">("), self.pos):
                self.pos += 2
                cmd.nested.append(self._nested_substitution())
                cmd.words.append(Word("<(...)", plain=False))
            elif (c in "<>&" or c.isdigit() or c == "{") and self._try_redirect(cmd):
                pass
            elif c in ";&|":
                finish()
                self.pos += 1
                while self.pos < n and src[self.pos] in ";&|":
                    self.pos += 1
            else:
                word = self._read_word(cmd)
                if word is None:  # a stray character that starts no word
                    self.pos += 1
                else:
                    cmd.words.append(word)
        finish()
        return items

    def _read_heredoc_bodies(self) -> None:
        src = self.src
        for delimiter, strip_tabs, owner in self.pending:
            lines: list[str] = []
            while self.pos < self.n:
                end = src.find("\n", self.pos)
                if end < 0:
                    end = self.n
                line = src[self.pos : end]
                self.pos = min(end + 1, self.n)
                if strip_tabs:
                    line = line.lstrip("\t")
                if line.rstrip("\r") == delimiter:
                    break
                lines.append(line)
            # An unterminated heredoc runs to the end of the text, as in bash.
            owner.heredocs.append("\n".join(lines))
        self.pending = []

    def _try_redirect(self, cmd: _Command) -> bool:
        m = _REDIRECT.match(self.src, self.pos)
        if m is None:
            return False
        op = m.group("op")
        self.pos = m.end()
        if op in ("<<", "<<-"):
            delimiter = self._next_word(cmd)
            if delimiter is not None:
                self.pending.append((delimiter.text, op == "<<-", cmd))
            return True
        target = self._next_word(cmd)
        if target is None or op == "<<<":  # a here-string is text, not a file
            return True
        if op in (">&", "<&"):
            if target.text == "-" or target.text.isdigit():
                return True  # fd duplication or closing: 2>&1, >&2, <&-
            if op == "<&":
                return True
            op = ">"  # `>&file` is `&>file`
        kind = {"&>": ">", ">|": ">", "&>>": ">>", "<>": "<"}.get(op, op)
        cmd.redirects.append(_Redirect(kind, target))
        return True

    def _next_word(self, cmd: _Command) -> Word | None:
        while self.pos < self.n and self.src[self.pos] in " \t":
            self.pos += 1
        if self.pos >= self.n or self.src[self.pos] in _WORD_END:
            return None
        return self._read_word(cmd)

    # -- words -------------------------------------------------------------------------

    def _read_word(self, cmd: _Command) -> Word | None:
        # One loop over the characters of a word with the POSIX quoting states (plain,
        # single, double, $'...', escapes, substitutions) side by side: about 80 lines,
        # kept whole because split the quoting rules would be read in several places.
        src, n = self.src, self.n
        start = self.pos
        parts: list[str] = []
        plain = True
        quoted = False
        assign = False
        brace = False
        while self.pos < n:
            c = src[self.pos]
            if c in _WORD_END:
                break
            m = _ORDINARY_RUN.match(src, self.pos)
            if m is not None:
                parts.append(m.group())
                self.pos = m.end()
                continue
            if c == "\\":
                if self.pos + 1 >= n:
                    parts.append("\\")
                    self.pos += 1
                elif src[self.pos + 1] == "\n":
                    self.pos += 2
                else:
                    parts.append(src[self.pos + 1])
                    quoted = True
                    self.pos += 2
            elif c == "'":
                end = src.find("'", self.pos + 1)
                if end < 0:
                    end = n
                parts.append(src[self.pos + 1 : end])
                quoted = True
                self.pos = end + 1
            elif c == '"':
                quoted = True
                plain = self._read_double_quoted(parts, cmd) and plain
            elif c == "$":
                if src.startswith("$'", self.pos):
                    quoted = True
                    self._read_ansi_c(parts)
                elif src.startswith('$"', self.pos):
                    self.pos += 1  # a locale string reads like a double-quoted one
                else:
                    plain = self._read_dollar(parts, cmd) and plain
            elif c == "`":
                self._read_backticks(parts, cmd)
                plain = False
            elif c == "~":
                if self.pos == start:
                    plain = self._read_tilde(parts) and plain
                else:
                    parts.append(c)
                    self.pos += 1
            elif c == "=":
                text = "".join(parts)
                parts.append("=")
                self.pos += 1
                if not assign and not quoted and _ASSIGN_NAME.fullmatch(text):
                    assign = True
                    if self.pos < n and src[self.pos] == "(":  # arr=(a b c)
                        self._skip_balanced("(", ")")
                        plain = False
            elif c in "*?[":
                parts.append(c)
                plain = False
                self.pos += 1
            elif c in "{}":
                parts.append(c)
                brace = True
                self.pos += 1
            else:  # "#" inside a word is literal
                parts.append(c)
                self.pos += 1
        if self.pos == start:
            return None
        text = "".join(parts)
        if brace and text not in ("{", "}") and not quoted:
            plain = False  # brace expansion: {a,b} or {1..3}
        return Word(text, plain, quoted, assign)

    def _read_double_quoted(self, parts: list[str], cmd: _Command) -> bool:
        """Consume "...": backslash escapes only $ ` " \\ and newline. Returns plainness."""
        src, n = self.src, self.n
        plain = True
        self.pos += 1
        while self.pos < n:
            c = src[self.pos]
            if c == '"':
                self.pos += 1
                return plain
            if c == "\\" and self.pos + 1 < n and src[self.pos + 1] in '$`"\\\n':
                if src[self.pos + 1] != "\n":
                    parts.append(src[self.pos + 1])
                self.pos += 2
            elif c == "$":
                plain = self._read_dollar(parts, cmd) and plain
            elif c == "`":
                self._read_backticks(parts, cmd)
                plain = False
            else:
                parts.append(c)
                self.pos += 1
        return plain

    def _read_ansi_c(self, parts: list[str]) -> None:
        """$'...' with C escapes (the common ones; others keep the escaped character)."""
        src, n = self.src, self.n
        self.pos += 2
        escapes = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "e": "\x1b"}
        while self.pos < n:
            c = src[self.pos]
            if c == "'":
                self.pos += 1
                return
            if c == "\\" and self.pos + 1 < n:
                nxt = src[self.pos + 1]
                parts.append(escapes.get(nxt, nxt))
                self.pos += 2
            else:
                parts.append(c)
                self.pos += 1

    def _read_dollar(self, parts: list[str], cmd: _Command) -> bool:
        """A $ expansion. $HOME/${HOME} expand when the home is known; anything else is
        kept raw and makes the word non-plain. Returns plainness."""
        src, n = self.src, self.n
        start = self.pos
        nxt = src[self.pos + 1] if self.pos + 1 < n else ""
        if src.startswith("$((", self.pos):
            self.pos += 1
            self._skip_balanced("(", ")")
        elif nxt == "(":
            self.pos += 2
            cmd.nested.append(self._nested_substitution())
        elif nxt == "{":
            self.pos += 1
            self._skip_balanced("{", "}")
            if src[start : self.pos] == "${HOME}" and self.home is not None:
                parts.append(self.home)
                return True
        elif nxt and _NAME.match(nxt):
            m = _NAME.match(src, self.pos + 1)
            assert m is not None
            self.pos = m.end()
            if m.group() == "HOME" and self.home is not None:
                parts.append(self.home)
                return True
        elif nxt and nxt in "@*#?$!-0123456789":
            self.pos += 2
        else:
            parts.append("$")
            self.pos += 1
            return True
        parts.append(src[start : self.pos])
        return False

    def _read_tilde(self, parts: list[str]) -> bool:
        src = self.src
        m = _TILDE.match(src, self.pos)
        assert m is not None
        self.pos = m.end()
        at_end = self.pos >= self.n or src[self.pos] == "/" or src[self.pos] in _WORD_END
        if m.group(1) == "" and at_end and self.home is not None:
            parts.append(self.home)
            return True
        parts.append(m.group())
        return not at_end  # "~user" or an unknown home is unexpanded; "a~b" is literal

    def _read_backticks(self, parts: list[str], cmd: _Command) -> None:
        src, n = self.src, self.n
        i = self.pos + 1
        inner: list[str] = []
        while i < n and src[i] != "`":
            if src[i] == "\\" and i + 1 < n and src[i + 1] in "`\\$":
                inner.append(src[i + 1])
                i += 2
            else:
                inner.append(src[i])
                i += 1
        parts.append(src[self.pos : min(i + 1, n)])
        self.pos = min(i + 1, n)
        if self.depth < _MAX_DEPTH:
            sub = _Lexer("".join(inner), self.home, self.depth + 1)
            cmd.nested.append(sub.parse())

    def _nested_substitution(self) -> list[_Item]:
        """After "$(" or "<(": parse to the matching ")" and return its commands."""
        if self.depth >= _MAX_DEPTH:
            self.pos -= 1  # back onto the "(" so the skip sees a balanced group
            self._skip_balanced("(", ")")
            return []
        sub = _Lexer(self.src, self.home, self.depth + 1, self.pos)
        items = sub.parse(in_substitution=True)
        self.pos = sub.pos
        self.pending.extend(sub.pending)  # heredocs whose bodies follow this line
        return items

    def _skip_balanced(self, open_char: str, close_char: str) -> None:
        """From an opening character, move past its match (quotes respected, roughly)."""
        src, n = self.src, self.n
        level = 0
        while self.pos < n:
            c = src[self.pos]
            if c == "\\":
                self.pos += 2
                continue
            if c == "'":
                end = src.find("'", self.pos + 1)
                self.pos = n if end < 0 else end + 1
                continue
            if c == open_char:
                level += 1
            elif c == close_char:
                level -= 1
                if level <= 0:
                    self.pos += 1
                    return
            self.pos += 1


def _lex(script: str, home: str | None, depth: int = 0) -> list[_Item]:
    return _Lexer(script, home, depth).parse()


# ---------------------------------------------------------------------------------------
# Stage 2: what each command does
# ---------------------------------------------------------------------------------------

# A working directory made unknowable by `cd "$X"` or `cd -` with no history: relative
# operands after it are dropped rather than resolved against the wrong directory.
_UNKNOWN_DIR = "\0unknown"


@dataclass(frozen=True, slots=True)
class _Spec:
    """How a command's options are read."""

    arg_short: str = ""  # short options that take an argument (-n 5 or -n5)
    arg_long: frozenset[str] = frozenset()  # long options taking the next word
    arg2_long: frozenset[str] = frozenset()  # long options taking two words (jq --arg)
    optional_attached: str = ""  # short options with an optional attached argument only
    pattern_opts: frozenset[str] = frozenset()  # options whose argument is the script
    read_opts: frozenset[str] = frozenset()  # options whose argument is a file read
    write_opts: frozenset[str] = frozenset()  # options whose argument is a file written
    quiet_opts: frozenset[str] = frozenset()  # options under which no content is shown


def _spec(
    arg_short: str = "",
    arg_long: str = "",
    *,
    arg2_long: str = "",
    optional_attached: str = "",
    pattern_opts: str = "",
    read_opts: str = "",
    write_opts: str = "",
    quiet_opts: str = "",
) -> _Spec:
    return _Spec(
        arg_short,
        frozenset(arg_long.split()),
        frozenset(arg2_long.split()),
        optional_attached,
        frozenset(pattern_opts.split()),
        frozenset(read_opts.split()),
        frozenset(write_opts.split()),
        frozenset(quiet_opts.split()),
    )


# Readers taking every operand.
_READ_ALL: dict[str, _Spec] = {
    "cat": _spec(),
    "tac": _spec("s", "--separator"),
    "head": _spec("nc", "--lines --bytes"),
    "tail": _spec("ncs", "--lines --bytes --sleep-interval --pid --max-unchanged-stats"),
    "less": _spec("bhjkoOpPtTxyz", "--pattern --tag --log-file --prompt --tabs"),
    "more": _spec("n", "--lines"),
    "nl": _spec("bdfhilnsvw", "--body-numbering --section-delimiter --number-format"),
    "strings": _spec("nteT", "--bytes --radix --encoding --target --output-separator"),
    "xxd": _spec("cglson", "-cols -groupsize -len -seek -name"),
    "hexdump": _spec("nsef", "--length --skip", read_opts="-f"),
    "hd": _spec("nsef", "--length --skip", read_opts="-f"),
    "od": _spec(
        "AjNSt",
        "--address-radix --skip-bytes --read-bytes --strings --format",
        optional_attached="w",
    ),
    "base64": _spec("w", "--wrap"),
    "bat": _spec(
        "lrHm",
        "--language --line-range --highlight-line --map-syntax --style "
        "--theme --tabs --wrap --terminal-width --decorations --color --paging "
        "--pager --file-name --diff-context --italic-text",
    ),
    "diff": _spec(
        "CULxXIFSWD",
        "--label --exclude --exclude-from --ignore-matching-lines "
        "--show-function-line --starting-file --width --ifdef --tabsize "
        "--horizon-lines --line-format",
    ),
    "cmp": _spec("in", "--ignore-initial --bytes"),
    "comm": _spec("", "--output-delimiter"),
    "paste": _spec("d", "--delimiters"),
    "join": _spec("aejotv12"),
    "cut": _spec("bcdf", "--bytes --characters --delimiter --fields --output-delimiter"),
    "sort": _spec(
        "ktoST",
        "--key --field-separator --output --buffer-size "
        "--temporary-directory --parallel --batch-size --compress-program",
        read_opts="--files0-from --random-source",
        write_opts="-o --output",
    ),
    "uniq": _spec("fsw", "--skip-fields --skip-chars --check-chars"),
    "column": _spec(
        "scoNlREHOWTrni", "--separator --columns --output-separator --table-columns --table-name"
    ),
    "fold": _spec("w", "--width"),
    "rev": _spec(),
    "shuf": _spec(
        "nio",
        "--head-count --input-range --output",
        read_opts="--random-source",
        write_opts="-o --output",
        quiet_opts="-e -i --echo --input-range",
    ),
    "expand": _spec("t", "--tabs"),
    "unexpand": _spec("t", "--tabs"),
    "wc": _spec("", "", read_opts="--files0-from"),
}
_READ_ALL["batcat"] = _READ_ALL["bat"]

# Commands whose first operand is a script or pattern unless an option supplied it.
_GREP_QUIET = "-l -L -c -q --files-with-matches --files-without-match --count --quiet --silent"
_PATTERN_FIRST: dict[str, _Spec] = {
    "sed": _spec(
        "efl",
        "--expression --file --line-length",
        optional_attached="i",
        pattern_opts="-e -f --expression --file",
        read_opts="-f --file",
    ),
    "awk": _spec(
        "fvFeiElW",
        "--file --assign --field-separator --source --include --load --exec",
        pattern_opts="-f -e -E --file --source --exec",
        read_opts="-f -E --file --exec",
    ),
    "grep": _spec(
        "efmABCdD",
        "--regexp --file --max-count --after-context "
        "--before-context --context --directories --devices --include --exclude "
        "--exclude-dir --exclude-from --label --binary-files --group-separator",
        pattern_opts="-e -f --regexp --file",
        read_opts="-f --file",
        quiet_opts=_GREP_QUIET,
    ),
    "rg": _spec(
        "efgtTjMmABCdEr",
        "--regexp --file --glob --iglob --type --type-not "
        "--type-add --type-clear --threads --max-columns --max-count "
        "--after-context --before-context --context --max-depth --encoding "
        "--replace --pre --pre-glob --sort --sortr --color --colors "
        "--context-separator --field-context-separator --field-match-separator "
        "--max-filesize --path-separator --dfa-size-limit --regex-size-limit "
        "--engine --ignore-file --hostname-bin --hyperlink-format --generate",
        pattern_opts="-e -f --regexp --file",
        read_opts="-f --file",
        quiet_opts="-l -c -q --files --files-with-matches --files-without-match "
        "--count --count-matches --quiet --type-list",
    ),
    "ag": _spec(
        "ABCmGgp",
        "--after --before --context --max-count --file-search-regex "
        "--depth --ignore --ignore-dir --path-to-ignore --pager",
        quiet_opts="-l -L -c -g --files-with-matches --files-without-matches "
        "--count --list-file-types",
    ),
    "ack": _spec(
        "ABCmg",
        "--after-context --before-context --context --max-count --type "
        "--ignore-dir --ignore-file --match --output",
        pattern_opts="--match",
        quiet_opts="-l -L -c -f -g --files-with-matches --files-without-matches --count",
    ),
    "jq": _spec(
        "fL",
        "--from-file --indent",
        arg2_long="--arg --argjson --slurpfile --rawfile",
        pattern_opts="-f --from-file",
        read_opts="-f --from-file --slurpfile --rawfile",
    ),
}
for _alias, _base in (
    ("egrep", "grep"),
    ("fgrep", "grep"),
    ("ugrep", "grep"),
    ("gawk", "awk"),
    ("mawk", "awk"),
    ("nawk", "awk"),
):
    _PATTERN_FIRST[_alias] = _PATTERN_FIRST[_base]

_GIT_GREP = _spec(
    "efmABCO",
    "--regexp --file --max-count --after-context --before-context --context --max-depth --threads",
    pattern_opts="-e -f --regexp --file",
    read_opts="-f --file",
    quiet_opts=_GREP_QUIET + " --name-only --files-without-match",
)

# Option specs of the commands that write their operands.
_TEE = _spec("", "--output-error")
_TOUCH = _spec("dtr", "--date --reference --time")
_MOVE_LIKE = _spec("tS", "--target-directory --suffix")
_RM = _spec()
_MKDIR = _spec("m", "--mode --context")

# Prefix words that introduce the command after them.
_KEYWORDS = frozenset(
    {
        "if",
        "then",
        "elif",
        "else",
        "fi",
        "do",
        "done",
        "while",
        "until",
        "!",
        "{",
        "}",
        "esac",
        "coproc",
    }
)
_SKIP_COMMAND_KEYWORDS = frozenset({"for", "case", "select", "function", "[[", "let"})
# Wrappers run the command after their own options: the spec of those options.
_WRAPPERS: dict[str, _Spec] = {
    "sudo": _spec(
        "ugCDhprtUTR",
        "--user --group --close-from --chdir --host --prompt "
        "--role --type --other-user --command-timeout --chroot",
        quiet_opts="-l -v -k -K -V -e --list --validate --edit --version",
    ),
    "doas": _spec("uC", quiet_opts="-L"),
    "env": _spec("uCSP", "--unset --chdir --split-string", quiet_opts="-S --split-string"),
    "time": _spec("fo", "--format --output"),
    "nice": _spec("n", "--adjustment"),
    "ionice": _spec("cnp", "--class --classdata --pid", quiet_opts="-p --pid"),
    "nohup": _spec(),
    "stdbuf": _spec("ioe", "--input --output --error"),
    "timeout": _spec("sk", "--signal --kill-after"),
    "command": _spec("", quiet_opts="-v -V"),
    "exec": _spec("a"),
    "builtin": _spec(),
}
_DURATION = re.compile(r"\d+(?:\.\d+)?[smhd]?")
_AWK_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_GIT_REV = re.compile(r"(?:HEAD|FETCH_HEAD|ORIG_HEAD|@)(?:[~^@].*)?|[0-9a-f]{7,40}|.*[~^].*")


@dataclass(slots=True)
class _Ctx:
    cwd: str | None
    home: str | None
    repo_root_for: Callable[[str], str] | None
    effects: ShellEffects
    depth: int
    oldpwd: str | None = None
    dirstack: list[str | None] = field(default_factory=list)

    def child(self) -> _Ctx:
        """A scope whose cd's do not leak out (substitutions, nested shells)."""
        return _Ctx(
            self.cwd,
            self.home,
            self.repo_root_for,
            self.effects,
            self.depth + 1,
            self.oldpwd,
            list(self.dirstack),
        )


def _scan(
    args: list[Word], spec: _Spec, stop_at_operand: bool = False
) -> tuple[list[tuple[str, Word | None]], list[Word], int]:
    """Split arguments into (option, value) pairs and operands, getopt style.

    With ``stop_at_operand`` (a wrapper's own options) scanning stops at the first
    operand; the third value is the index where scanning stopped."""
    opts: list[tuple[str, Word | None]] = []
    operands: list[Word] = []
    i = 0
    ended = False
    while i < len(args):
        word = args[i]
        text = word.text
        if ended or len(text) < 2 or text[0] != "-":
            if stop_at_operand:
                return opts, operands, i
            operands.append(word)
            i += 1
            continue
        i += 1
        if text == "--":
            ended = True
            continue
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            if eq:
                opts.append((name, Word(value, word.plain, word.quoted)))
            elif name in spec.arg2_long:
                second = args[i + 1] if i + 1 < len(args) else None
                i += 2
                opts.append((name, second))
            elif name in spec.arg_long and i < len(args):
                opts.append((name, args[i]))
                i += 1
            else:
                opts.append((name, None))
            continue
        for j in range(1, len(text)):
            ch = text[j]
            rest = text[j + 1 :]
            if ch in spec.optional_attached:
                opts.append(("-" + ch, Word(rest, word.plain) if rest else None))
                break
            if ch in spec.arg_short:
                if rest:
                    opts.append(("-" + ch, Word(rest, word.plain, word.quoted)))
                elif i < len(args):
                    opts.append(("-" + ch, args[i]))
                    i += 1
                else:
                    opts.append(("-" + ch, None))
                break
            opts.append(("-" + ch, None))
    return opts, operands, len(args)


def _has(opts: list[tuple[str, Word | None]], names: frozenset[str]) -> bool:
    return any(name in names for name, _ in opts)


class _Analyzer:
    def walk(self, items: list[_Item], ctx: _Ctx) -> None:
        saved: list[tuple[str | None, str | None, list[str | None]]] = []
        for item in items:
            if item == "(":
                saved.append((ctx.cwd, ctx.oldpwd, list(ctx.dirstack)))
            elif item == ")":
                if saved:
                    ctx.cwd, ctx.oldpwd, ctx.dirstack = saved.pop()
            elif isinstance(item, _Command):
                self.command(item, ctx)

    # -- one simple command ------------------------------------------------------------

    def command(self, cmd: _Command, ctx: _Ctx) -> None:
        for nested in cmd.nested:
            if ctx.depth < _MAX_DEPTH:
                self.walk(nested, ctx.child())
        for redirect in cmd.redirects:
            path = self.resolve(redirect.target, ctx.cwd)
            if path is None:
                continue
            if redirect.op == "<":
                ctx.effects.add_read(path)
            else:
                ctx.effects.add_write(path, OP_UPDATE if redirect.op == ">>" else OP_WRITE)
        stripped = self.strip_prefixes(cmd.words, ctx)
        if stripped is None:
            return
        argv, cwd = stripped
        if not argv or not argv[0].plain:
            return
        name = _command_name(argv[0].text)
        args = argv[1:]
        if name in ("cd", "pushd", "popd"):
            self.change_dir(name, args, ctx)
        elif name in _READ_ALL:
            self.read_all(name, args, cwd, ctx)
        elif name in ("source", "."):
            operands = [a for a in args if a.text != "--"]
            if operands:
                self.read(operands[0], cwd, ctx)
        elif name in _PATTERN_FIRST:
            self.pattern_first(name, args, cwd, ctx)
        elif name == "git":
            self.git(args, cwd, ctx)
        elif name in SHELLS:
            self.nested_shell(args, cwd, ctx)
        elif name in ("apply_patch", "applypatch"):
            texts = list(cmd.heredocs)
            texts += [a.text for a in args if BEGIN_MARKER in a.text]
            for text in texts:
                self.apply_patch(text, cwd, ctx)
        elif name == "tee":
            opts, operands, _ = _scan(args, _TEE)
            op = OP_UPDATE if _has(opts, frozenset({"-a", "--append"})) else OP_WRITE
            for word in operands:
                self.write(word, op, cwd, ctx)
        elif name == "touch":
            for word in _scan(args, _TOUCH)[1]:
                self.write(word, OP_ADD, cwd, ctx)
        elif name in ("rm", "rmdir", "unlink"):
            for word in _scan(args, _RM)[1]:
                self.write(word, OP_DELETE, cwd, ctx)
        elif name == "mkdir":
            for word in _scan(args, _MKDIR)[1]:
                self.write(word, OP_ADD, cwd, ctx)
        elif name in ("mv", "cp", "ln"):
            self.move_like(name, args, cwd, ctx)

    def strip_prefixes(self, words: list[Word], ctx: _Ctx) -> tuple[list[Word], str | None] | None:
        """Drop assignments, keywords and wrappers (with their options and numeric
        arguments). Returns the command's argv and its cwd (``env -C`` moves it), or
        None when the words run no command we follow (a `for` header, `command -v`...)."""
        cwd = ctx.cwd
        i = 0
        while i < len(words):
            word = words[i]
            if word.assign:
                i += 1
                continue
            if not word.quoted and word.text in _KEYWORDS:
                i += 1
                continue
            if not word.quoted and word.text in _SKIP_COMMAND_KEYWORDS:
                return None
            name = _command_name(word.text) if word.plain else ""
            spec = _WRAPPERS.get(name)
            if spec is None:
                break
            opts, _, used = _scan(words[i + 1 :], spec, stop_at_operand=True)
            if _has(opts, spec.quiet_opts):
                return None
            for opt, value in opts:
                if name == "env" and opt in ("-C", "--chdir") and value is not None:
                    cwd = self.resolve_dir(value, cwd)
            i += 1 + used
            if name == "env":
                while i < len(words) and (words[i].assign or "=" in words[i].text):
                    i += 1
            elif name == "timeout" and i < len(words) and _DURATION.fullmatch(words[i].text):
                i += 1
        return words[i:], cwd

    # -- paths -------------------------------------------------------------------------

    def resolve(self, word: Word, cwd: str | None) -> str | None:
        """The path an operand names, or None when it names none we can know."""
        if not word.plain:
            return None
        text = word.text
        if text in ("", "-", "--") or "\n" in text or "\0" in text or "://" in text:
            return None
        if text.startswith("/"):
            path = posixpath.normpath(text)
            return None if path == "/dev" or path.startswith("/dev/") else path
        if is_windows_path(text):
            return text
        if cwd == _UNKNOWN_DIR:
            return None
        return resolve_path(text, cwd)

    def resolve_dir(self, word: Word, cwd: str | None) -> str | None:
        path = self.resolve(word, cwd)
        return _UNKNOWN_DIR if path is None else path

    def read(self, word: Word, cwd: str | None, ctx: _Ctx) -> None:
        path = self.resolve(word, cwd)
        if path is not None:
            ctx.effects.add_read(path)

    def write(self, word: Word, op: str, cwd: str | None, ctx: _Ctx) -> None:
        path = self.resolve(word, cwd)
        if path is not None:
            ctx.effects.add_write(path, op)

    # -- command families --------------------------------------------------------------

    def change_dir(self, name: str, args: list[Word], ctx: _Ctx) -> None:
        operands = [a for a in args if a.text not in ("-P", "-L", "-e", "-@", "--")]
        if name == "popd":
            if ctx.dirstack:
                ctx.cwd = ctx.dirstack.pop()
            else:
                ctx.cwd = _UNKNOWN_DIR
            return
        if not operands:
            if name == "pushd":
                target: str | None = _UNKNOWN_DIR  # swaps the top two: not followed
            else:
                target = ctx.home if ctx.home is not None else _UNKNOWN_DIR
        elif operands[0].text == "-" and operands[0].plain:
            target = ctx.oldpwd if ctx.oldpwd is not None else _UNKNOWN_DIR
        else:
            target = self.resolve_dir(operands[0], ctx.cwd)
        if name == "pushd":
            ctx.dirstack.append(ctx.cwd)
        ctx.oldpwd = ctx.cwd
        ctx.cwd = target

    def read_all(self, name: str, args: list[Word], cwd: str | None, ctx: _Ctx) -> None:
        spec = _READ_ALL[name]
        opts, operands, _ = _scan(args, spec)
        self.option_files(opts, spec, cwd, ctx)
        if _has(opts, spec.quiet_opts):
            return
        if name in ("xxd", "uniq") and len(operands) >= 2:
            # `xxd in out`, `uniq in out`: the second operand is the output file
            self.write(operands[1], OP_WRITE, cwd, ctx)
            operands = operands[:1]
        for word in operands:
            if name in ("head", "tail", "less", "more") and word.text.startswith("+"):
                continue  # `tail +5`, `less +F`: a position or command, not a file
            self.read(word, cwd, ctx)

    def option_files(
        self, opts: list[tuple[str, Word | None]], spec: _Spec, cwd: str | None, ctx: _Ctx
    ) -> None:
        for opt, value in opts:
            if value is None:
                continue
            if opt in spec.read_opts:
                self.read(value, cwd, ctx)
            elif opt in spec.write_opts:
                self.write(value, OP_WRITE, cwd, ctx)

    def pattern_first(self, name: str, args: list[Word], cwd: str | None, ctx: _Ctx) -> None:
        spec = _PATTERN_FIRST[name]
        if name == "sed":
            args = _drop_bsd_sed_suffix(args)
        opts, operands, _ = _scan(args, spec)
        self.option_files(opts, spec, cwd, ctx)
        if name == "sed" and _has(opts, frozenset({"-i", "--in-place"})):
            files = operands if _has(opts, spec.pattern_opts) else operands[1:]
            for word in files:
                self.write(word, OP_UPDATE, cwd, ctx)
            return
        if _has(opts, spec.quiet_opts):
            return
        if name == "jq" and _has(opts, frozenset({"--args", "--jsonargs"})):
            return  # the operands after the filter are string arguments, not files
        files = operands if _has(opts, spec.pattern_opts) else operands[1:]
        for word in files:
            if name.endswith("awk") and _AWK_ASSIGNMENT.match(word.text):
                continue  # awk operand assignment var=value
            self.read(word, cwd, ctx)

    def git(self, args: list[Word], cwd: str | None, ctx: _Ctx) -> None:
        i = 0
        while i < len(args) and args[i].text.startswith("-"):
            text = args[i].text
            if text == "-C" and i + 1 < len(args):
                cwd = self.resolve_dir(args[i + 1], cwd)
                i += 2
            elif text in ("-c", "--git-dir", "--work-tree", "--namespace", "--config-env"):
                i += 2
            else:
                i += 1
        if i >= len(args):
            return
        sub = args[i].text
        rest = args[i + 1 :]
        if sub == "grep":
            self.git_grep(rest, cwd, ctx)
        elif sub in ("show", "cat-file"):
            operands = [a for a in rest if not a.text.startswith("-")]
            if sub == "cat-file" and not (
                any(a.text == "-p" for a in rest) or (operands and operands[0].text == "blob")
            ):
                return  # -t / -s / -e print no content
            for word in operands:
                if word.plain and ":" in word.text and not is_windows_path(word.text):
                    self.git_object_path(word.text.partition(":")[2], cwd, ctx)

    def git_grep(self, args: list[Word], cwd: str | None, ctx: _Ctx) -> None:
        before_dashes = args
        after_dashes: list[Word] = []
        for k, word in enumerate(args):
            if word.text == "--":
                before_dashes, after_dashes = args[:k], args[k + 1 :]
                break
        opts, operands, _ = _scan(before_dashes, _GIT_GREP)
        self.option_files(opts, _GIT_GREP, cwd, ctx)
        if _has(opts, _GIT_GREP.quiet_opts):
            return
        if not _has(opts, _GIT_GREP.pattern_opts):
            operands = operands[1:]
        # Without "--", operands may be revisions: keep only those that cannot be one.
        paths = [w for w in operands if not _GIT_REV.fullmatch(w.text)] + after_dashes
        for word in paths:
            self.read(word, cwd, ctx)

    def git_object_path(self, path: str, cwd: str | None, ctx: _Ctx) -> None:
        """`REV:path` names a path from the repository top, `REV:./path` from the cwd."""
        word = Word(path)
        if not path:
            return
        if path.startswith(("./", "../")) or cwd in (None, _UNKNOWN_DIR):
            self.read(word, cwd, ctx)
            return
        assert cwd is not None
        top = ctx.repo_root_for(cwd) if ctx.repo_root_for is not None else cwd
        self.read(word, top, ctx)

    def nested_shell(self, args: list[Word], cwd: str | None, ctx: _Ctx) -> None:
        """`bash -lc 'SCRIPT'` and the like: parse SCRIPT. `bash file.sh` runs a script
        we do not follow (like python)."""
        i = 0
        has_c = False
        while i < len(args):
            text = args[i].text
            if len(text) < 2 or text[0] not in "-+" or text == "--":
                break
            i += 1
            if text.startswith("--"):
                continue
            if "c" in text[1:]:
                has_c = True
            if text[-1] == "o" and i < len(args):  # -o option / -euo pipefail
                i += 1
        if not has_c or i >= len(args) or ctx.depth >= _MAX_DEPTH:
            return
        child = ctx.child()
        child.cwd = cwd
        self.walk(_lex(args[i].text, ctx.home, ctx.depth + 1), child)

    def apply_patch(self, text: str, cwd: str | None, ctx: _Ctx) -> None:
        ctx.effects.patches.append(text)
        for entry in parse_patch(text):
            self.write(Word(entry.path), entry.op, cwd, ctx)
            if entry.op == MOVE and entry.move_to:
                self.write(Word(entry.move_to), MOVE, cwd, ctx)

    def move_like(self, name: str, args: list[Word], cwd: str | None, ctx: _Ctx) -> None:
        opts, operands, _ = _scan(args, _MOVE_LIKE)
        target_dir = next(
            (v for o, v in opts if o in ("-t", "--target-directory") and v is not None), None
        )
        no_target_dir = _has(opts, frozenset({"-T", "--no-target-directory"}))
        dest_op = {"mv": OP_MOVE, "cp": OP_WRITE, "ln": OP_ADD}[name]
        destination: Word | None = None  # one destination, kept as written
        if target_dir is not None:
            sources = operands
        elif name == "ln" and len(operands) == 1:
            sources, target_dir = operands, Word(".")  # `ln -s /x/y` makes ./y
        elif len(operands) >= 2:
            sources = operands[:-1]
            if len(sources) == 1 or no_target_dir:
                # one source: the destination may be a file or a directory; keep as written
                destination = operands[-1]
            else:
                target_dir = operands[-1]
        else:
            return
        if name == "mv":
            for word in sources:
                self.write(word, OP_MOVE, cwd, ctx)
        if destination is not None:
            self.write(destination, dest_op, cwd, ctx)
        if target_dir is None:
            return
        for word in sources:
            if not word.plain or not target_dir.plain:
                continue
            base = posixpath.basename(word.text.rstrip("/"))
            if base:
                joined = Word(posixpath.join(target_dir.text, base))
                self.write(joined, dest_op, cwd, ctx)


def _drop_bsd_sed_suffix(args: list[Word]) -> list[Word]:
    """BSD sed takes the in-place suffix as a separate word: `sed -i '' 's/a/b/' f`."""
    out: list[Word] = []
    skip = False
    for k, word in enumerate(args):
        if skip:
            skip = False
            continue
        out.append(word)
        if word.text == "-i" and k + 1 < len(args):
            nxt = args[k + 1].text
            if nxt == "" or re.fullmatch(r"\.[A-Za-z0-9_~-]+", nxt):
                skip = True
    return out


def _command_name(text: str) -> str:
    name = text.replace("\\", "/").rsplit("/", 1)[-1]
    lower = name.lower()
    return name[:-4] if lower.endswith(".exe") else name


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------


def parse_command(
    script: str,
    cwd: str | None = None,
    home: str | None = None,
    repo_root_for: Callable[[str], str] | None = None,
) -> ShellEffects:
    """The files a shell script reads and writes, as far as its text shows.

    ``cwd``: where the script starts (relative operands are joined to it; kept relative
    when None). ``home``: expands ``~``, ``$HOME`` and ``${HOME}`` (left unexpanded, so
    not a path, when None). ``repo_root_for``: the repository top for a directory,
    used for ``git show REV:path``. Never raises on any text."""
    effects = ShellEffects()
    if not isinstance(script, str) or not script:
        return effects
    ctx = _Ctx(cwd or None, home or None, repo_root_for, effects, 0)
    _Analyzer().walk(_lex(script, ctx.home), ctx)
    return effects


def shell_script_of_argv(argv: list[str]) -> str | None:
    """SCRIPT when argv is a POSIX shell running ``-c SCRIPT`` (``bash -lc``,
    ``sh -c``, ``/bin/zsh -c``, ``bash -euo pipefail -c``...), else None."""
    if not argv or _command_name(argv[0]) not in SHELLS:
        return None
    i = 1
    while i < len(argv):
        text = argv[i]
        if len(text) < 2 or text[0] not in "-+" or text == "--":
            return None
        i += 1
        if text.startswith("--"):
            continue
        if "c" in text[1:]:
            return argv[i] if i < len(argv) else None
        if text[-1] == "o":
            i += 1
    return None


def argv_to_script(argv: list[str]) -> str:
    """The command line an argv array stands for: the script of a ``bash -lc SCRIPT``
    (sh/zsh/dash ``-c``) form, otherwise the words joined with POSIX quoting."""
    script = shell_script_of_argv(argv)
    if script is not None:
        return script
    return shlex.join(argv)


def is_foreign_shell(argv0: str) -> bool:
    """PowerShell or cmd.exe: their command lines are not POSIX shell."""
    return _command_name(argv0).lower() in FOREIGN_SHELLS
