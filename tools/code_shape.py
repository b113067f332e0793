"""The largest modules and longest functions of the package: the figures quoted when a
refactor says it made things smaller. Usage: python tools/code_shape.py [PACKAGE_DIR]"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def shape(root: Path, top: int = 12) -> str:
    modules: list[tuple[int, str]] = []
    functions: list[tuple[int, str]] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        modules.append((len(text.splitlines()), str(path)))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                functions.append((length, f"{path}:{node.lineno} {node.name}"))
    lines = [f"modules: {len(modules)}, functions: {len(functions)}", "largest modules (lines):"]
    lines += [f"  {n:5d}  {name}" for n, name in sorted(modules, reverse=True)[:top]]
    lines.append("longest functions (lines):")
    lines += [f"  {n:5d}  {name}" for n, name in sorted(functions, reverse=True)[:top]]
    return "\n".join(lines)


if __name__ == "__main__":
    print(shape(Path(sys.argv[1] if len(sys.argv) > 1 else "agentsrc_daemon")))
