"""The shell parser: a table of scripts with the exact files they read and write, plus
properties (never raises, deterministic, quoting round-trips)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.derive.projects import resolve_path
from agentsrc_daemon.derive.shellparse import argv_to_script, parse_command, shell_script_of_argv

HOME = "/home/u"
W = "/w"


def _repo_root(cwd: str) -> str:
    # a fake repository layout: everything under /repo is one repo, /w is another
    return "/repo" if cwd.startswith("/repo") else W


# (id, script, cwd, expected reads, expected writes as (path, op))
CASES: list[tuple[str, str, str | None, list[str], list[tuple[str, str]]]] = [
    # --- tokenizer: words and quoting -------------------------------------------------
    ("plain", "cat a.txt", W, ["/w/a.txt"], []),
    ("single-quoted-space", "cat 'my file.txt'", W, ["/w/my file.txt"], []),
    ("double-quoted-separators", 'cat "dir x/f;x|y&z(1).txt"', W, ["/w/dir x/f;x|y&z(1).txt"], []),
    ("backslash-space", "cat a\\ b.txt", W, ["/w/a b.txt"], []),
    ("escaped-dquote", 'cat "a\\"b.txt"', W, ['/w/a"b.txt'], []),
    ("squote-concat", "cat 'it'\\''s.txt'", W, ["/w/it's.txt"], []),
    ("ansi-c", "cat $'tab\\tname'", W, ["/w/tab\tname"], []),
    ("dquote-backslash-literal", 'cat "C:\\Users\\a.txt"', W, ["C:\\Users\\a.txt"], []),
    ("line-continuation", "cat a.txt \\\n  b.txt", W, ["/w/a.txt", "/w/b.txt"], []),
    ("continuation-in-dquote", 'cat "lo\\\nng.txt"', W, ["/w/long.txt"], []),
    ("separators", "cat a && cat b || cat c; cat d & cat e | cat f",
     W, ["/w/a", "/w/b", "/w/c", "/w/d", "/w/e", "/w/f"], []),
    ("newlines", "cat a\n\ncat b\n", W, ["/w/a", "/w/b"], []),
    ("no-spaces-around-ops", "cat a&&cat b;cat c|cat d", W, ["/w/a", "/w/b", "/w/c", "/w/d"], []),
    ("subshell", "(cat a; cat b)", W, ["/w/a", "/w/b"], []),
    ("dollar-paren", "echo $(cat inner.txt)", W, ["/w/inner.txt"], []),
    ("backticks", "echo `cat tick.txt`", W, ["/w/tick.txt"], []),
    ("subst-in-dquotes", 'echo "n=$(head -n1 q.txt)"', W, ["/w/q.txt"], []),
    ("nested-subst", "echo $(echo $(cat deep.txt))", W, ["/w/deep.txt"], []),
    ("subst-word-not-a-path", 'cat "$(git rev-parse --show-toplevel)/x" y', W, ["/w/y"], []),
    ("arithmetic-not-command", "echo $((1 + 2)) && cat a", W, ["/w/a"], []),
    ("comment", "cat a # cat b", W, ["/w/a"], []),
    ("hash-inside-word", "cat a#b", W, ["/w/a#b"], []),
    ("process-substitution", "diff <(sort a.txt) <(sort b.txt)", W, ["/w/a.txt", "/w/b.txt"], []),
    ("crlf", "cat a\r\ncat b\r\n", W, ["/w/a", "/w/b"], []),
    # --- heredocs -----------------------------------------------------------------------
    ("heredoc-with-cat-inside", "cat <<EOF\ncat secret.txt\nEOF\ncat after.txt",
     W, ["/w/after.txt"], []),
    ("heredoc-dash-tabs", "cat <<-END\n\tcat x\n\tEND\ncat y", W, ["/w/y"], []),
    ("heredoc-quoted-tag-to-file", "cat <<'EOF' > out.txt\n$(cat nope)\nEOF",
     W, [], [("/w/out.txt", "write")]),
    ("heredoc-dquoted-tag", 'cat <<"EOF"\ncat nope\nEOF\ncat z', W, ["/w/z"], []),
    ("two-heredocs", "cat <<A <<B\ncat x\nA\ncat y\nB\ncat z", W, ["/w/z"], []),
    ("heredoc-unterminated", "cat <<EOF\ncat nope\nrm x", W, [], []),
    ("heredoc-python", "python - <<'PY'\nopen('x').read()\nPY\nhead -n 2 r.txt",
     W, ["/w/r.txt"], []),
    ("heredoc-in-subst", "x=$(cat <<EOF\ncat nope\nEOF\n)\ncat y", W, ["/w/y"], []),
    ("here-string", "grep foo <<< 'cat x'", W, [], []),
    # --- redirections -------------------------------------------------------------------
    ("redirect-in", "sort < in.txt", W, ["/w/in.txt"], []),
    ("redirect-out", "echo hi > out.txt", W, [], [("/w/out.txt", "write")]),
    ("redirect-append", "echo hi >> log.txt", W, [], [("/w/log.txt", "update")]),
    ("stderr-to-stdout", "make 2>&1 | tee build.log", W, [], [("/w/build.log", "write")]),
    ("devnull", "cmd >/dev/null 2>&1", W, [], []),
    ("amp-devnull", "cmd &> /dev/null", W, [], []),
    ("amp-file", "cmd &> all.log", W, [], [("/w/all.log", "write")]),
    ("fd2-file", "cmd 2> err.log", W, [], [("/w/err.log", "write")]),
    ("to-stderr", "cat a.txt >&2", W, ["/w/a.txt"], []),
    ("clobber", "cmd >| forced.txt", W, [], [("/w/forced.txt", "write")]),
    ("done-redirect", "while read l; do echo $l; done < list.txt", W, ["/w/list.txt"], []),
    ("tight-redirects", "cat<in.txt>out.txt", W, ["/w/in.txt"], [("/w/out.txt", "write")]),
    ("redirect-only", ": > empty.txt", W, [], [("/w/empty.txt", "write")]),
    ("group-redirect", "{ cat a; cat b; } > both", W, ["/w/a", "/w/b"], [("/w/both", "write")]),
    # --- prefixes -----------------------------------------------------------------------
    ("assignments", "FOO=1 BAR='x y' cat a", W, ["/w/a"], []),
    ("sudo", "sudo cat /etc/hosts", W, ["/etc/hosts"], []),
    ("sudo-opts", "sudo -u root -E cat /etc/shadow", W, ["/etc/shadow"], []),
    ("sudo-list", "sudo -l", W, [], []),
    ("doas", "doas cat /etc/doas.conf", W, ["/etc/doas.conf"], []),
    ("env-assign", "env -i PATH=/bin cat a", W, ["/w/a"], []),
    ("env-chdir", "env -C /tmp cat a", W, ["/tmp/a"], []),
    ("time", "time cat a", W, ["/w/a"], []),
    ("nice", "nice -n 10 cat a", W, ["/w/a"], []),
    ("ionice", "ionice -c2 -n7 cat a", W, ["/w/a"], []),
    ("nohup", "nohup cat a", W, ["/w/a"], []),
    ("stdbuf", "stdbuf -oL tail -f app.log", W, ["/w/app.log"], []),
    ("timeout", "timeout 5s head -n 3 a", W, ["/w/a"], []),
    ("timeout-opts", "timeout -s KILL 10 cat a", W, ["/w/a"], []),
    ("command", "command cat a", W, ["/w/a"], []),
    ("command-v", "command -v cat", W, [], []),
    ("exec", "exec cat a", W, ["/w/a"], []),
    ("builtin-source", "builtin source ~/.bashrc", W, ["/home/u/.bashrc"], []),
    ("stacked-wrappers", "sudo timeout 10 env X=1 nice cat a", W, ["/w/a"], []),
    ("keywords", "if [ -f a ]; then cat a; else cat b; fi", W, ["/w/a", "/w/b"], []),
    ("for-loop-var", 'for f in a b; do cat "$f"; done', W, [], []),
    ("while-true", "while true; do cat a; done", W, ["/w/a"], []),
    ("case", "case $x in a) cat a;; esac", W, ["/w/a"], []),
    ("dbracket", "[[ -f a ]] && cat a", W, ["/w/a"], []),
    ("bang", "! grep -q x f", W, [], []),
    # --- cd and home --------------------------------------------------------------------
    ("cd-and", "cd sub && cat b", W, ["/w/sub/b"], []),
    ("cd-abs", "cd /abs; cat b", W, ["/abs/b"], []),
    ("cd-up", "cd .. && cat b", W, ["/b"], []),
    ("cd-in-subshell", "(cd sub && cat a); cat b", W, ["/w/sub/a", "/w/b"], []),
    ("cd-dash", "cd sub && cat a\ncd - && cat b", W, ["/w/sub/a", "/w/b"], []),
    ("cd-unknown", "cd $DIR && cat a; cat /x/y", W, ["/x/y"], []),
    ("cd-home", "cd && cat .profile", W, ["/home/u/.profile"], []),
    ("cd-in-subst-no-leak", "echo $(cd sub; cat a); cat b", W, ["/w/sub/a", "/w/b"], []),
    ("pushd-popd", "pushd sub && cat a && popd && cat b", W, ["/w/sub/a", "/w/b"], []),
    ("tilde", "cat ~/notes.txt ~", W, ["/home/u/notes.txt", "/home/u"], []),
    ("home-vars", "cat $HOME/a ${HOME}/b \"$HOME/c d\"",
     W, ["/home/u/a", "/home/u/b", "/home/u/c d"], []),
    ("tilde-user", "cat ~other/a", W, [], []),
    ("tilde-quoted-literal", "cat '~/x'", W, ["/w/~/x"], []),
    ("normalised", "cat ./a/../b.txt //etc/x", W, ["/w/b.txt", "//etc/x"], []),
    ("no-cwd-relative", "cat a/b.txt; cd sub && cat c", None, ["a/b.txt", "sub/c"], []),
    ("windows-cwd", "cat src/app.ts", "C:\\proj", ["C:\\proj\\src\\app.ts"], []),
    ("windows-abs", 'rm "c:\\code\\x.tsx"', W, [], [("c:\\code\\x.tsx", "delete")]),
    # --- readers taking every operand ---------------------------------------------------
    ("tac", "tac f", W, ["/w/f"], []),
    ("head-n", "head -n 20 f g", W, ["/w/f", "/w/g"], []),
    ("head-num", "head -20 f", W, ["/w/f"], []),
    ("tail-plus", "tail -n +5 f", W, ["/w/f"], []),
    ("tail-follow", "tail -f -n 100 app.log", W, ["/w/app.log"], []),
    ("less-plus", "less +F f", W, ["/w/f"], []),
    ("more", "more f", W, ["/w/f"], []),
    ("nl", "nl -ba f", W, ["/w/f"], []),
    ("strings", "strings -n 8 bin", W, ["/w/bin"], []),
    ("xxd", "xxd -l 64 bin", W, ["/w/bin"], []),
    ("xxd-out", "xxd in.bin out.hex", W, ["/w/in.bin"], [("/w/out.hex", "write")]),
    ("hexdump", "hexdump -C f", W, ["/w/f"], []),
    ("od", "od -An -tx1 f", W, ["/w/f"], []),
    ("base64", "base64 -w0 f", W, ["/w/f"], []),
    ("bat", "bat -l py f.py", W, ["/w/f.py"], []),
    ("batcat", "batcat --style=plain f", W, ["/w/f"], []),
    ("diff", "diff -u a b", W, ["/w/a", "/w/b"], []),
    ("diff-context", "diff -U 3 a b", W, ["/w/a", "/w/b"], []),
    ("cmp", "cmp a b", W, ["/w/a", "/w/b"], []),
    ("comm", "comm -12 a b", W, ["/w/a", "/w/b"], []),
    ("paste", "paste -d, a b", W, ["/w/a", "/w/b"], []),
    ("join", "join -t , a b", W, ["/w/a", "/w/b"], []),
    ("cut", "cut -d: -f1 /etc/passwd", W, ["/etc/passwd"], []),
    ("cut-spaced", "cut -d ' ' -f 2 f", W, ["/w/f"], []),
    ("sort-key", "sort -k 2 -t , f", W, ["/w/f"], []),
    ("sort-output", "sort -o sorted.txt f", W, ["/w/f"], [("/w/sorted.txt", "write")]),
    ("uniq", "uniq -c f", W, ["/w/f"], []),
    ("column", "column -t -s, f.csv", W, ["/w/f.csv"], []),
    ("fold", "fold -w 80 f", W, ["/w/f"], []),
    ("rev", "rev f", W, ["/w/f"], []),
    ("shuf", "shuf -n 5 f", W, ["/w/f"], []),
    ("shuf-echo", "shuf -e a b", W, [], []),
    ("expand", "expand -t 4 f", W, ["/w/f"], []),
    ("unexpand", "unexpand f", W, ["/w/f"], []),
    ("wc", "wc -l a b", W, ["/w/a", "/w/b"], []),
    ("source", "source env.sh arg1", W, ["/w/env.sh"], []),
    ("dot", ". ./env.sh", W, ["/w/env.sh"], []),
    ("abs-command-path", "/usr/bin/cat a", W, ["/w/a"], []),
    # --- script or pattern first ----------------------------------------------------------
    ("sed-n", "sed -n 1,5p f", W, ["/w/f"], []),
    ("sed-n-quoted", "sed -n '1,200p' src/a.py", W, ["/w/src/a.py"], []),
    ("sed-e-twice", "sed -e 's/a/b/' -e 's/c/d/' f", W, ["/w/f"], []),
    ("sed-f", "sed -f script.sed f", W, ["/w/script.sed", "/w/f"], []),
    ("sed-expression-eq", "sed --expression=s/a/b/ f", W, ["/w/f"], []),
    ("sed-i", "sed -i 's/a/b/' f g", W, [], [("/w/f", "update"), ("/w/g", "update")]),
    ("sed-i-suffix", "sed -i.bak 's/a/b/' f", W, [], [("/w/f", "update")]),
    ("sed-ie-gnu-suffix", "sed -ie 's/a/b/' f", W, [], [("/w/f", "update")]),
    ("sed-in-place", "sed --in-place -e 's/a/b/' f", W, [], [("/w/f", "update")]),
    ("sed-i-bsd", "sed -i '' 's/a/b/' f", W, [], [("/w/f", "update")]),
    ("sed-ni", "sed -ni 's/a/b/p' f", W, [], [("/w/f", "update")]),
    ("awk", "awk '{print $1}' f", W, ["/w/f"], []),
    ("awk-F", "awk -F: '{print $1}' /etc/passwd", W, ["/etc/passwd"], []),
    ("awk-f", "awk -f prog.awk data", W, ["/w/prog.awk", "/w/data"], []),
    ("awk-v-and-operand-assign", "awk -v n=1 '{print}' m=2 f", W, ["/w/f"], []),
    ("gawk", "gawk 'NR<3' f", W, ["/w/f"], []),
    ("mawk", "mawk 1 f", W, ["/w/f"], []),
    ("grep", "grep foo f", W, ["/w/f"], []),
    ("grep-e", "grep -e pat file", W, ["/w/file"], []),
    ("grep-e-twice", "grep -e foo -e bar f1 f2", W, ["/w/f1", "/w/f2"], []),
    ("grep-f", "grep -f pats.txt f", W, ["/w/pats.txt", "/w/f"], []),
    ("grep-rn", "grep -rn foo src", W, ["/w/src"], []),
    ("grep-A", "grep -A 3 foo f", W, ["/w/f"], []),
    ("grep-C-attached", "grep -C2 foo f", W, ["/w/f"], []),
    ("grep-m", "grep -m 1 foo f", W, ["/w/f"], []),
    ("grep-l", "grep -l foo a b", W, [], []),
    ("grep-c", "grep -c foo f", W, [], []),
    ("grep-q", "grep -q foo f", W, [], []),
    ("egrep", "egrep 'a|b' f", W, ["/w/f"], []),
    ("fgrep", "fgrep x f", W, ["/w/f"], []),
    ("grep-include", "grep --include '*.py' -r foo src", W, ["/w/src"], []),
    ("grep-dashdash-pattern", "grep -- -v f", W, ["/w/f"], []),
    ("grep-pattern-with-space", 'grep -n "def main" a.py', W, ["/w/a.py"], []),
    ("rg", "rg foo src", W, ["/w/src"], []),
    ("rg-glob", "rg -n -g '*.py' foo src", W, ["/w/src"], []),
    ("rg-type-no-path", "rg -t py foo", W, [], []),
    ("rg-e", "rg -e foo -e bar a", W, ["/w/a"], []),
    ("rg-files", "rg --files src", W, [], []),
    ("rg-l", "rg -l foo .", W, [], []),
    ("rg-context", "rg -C 3 foo a", W, ["/w/a"], []),
    ("ag", "ag foo src", W, ["/w/src"], []),
    ("ack", "ack foo src", W, ["/w/src"], []),
    ("ugrep", "ugrep foo f", W, ["/w/f"], []),
    ("git-grep-dashdash", "git grep foo -- src", W, ["/w/src"], []),
    ("git-grep-rev", "git grep -n foo HEAD", W, [], []),
    ("git-grep-e", "git grep -e foo src", W, ["/w/src"], []),
    ("jq", "jq . f.json", W, ["/w/f.json"], []),
    ("jq-r", "jq -r '.a' f.json", W, ["/w/f.json"], []),
    ("jq-arg", "jq --arg x 1 '.a' f.json", W, ["/w/f.json"], []),
    ("jq-f", "jq -f filter.jq f.json", W, ["/w/filter.jq", "/w/f.json"], []),
    ("jq-args", "jq -n '$ARGS' --args a b", W, [], []),
    ("git-show-path", "git show HEAD:src/a.py", W, ["/w/src/a.py"], []),
    ("git-show-from-subdir", "cd /repo/sub && git show HEAD:a.py", W, ["/repo/a.py"], []),
    ("git-show-dot-relative", "cd /repo/sub && git show HEAD~1:./b.py", W, ["/repo/sub/b.py"], []),
    ("git-C-show", "git -C /repo show main:README.md", W, ["/repo/README.md"], []),
    ("git-no-pager", "git --no-pager show abc1234:x", W, ["/w/x"], []),
    ("git-cat-file", "git cat-file -p HEAD:a.txt", W, ["/w/a.txt"], []),
    ("git-cat-file-t", "git cat-file -t HEAD:a.txt", W, [], []),
    ("git-show-commit", "git show HEAD --stat", W, [], []),
    # --- not paths --------------------------------------------------------------------
    ("glob-star", "cat *.py", W, [], []),
    ("glob-question", "cat a?.txt", W, [], []),
    ("glob-bracket", "cat [ab].txt", W, [], []),
    ("brace-expansion", "cat {a,b}.txt", W, [], []),
    ("var", "cat $FILE ${OTHER} \"$X/y\"", W, [], []),
    ("positional-var", "cat $1", W, [], []),
    ("stdin-dash", "cat - < x", W, ["/w/x"], []),
    ("options-only", "cat -n a", W, ["/w/a"], []),
    ("dashdash-operand", "cat -- -weird", W, ["/w/-weird"], []),
    ("devnull-read", "cat /dev/null", W, [], []),
    ("url", "cat http://example.com/x", W, [], []),
    ("escaped-glob-is-literal", "cat a\\*b", W, ["/w/a*b"], []),
    ("quoted-glob-is-literal", "cat 'a*b'", W, ["/w/a*b"], []),
    # --- not readers ------------------------------------------------------------------
    ("ls", "ls -la src", W, [], []),
    ("find-exec", "find . -name '*.py' -exec cat {} \\;", W, [], []),
    ("xargs", "xargs cat < list.txt", W, ["/w/list.txt"], []),
    ("ssh", "ssh host cat /etc/passwd", W, [], []),
    ("docker", "docker run img cat /x", W, [], []),
    ("python", "python script.py data.txt", W, [], []),
    ("node", "node app.js", W, [], []),
    ("make", "make -C sub all", W, [], []),
    ("var-command", "$EDITOR f", W, [], []),
    # --- writes -------------------------------------------------------------------------
    ("tee", "echo x | tee out.txt", W, [], [("/w/out.txt", "write")]),
    ("tee-a", "tee -a log.txt < in", W, ["/w/in"], [("/w/log.txt", "update")]),
    ("touch", "touch new.txt", W, [], [("/w/new.txt", "add")]),
    ("touch-d", "touch -d yesterday f", W, [], [("/w/f", "add")]),
    ("mv", "mv a b", W, [], [("/w/a", "move"), ("/w/b", "move")]),
    ("mv-into-dir", "mv a b dir",
     W, [], [("/w/a", "move"), ("/w/b", "move"), ("/w/dir/a", "move"), ("/w/dir/b", "move")]),
    ("mv-t", "mv -t dir a", W, [], [("/w/a", "move"), ("/w/dir/a", "move")]),
    ("cp", "cp a b", W, [], [("/w/b", "write")]),
    ("cp-r", "cp -r src dst", W, [], [("/w/dst", "write")]),
    ("cp-into-dir", "cp a b dir/", W, [], [("/w/dir/a", "write"), ("/w/dir/b", "write")]),
    ("rm", "rm -rf build dist", W, [], [("/w/build", "delete"), ("/w/dist", "delete")]),
    ("rmdir", "rmdir d", W, [], [("/w/d", "delete")]),
    ("mkdir", "mkdir -p a/b", W, [], [("/w/a/b", "add")]),
    ("mkdir-mode", "mkdir -m 700 priv", W, [], [("/w/priv", "add")]),
    ("ln", "ln -s target link", W, [], [("/w/link", "add")]),
    ("ln-one-operand", "ln -sf /x/y", W, [], [("/w/y", "add")]),
    ("cat-heredoc-to-file", "cat > out.txt <<EOF\nx\nEOF", W, [], [("/w/out.txt", "write")]),
    ("if-grep-sed", "if grep -q foo f; then sed -i 's/a/b/' f; fi", W, [], [("/w/f", "update")]),
    # --- apply_patch ----------------------------------------------------------------------
    ("patch-heredoc",
     "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n"
     "*** End Patch\nPATCH\n",
     W, [], [("/w/a.py", "update")]),
    ("patch-heredoc-spaced-tag-after-cd",
     "cd sub && apply_patch << 'EOF'\n*** Begin Patch\n*** Add File: n.txt\n+cat x\n"
     "*** End Patch\nEOF",
     W, [], [("/w/sub/n.txt", "add")]),
    ("patch-move-delete",
     "apply_patch <<EOF\n*** Begin Patch\n*** Update File: old.py\n*** Move to: new.py\n@@\n"
     "-a\n+b\n*** Delete File: gone.py\n*** End Patch\nEOF",
     W, [], [("/w/old.py", "move"), ("/w/new.py", "move"), ("/w/gone.py", "delete")]),
    ("patch-heredoc-unterminated",
     "apply_patch << 'PATCH'\n*** Begin Patch\n*** Add File: /abs/z.md\n+hi\n*** End Patch",
     W, [], [("/abs/z.md", "add")]),
    ("patch-argument",
     "apply_patch '*** Begin Patch\n*** Delete File: old.txt\n*** End Patch'",
     W, [], [("/w/old.txt", "delete")]),
    ("patch-text-in-other-heredoc-ignored",
     "cat > p.diff <<'EOF'\n*** Begin Patch\n*** Add File: no.txt\n*** End Patch\nEOF",
     W, [], [("/w/p.diff", "write")]),
    # --- nested shells ----------------------------------------------------------------
    ("bash-lc", "bash -lc 'cat a'", W, ["/w/a"], []),
    ("sh-c-dquoted", 'sh -c "cat b"', W, ["/w/b"], []),
    ("zsh-c-cd", "zsh -c 'cd sub && cat c'", W, ["/w/sub/c"], []),
    ("dash-c", "dash -c 'cat d'", W, ["/w/d"], []),
    ("bash-pipefail-c", "bash -euo pipefail -c 'cat e'", W, ["/w/e"], []),
    ("bash-script", "bash script.sh", W, [], []),
    ("bash-c-cd-no-leak", "bash -lc 'cd x' && cat y", W, ["/w/y"], []),
    ("sudo-bash-heredoc",
     "sudo /bin/bash -c 'cat <<\"EOF\" > /etc/x.conf\ncat nope\nEOF'",
     W, [], [("/etc/x.conf", "write")]),
    # --- PowerShell and cmd: nothing rather than garbage --------------------------------
    ("ps-get-content", 'Get-Content -Path "src\\app.ts" -TotalCount 50', W, [], []),
    ("pwsh-command", 'pwsh -NoProfile -Command "Get-Content README.md"', W, [], []),
    ("ps-select-string", "Select-String -Path *.ts -Pattern foo", W, [], []),
    ("ps-pipeline", "Get-ChildItem -Recurse | Select-Object -First 5", W, [], []),
    ("ps-set-content", "Set-Content -Path out.txt -Value hi", W, [], []),
    ("ps-env-var", "$env:FOO='bar'; Get-Content $env:FOO", W, [], []),
    ("powershell-exe", 'powershell.exe -Command "cat x"', W, [], []),
    ("cmd-type", "cmd /c type file.txt", W, [], []),
    ("ps-remove-item", "Remove-Item -Recurse -Force build 2>$null", W, [], []),
]


def test_table_is_large_and_ids_unique() -> None:
    ids = [case[0] for case in CASES]
    assert len(ids) >= 100
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize(
    ("script", "cwd", "reads", "writes"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_parse_command(
    script: str, cwd: str | None, reads: list[str], writes: list[tuple[str, str]]
) -> None:
    effects = parse_command(script, cwd, HOME, _repo_root)
    assert effects.reads == reads
    assert effects.writes == writes


def test_home_unknown_leaves_tilde_unexpanded() -> None:
    effects = parse_command("cat ~/a $HOME/b c", W, None)
    assert effects.reads == ["/w/c"]


def test_patches_are_collected() -> None:
    script = "apply_patch <<'P'\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nP\ncat b"
    effects = parse_command(script, W, HOME)
    assert effects.patches == ["*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"]
    assert effects.reads == ["/w/b"]


def test_duplicates_collapse() -> None:
    effects = parse_command("cat a a; head a; echo > o; echo > o", W, HOME)
    assert effects.reads == ["/w/a"]
    assert effects.writes == [("/w/o", "write")]


def test_deep_nesting_is_bounded() -> None:
    script = "echo " + "$(" * 200 + "cat x" + ")" * 200 + "; cat y"
    effects = parse_command(script, W, HOME)
    assert effects.reads == ["/w/y"]


# --- argv_to_script ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "script"),
    [
        (["bash", "-lc", "cat a && ls"], "cat a && ls"),
        (["/bin/bash", "-c", "x"], "x"),
        (["sh", "-c", "y", "arg0"], "y"),
        (["zsh", "-lc", "z"], "z"),
        (["dash", "-c", "d"], "d"),
        (["bash", "-euo", "pipefail", "-c", "p"], "p"),
        (["bash", "script.sh"], "bash script.sh"),
        (["cat", "a b.txt"], "cat 'a b.txt'"),
        (["apply_patch", "*** Begin Patch\n"], "apply_patch '*** Begin Patch\n'"),
        (["pwsh", "-NoProfile", "-Command", "Get-Content a"],
         "pwsh -NoProfile -Command 'Get-Content a'"),
    ],
)
def test_argv_to_script(argv: list[str], script: str) -> None:
    assert argv_to_script(argv) == script


def test_shell_script_of_argv_without_c_is_none() -> None:
    assert shell_script_of_argv(["bash", "-l"]) is None
    assert shell_script_of_argv(["python", "-c", "x"]) is None
    assert shell_script_of_argv([]) is None


# --- properties ----------------------------------------------------------------------

# Fragments rich in shell syntax, so random scripts hit quoting, heredocs and nesting.
_SHELLISH = st.lists(
    st.sampled_from(
        list("ab/.-_ $`'\"\\()<>|&;\n\t#~*?[]{}=!:0123")
        + ["EOF", "<<", "<<-", "$(", "${", "cat ", "cd ", "sed -i ", "apply_patch ", "bash -c "]
    ),
    max_size=60,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), _SHELLISH))
def test_never_raises_and_is_deterministic(script: str) -> None:
    first = parse_command(script, W, HOME, _repo_root)
    second = parse_command(script, W, HOME, _repo_root)
    assert first == second
    assert all(isinstance(p, str) and p for p in first.reads)
    assert all(op in ("add", "update", "delete", "move", "write") for _, op in first.writes)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=4))
def test_quoted_argv_round_trips(names: list[str]) -> None:
    """Whatever a file is called, `cat <shell-quoted name>` reads exactly that name."""
    usable = [
        n for n in names
        if not n.startswith("-") and "\n" not in n and "\0" not in n and "://" not in n
    ]
    effects = parse_command(shlex.join(["cat", "--", *usable]), W, HOME)
    expected: list[str] = []
    for name in usable:
        path = resolve_path(name, W)
        if path not in expected and not (path == "/dev" or path.startswith("/dev/")):
            expected.append(path)
    assert effects.reads == expected
