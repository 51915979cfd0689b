"""Modules that do one job: no module in bot/ or handlers/ over 500 lines, and no function
or method over 60 lines unless its docstring says why ("Long because ...").

The test reads the source with ``ast`` only; nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "handlers")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
REASON_MARKER = "Long because"

# Known exceptions, each with its reason beside it (none today). Entries are "path" (the
# whole module) or "path::qualified.name" (one function).
KNOWN_EXCEPTIONS: frozenset[str] = frozenset()


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def _excepted(rel: str, qualname: str | None = None) -> bool:
    if rel in KNOWN_EXCEPTIONS:
        return True
    return qualname is not None and f"{rel}::{qualname}" in KNOWN_EXCEPTIONS


def _functions(
    node: ast.AST, prefix: str = ""
) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{child.name}"
            found.append((name, child))
            found.extend(_functions(child, f"{name}."))
        elif isinstance(child, ast.ClassDef):
            found.extend(_functions(child, f"{prefix}{child.name}."))
        else:
            found.extend(_functions(child, prefix))
    return found


def _length(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
    assert function.end_lineno is not None
    return function.end_lineno - first + 1


def long_modules() -> list[str]:
    problems = []
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text().splitlines())
        if lines > MAX_MODULE_LINES and not _excepted(rel):
            problems.append(f"{rel}: {lines} lines (limit {MAX_MODULE_LINES})")
    return problems


def long_functions() -> list[str]:
    problems = []
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(), filename=rel)
        for qualname, function in _functions(tree):
            length = _length(function)
            if length <= MAX_FUNCTION_LINES or _excepted(rel, qualname):
                continue
            if REASON_MARKER in (ast.get_docstring(function) or ""):
                continue
            problems.append(
                f"{rel}:{function.lineno} {qualname}: {length} lines "
                f"(limit {MAX_FUNCTION_LINES}, or say {REASON_MARKER!r} in its docstring)"
            )
    return problems


def test_no_module_over_the_limit() -> None:
    problems = long_modules()
    assert not problems, "modules to split by job:\n" + "\n".join(problems)


def test_no_long_function_without_a_reason() -> None:
    problems = long_functions()
    assert not problems, "functions to split into steps:\n" + "\n".join(problems)


def test_the_measure_counts_what_it_says() -> None:
    """The checks can fail: a made-up long function with and without a reason."""
    lines = [f"x{i} = {i}" for i in range(MAX_FUNCTION_LINES)]
    source = "\n".join(
        [
            "def f():",
            *(f"    {line}" for line in lines),
            "class C:",
            "    def g(self):",
            f'        """{REASON_MARKER} it is one straight sequence."""',
            *(f"        {line}" for line in lines),
        ]
    )
    functions = _functions(ast.parse(source))
    assert {name: _length(fn) for name, fn in functions} == {
        "f": MAX_FUNCTION_LINES + 1,
        "C.g": MAX_FUNCTION_LINES + 2,
    }
    reasons = {name: REASON_MARKER in (ast.get_docstring(fn) or "") for name, fn in functions}
    assert reasons == {"f": False, "C.g": True}


def test_known_exceptions_name_real_code() -> None:
    """An exception that no longer names a module or function is dropped from the list."""
    names = {p.relative_to(ROOT).as_posix(): p for p in _modules()}
    for entry in KNOWN_EXCEPTIONS:
        rel, _, qualname = entry.partition("::")
        assert rel in names, entry
        if qualname:
            tree = ast.parse(names[rel].read_text())
            assert qualname in {name for name, _ in _functions(tree)}, entry
