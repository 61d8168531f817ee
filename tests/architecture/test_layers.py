"""The package's shape, read from its source with ``ast``: layers run one way, no cycles.

- No import cycle among the modules of ``src/mcpx`` (a package's ``__init__`` counts as a
  module: importing ``mcpx.ops._x`` imports ``mcpx.ops`` first).
- No package imports one above it: ``cli → daemon → server → ops → questions → tasks →
  pool → client → transport``, with ``config``, ``events``, ``shapes``, ``wire`` and
  ``spec`` below whoever needs them (and ``spec`` below those four).
- No private name (``_x``) is imported from another module, except a package's own
  ``__init__`` re-exporting its private modules.
- No module over ``_MAX_LINES`` lines, except the tables that are data.
- An import inside a function names what it is for: only the CLI's lazily loaded commands
  and the daemon's entry points may do it (start-up time), never to dodge a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2] / "src" / "mcpx"

# Top to bottom: a package may import only packages after it in this order.
LAYERS: Final = (
    "cli",
    "daemon",
    "demo",
    "server",
    "ops",
    "exec",
    "questions",
    "tasks",
    "pool",
    "client",
    "oauth",
    "transport",
    "events",
    "config",
    "shapes",
    "wire",
    "spec",
)
_MAX_LINES: Final = 450
_DATA_TABLES: Final = frozenset({"spec/_matrix.py"})
# Imports deferred on purpose: a command's module is loaded only when it runs.
_LAZY: Final = frozenset({"cli", "daemon", "demo"})


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    names: tuple[str, ...]
    line: int
    in_function: bool


def _module_name(path: Path) -> str:
    parts = ["mcpx", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _edges(modules: dict[str, Path]) -> Iterator[Edge]:
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nested = {
            id(n)
            for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
            for n in ast.walk(fn)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Edge(name, alias.name, (), node.lineno, id(node) in nested)
            elif isinstance(node, ast.ImportFrom):
                target = _absolute(name, node, path.name == "__init__.py")
                names = tuple(a.name for a in node.names)
                # `from . import _x` needs the module, not the rest of the package.
                if not all(f"{target}.{n}" in modules for n in names):
                    yield Edge(name, target, names, node.lineno, id(node) in nested)
                for alias in node.names:  # `from pkg import _module` imports the module
                    if f"{target}.{alias.name}" in modules:
                        yield Edge(
                            name, f"{target}.{alias.name}", (), node.lineno, id(node) in nested
                        )


def _graph() -> tuple[dict[str, Path], list[Edge]]:
    modules = _modules()
    edges = [e for e in _edges(modules) if e.target in modules and e.target != e.source]
    return modules, edges


def _cycles(nodes: list[str], edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for e in edges:
        succ[e.source].append(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(succ[node]):
                work.append((node, i + 1))
                nxt = succ[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    # mcpx/__main__.py runs the CLI: it sits above every layer.
    return parts[1] if len(parts) > 1 and parts[1] != "__main__" else ""


def test_no_import_cycle() -> None:
    modules, edges = _graph()
    assert _cycles(sorted(modules), edges) == []


def test_no_package_imports_one_above_it() -> None:
    _, edges = _graph()
    upward = []
    for e in edges:
        source, target = _layer(e.source), _layer(e.target)
        if source == target or not source or not target:
            continue
        assert source in LAYERS and target in LAYERS, f"{e.source} or {e.target}: no layer"
        if LAYERS.index(target) < LAYERS.index(source):
            upward.append(f"{e.source}:{e.line} imports {e.target}")
    assert upward == []


def test_no_private_name_from_another_module() -> None:
    _, edges = _graph()
    private = [
        f"{e.source}:{e.line} imports {n} from {e.target}"
        for e in edges
        for n in e.names
        if n.startswith("_")
        and not n.startswith("__")
        # A package's __init__ re-exports its own private modules' names.
        and not e.target.startswith(e.source + ".")
    ]
    assert private == []


def test_imports_in_functions_only_for_lazy_commands() -> None:
    _, edges = _graph()
    deferred = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges
        if e.in_function and _layer(e.source) not in _LAZY
    ]
    assert deferred == []


def test_no_module_over_the_limit() -> None:
    long = {}
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > _MAX_LINES and relative not in _DATA_TABLES:
            long[relative] = lines
    assert long == {}


def test_the_cycle_finder_finds_a_cycle() -> None:
    # The checks above pass on an empty answer: this one shows the finder can say no.
    edges = [
        Edge("a", "b", (), 1, False),
        Edge("b", "c", (), 1, False),
        Edge("c", "a", (), 1, False),
    ]
    assert _cycles(["a", "b", "c", "d"], edges) == [["a", "b", "c"]]
