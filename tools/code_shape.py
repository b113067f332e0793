"""The largest modules, classes and longest functions of the package: the figures quoted
when a refactor says it made things smaller. Usage: python tools/code_shape.py [PACKAGE_DIR]

A class's size is its lines, its methods and its attributes (names assigned on ``self``
anywhere in its methods, and annotated names in its body). Last, the functions over
LONG lines and modules over LONG_MODULE lines that give no reason: "long on purpose" in
their docstring (a module's covers its functions), as docs/architecture.md asks."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

LONG = 60  # lines of a function, past which its docstring says why
LONG_MODULE = 600
REASON = "long on purpose"


def _says_why(node: ast.AST) -> bool:
    doc = ast.get_docstring(node) if isinstance(
        node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) else None
    return doc is not None and REASON in " ".join(doc.lower().split())


def _attributes(node: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
    for sub in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(sub, ast.Assign):
            targets = list(sub.targets)
        elif isinstance(sub, ast.AnnAssign | ast.AugAssign):
            targets = [sub.target]
        for t in targets:
            for el in ast.walk(t):
                if (isinstance(el, ast.Attribute) and isinstance(el.value, ast.Name)
                        and el.value.id == "self"):
                    names.add(el.attr)
    return names


def shape(root: Path, top: int = 12) -> str:
    modules: list[tuple[int, str]] = []
    classes: list[tuple[int, str]] = []
    functions: list[tuple[int, str]] = []
    unexplained: list[tuple[int, str]] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        modules.append((len(text.splitlines()), str(path)))
        module_says_why = _says_why(tree)
        if len(text.splitlines()) > LONG_MODULE and not module_says_why:
            unexplained.append((len(text.splitlines()), f"{path} (module)"))
        for node in ast.walk(tree):
            length = (getattr(node, "end_lineno", 0) or 0) - getattr(node, "lineno", 0) + 1
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions.append((length, f"{path}:{node.lineno} {node.name}"))
                if length > LONG and not (module_says_why or _says_why(node)):
                    unexplained.append((length, f"{path}:{node.lineno} {node.name}"))
            elif isinstance(node, ast.ClassDef):
                methods = sum(isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef)
                              for b in node.body)
                classes.append((length, f"{path}:{node.lineno} {node.name}"
                                        f" ({methods} methods, {len(_attributes(node))} attributes)"))
    lines = [f"modules: {len(modules)}, classes: {len(classes)}, functions: {len(functions)}",
             "largest modules (lines):"]
    lines += [f"  {n:5d}  {name}" for n, name in sorted(modules, reverse=True)[:top]]
    lines.append("largest classes (lines):")
    lines += [f"  {n:5d}  {name}" for n, name in sorted(classes, reverse=True)[:top]]
    lines.append("longest functions (lines):")
    lines += [f"  {n:5d}  {name}" for n, name in sorted(functions, reverse=True)[:top]]
    lines.append(f"over {LONG} lines (modules over {LONG_MODULE}) without a reason: {len(unexplained)}")
    lines += [f"  {n:5d}  {name}" for n, name in sorted(unexplained, reverse=True)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(shape(Path(sys.argv[1] if len(sys.argv) > 1 else "agentsrc_daemon")))
