"""The package's shape holds: no import circles, and grading's trust zones import only what they may.

Read from the source (the imports as written, function-level and `TYPE_CHECKING` ones included), not
from `sys.modules`: an import that only happens on some path is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sandbox"
GRADING = "sandbox.grading"
ZONES = ("judge", "learner", "boundary", "programs")
MAY_NOT_IMPORT = {
    "judge": ("learner", "programs"),
    "learner": ("judge", "programs"),
    "boundary": ("judge", "learner", "programs"),
    "programs": ("learner",),
}
"""The judge and the learner's side meet only in the boundary; the boundary depends on neither."""
LINES = 400


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _at_import(tree: ast.Module) -> Iterator[ast.stmt]:
    """The statements a module runs when it is imported: not a function's, not `if TYPE_CHECKING:`'s."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, ast.If) and not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            pending += [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            pending += [*node.body, *node.orelse, *node.finalbody, *(s for h in node.handlers for s in h.body)]


def _imports(name: str, path: Path, *, at_import: bool = False) -> Iterator[tuple[str, int]]:
    """The package's modules that `name` imports, with the line of each import (`at_import`: only the imports
    made when it is imported)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in _at_import(tree) if at_import else ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:
                    yield f"{base}.{alias.name}", node.lineno
                elif base in MODULES:
                    yield base, node.lineno


GRAPH = {name: sorted(set(_imports(name, path))) for name, path in MODULES.items()}
AT_IMPORT = {name: sorted(set(_imports(name, path, at_import=True))) for name, path in MODULES.items()}


def _zone(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["sandbox", "grading"] and parts[2] in ZONES else None


def test_the_package_has_no_import_circles() -> None:
    """A module that imports its own importer works only in one import order: Tarjan's components over the
    imports modules make when imported (a deferred or type-only import is how a circle is broken)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for target, _ in AT_IMPORT[name]:
            if target == name or target == name.rpartition(".")[0] and MODULES[name].name != "__init__.py":
                continue  # a module naming its own package reads a sibling: not a circle of modules
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == name:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in sorted(AT_IMPORT):
        if name not in index:
            visit(name)
    assert not circles, "modules that import each other, directly or around a circle:\n" + "\n".join(
        " <-> ".join(circle) for circle in circles
    )


@pytest.mark.parametrize("zone", ZONES)
def test_grading_zones_import_only_what_they_may(zone: str) -> None:
    broken = [
        f"{name} line {line} imports {target}"
        for name, imports in GRAPH.items()
        if _zone(name) == zone
        for target, line in imports
        if _zone(target) in MAY_NOT_IMPORT[zone]
    ]
    assert not broken, f"grading.{zone} may not import {', '.join(MAY_NOT_IMPORT[zone])}:\n" + "\n".join(broken)


@pytest.mark.parametrize("zone", ZONES)
def test_each_grading_zone_says_what_it_may_touch(zone: str) -> None:
    docstring = ast.get_docstring(ast.parse(MODULES[f"{GRADING}.{zone}"].read_text(encoding="utf-8")))
    assert docstring and "import" in docstring, f"sandbox/grading/{zone}/__init__.py must say what it may import"


def test_grading_modules_stay_small() -> None:
    long = {
        str(path.relative_to(PACKAGE.parent)): lines
        for name, path in MODULES.items()
        if name.startswith(GRADING) and (lines := len(path.read_text(encoding="utf-8").splitlines())) > LINES
    }
    assert not long, f"modules over {LINES} lines (split them by concern): {long}"


def test_the_layout_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    """The checks above read imports the way the package writes them: relative, aliased, nested."""
    module = tmp_path / "_x.py"
    module.write_text(
        "from ..judge._verdicts import Verdicts\n"
        "def f():\n    from ...grading.learner import _worker\n    import sandbox.grading.boundary._protocol\n"
    )
    found = {target for target, _ in _imports("sandbox.grading.boundary._x", module)}
    assert found == {
        "sandbox.grading.judge._verdicts",
        "sandbox.grading.learner._worker",
        "sandbox.grading.boundary._protocol",
    }
