"""The package's layering, enforced on its source (no import of the package).

Every module of ``bcoo_array/`` belongs to one layer of :data:`LAYERS`, lowest
first. Imports run downward or within a layer; the few load-bearing imports
that run upward are listed, with their reason, in :data:`ALLOWED_UPWARD`.

The checks read the source with :mod:`ast`: module-level imports and the
imports deferred into functions, relative (``from . import x``, where ``x``
is a submodule, ``from ..x import y``) and absolute (``import bcoo_array``,
``from bcoo_array.x import y``), and ``importlib.import_module`` with a
literal name. Imports under ``if TYPE_CHECKING:`` never run and are not
checked.

* (a) the import-time graph (module-level imports only) has no cycle;
* (b) every upward import (deferred or not) is in :data:`ALLOWED_UPWARD`,
  which stays short (:data:`MAX_ALLOWED_UPWARD`) and holds no stale entry;
* (c) every module of the package has a layer.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "bcoo_array"
PACKAGE_DIR = ROOT / PACKAGE

#: Layers, lowest first. Module names are relative to ``bcoo_array`` (the
#: namespace itself, ``__init__.py``, is ``"bcoo_array"``); a package's name
#: covers all its submodules.
LAYERS: dict[str, int] = {
    # 0 base
    "_version": 0, "_constants": 0, "_dtypes": 0, "_routing": 0, "_foreign": 0,
    "_limits": 0, "_warnings": 0,
    # 1 layout and fill values
    "_shapes": 1, "_engine": 1, "_fill": 1,
    # 2 kernels (buffers only)
    "_kernels": 2, "_native": 2,
    # 3 the array class
    "_namespace": 3, "_scipy_methods": 3, "_array_object": 3, "_array_base": 3,
    # 4 operands and the fill rule
    "_relayout": 4, "_convert": 4, "_operands": 4, "_fill_rule": 4,
    # 5 the chapters of the standard
    "_creation_functions": 5, "_data_type_functions": 5, "_elementwise_functions": 5,
    "_indexing_functions": 5, "_linear_algebra_functions": 5, "_manipulation_functions": 5,
    "_searching_functions": 5, "_set_functions": 5, "_sorting_functions": 5,
    "_statistical_functions": 5, "_utility_functions": 5, "_info": 5,
    # 6 extensions and beyond-the-standard functions
    "linalg": 6, "fft": 6, "io": 6, "autodiff": 6, "accelerator": 6, "_scipy_functions": 6,
    # 7 the namespace
    "bcoo_array": 7,
    # 8 on top (the three _numpy_* modules are being replaced by the _numpy package)
    "_numpy": 8,
    "sharded": 8, "cli": 8, "__main__": 8,
}

LAYER_NAMES = {
    0: "base",
    1: "layout and fill values",
    2: "kernels",
    3: "the array class",
    4: "operands and the fill rule",
    5: "spec chapters",
    6: "extensions and beyond the standard",
    7: "the namespace",
    8: "on top",
}

#: The only imports allowed to run from a lower layer to a higher one:
#: ``(importer, imported): reason``. A package name covers its submodules.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {
    ("_namespace", "bcoo_array"): "operators of the class call the namespace",
    ("_namespace", "_indexing_functions"): "A[key] runs the indexing chapter",
    ("_namespace", "_numpy"): "NumPy protocol sits above the namespace",
    ("bcoo_array", "sharded"): "bcoo_array.sharded imported on first use (module __getattr__)",
}

MAX_ALLOWED_UPWARD = 8


# --------------------------------------------------------------------------- reading the source


@dataclass(frozen=True)
class Import:
    """One imported module of one import statement (or ``import_module`` call)."""

    importer: str  # full dotted name, e.g. "bcoo_array._fill"
    imported: str
    lineno: int
    deferred: bool  # inside a function: runs at call time, not at import time
    type_only: bool  # under ``if TYPE_CHECKING:``: never runs


def read_tree(package_dir: Path = PACKAGE_DIR) -> dict[str, tuple[str, bool]]:
    """``{full module name: (source, is_package)}`` for every ``.py`` file of the package."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir.parent).with_suffix("")
        parts = rel.parts
        if "__pycache__" in parts:
            continue
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path.read_text(encoding="utf-8"), is_package)
    return out


def short(name: str) -> str:
    """``bcoo_array._fill`` -> ``_fill``; the package itself stays ``bcoo_array``."""
    return name[len(PACKAGE) + 1:] if name.startswith(PACKAGE + ".") else name


def layer_of(name: str, layers: dict[str, int] = LAYERS) -> int | None:
    """The layer of a module (short or full name), through its longest listed prefix."""
    name = short(name)
    if name == PACKAGE:
        return layers.get(PACKAGE)
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in layers:
            return layers[key]
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Walker(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, known: set[str]):
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.known = known  # full names that count as modules
        self.depth = 0  # function nesting
        self.type_only = 0
        self.found: list[Import] = []

    def _add(self, imported: str, node: ast.AST) -> None:
        if imported == PACKAGE or imported.startswith(PACKAGE + "."):
            self.found.append(Import(self.module, imported, node.lineno, self.depth > 0, self.type_only > 0))

    def _anchor(self, level: int) -> str:
        parts = self.package.split(".")
        return ".".join(parts[: len(parts) - (level - 1)])

    def visit_FunctionDef(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_If(self, node):
        if _is_type_checking(node.test):
            self.type_only += 1
            for child in node.body:
                self.visit(child)
            self.type_only -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node):
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node):
        if node.level:
            base = self._anchor(node.level)
            if node.module:
                base = f"{base}.{node.module}"
        else:
            base = node.module or ""
        targets = []
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            target = sub if alias.name != "*" and sub in self.known else base
            if target not in targets:
                targets.append(target)
        for target in targets:
            self._add(target, node)

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if (name == "import_module" and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            target = node.args[0].value
            if target.startswith("."):
                level = len(target) - len(target.lstrip("."))
                anchor_arg = node.args[1] if len(node.args) > 1 else None
                anchor = self.package
                if isinstance(anchor_arg, ast.Name) and anchor_arg.id == "__name__":
                    anchor = self.module
                parts = anchor.split(".")
                anchor = ".".join(parts[: len(parts) - (level - 1)])
                target = f"{anchor}.{target.lstrip('.')}" if target.lstrip(".") else anchor
            self._add(target, node)
        self.generic_visit(node)


def collect_imports(tree: dict[str, tuple[str, bool]], layers: dict[str, int] = LAYERS) -> list[Import]:
    """Every package-internal import of every module of ``tree``.

    ``from P import x`` imports the submodule ``P.x`` when it exists, or when
    ``x`` is listed in ``layers`` (a module about to be written), else ``P``.
    """
    known = set(tree) | {f"{PACKAGE}.{k}" for k in layers if k != PACKAGE}
    found = []
    for module, (source, is_package) in tree.items():
        walker = _Walker(module, is_package, known)
        walker.visit(ast.parse(source, filename=module))
        found += [imp for imp in walker.found if imp.imported != module]
    return found


# --------------------------------------------------------------------------- the import-time graph


def import_time_graph(tree, imports: list[Import]) -> dict[str, dict[str, int]]:
    """``{importer: {imported: line}}`` for the imports that run when a module is imported.

    Importing ``bcoo_array.a.b`` first runs the package ``bcoo_array.a``, so an
    edge to the package is added too, unless it encloses the importer.
    """
    graph: dict[str, dict[str, int]] = {m: {} for m in tree}
    for imp in imports:
        if imp.deferred or imp.type_only:
            continue
        targets = [imp.imported]
        parts = imp.imported.split(".")
        for n in range(2, len(parts)):
            parent = ".".join(parts[:n])
            if parent in tree and not (imp.importer + ".").startswith(parent + "."):
                targets.append(parent)
        for target in targets:
            graph[imp.importer].setdefault(target, imp.lineno)
            graph.setdefault(target, {})
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's algorithm: the components with more than one module (the cycles)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def one_cycle(graph: dict[str, dict[str, int]], component: list[str]) -> list[tuple[str, str, int]]:
    """A shortest cycle through the first module of ``component``: ``[(importer, imported, line)]``."""
    start, members = component[0], set(component)
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w not in members:
                    continue
                if w == start:
                    path = [(v, w, graph[v][w])]
                    while v != start:
                        u = parent[v]
                        path.append((u, v, graph[u][v]))
                        v = u
                    return path[::-1]
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError("not a cycle")


# --------------------------------------------------------------------------- upward imports


def _covers(entry: str, name: str) -> bool:
    return name == entry or (entry != PACKAGE and name.startswith(entry + "."))


def upward_imports(imports: list[Import], layers: dict[str, int] = LAYERS) -> list[Import]:
    """Imports that run from a lower layer to a higher one (deferred or not)."""
    out = []
    for imp in imports:
        if imp.type_only:
            continue
        a, b = layer_of(imp.importer, layers), layer_of(imp.imported, layers)
        if a is not None and b is not None and a < b:
            out.append(imp)
    return out


def allowed(imp: Import, allow: dict[tuple[str, str], str] = ALLOWED_UPWARD) -> bool:
    return any(_covers(a, short(imp.importer)) and _covers(b, short(imp.imported)) for a, b in allow)


def _describe(name: str) -> str:
    layer = layer_of(name)
    return f"{short(name)} (layer {layer}: {LAYER_NAMES.get(layer, '?')})"


def _where(imp: Import) -> str:
    return f"{short(imp.importer)}:{imp.lineno}"


# --------------------------------------------------------------------------- the tests


@pytest.fixture(scope="module")
def tree():
    found = read_tree()
    assert found, f"no module found under {PACKAGE_DIR}"
    return found


@pytest.fixture(scope="module")
def imports(tree):
    return collect_imports(tree)


def test_every_module_has_a_layer(tree):
    missing = sorted(short(m) for m in tree if layer_of(m) is None)
    assert not missing, (
        f"module(s) without a layer: {missing}. Add each (or its package) to LAYERS in "
        f"tests/test_layers.py, at or above the layer of every module it imports: {LAYER_NAMES}")


def test_no_import_cycle_at_import_time(tree, imports):
    graph = import_time_graph(tree, imports)
    cycles = strongly_connected(graph)
    messages = []
    for component in cycles:
        path = one_cycle(graph, component)
        steps = " -> ".join(f"{short(a)} (line {line})" for a, _, line in path) + f" -> {short(path[0][0])}"
        messages.append(f"modules {[short(m) for m in component]}: {steps}")
    assert not cycles, ("module-level import cycle(s); defer one import into the function that needs it, or "
                        "move the shared code down a layer:\n  " + "\n  ".join(messages))


def test_no_upward_import_outside_the_allow_list(imports):
    bad = [imp for imp in upward_imports(imports) if not allowed(imp)]
    lines = [
        f"{_where(imp)}: {short(imp.importer)} imports {short(imp.imported)} "
        f"({'deferred' if imp.deferred else 'module level'}); "
        f"layer {layer_of(imp.importer)} ({LAYER_NAMES[layer_of(imp.importer)]}) -> "
        f"layer {layer_of(imp.imported)} ({LAYER_NAMES[layer_of(imp.imported)]})"
        for imp in bad
    ]
    assert not bad, ("import(s) from a lower layer to a higher one; move the code, pass it in, or (if it is "
                     "load-bearing) go through the accessors of bcoo_array/_namespace.py:\n  " + "\n  ".join(lines))


def test_allow_list_is_short_and_meaningful():
    assert len(ALLOWED_UPWARD) <= MAX_ALLOWED_UPWARD, (
        f"{len(ALLOWED_UPWARD)} allowed upward imports (at most {MAX_ALLOWED_UPWARD}): fix the layering instead")
    for (a, b), reason in ALLOWED_UPWARD.items():
        assert reason.strip(), f"({a!r}, {b!r}) needs a reason"
        la, lb = layer_of(a), layer_of(b)
        assert la is not None and lb is not None and la < lb, (
            f"({a!r}, {b!r}) is not an upward import: {_describe(a)} -> {_describe(b)}")


def test_allow_list_has_no_stale_entry(imports):
    up = upward_imports(imports)
    stale = [(a, b) for a, b in ALLOWED_UPWARD
             if not any(imp for imp in up if allowed(imp, {(a, b): ""}))]
    assert not stale, f"allowed upward import(s) no longer in the source, remove from ALLOWED_UPWARD: {stale}"


def test_the_walker_sees_deferred_imports(imports):
    # The reader itself: the late-binding accessor of the namespace is a deferred import.
    assert any(short(i.importer) == "_namespace" and i.imported == PACKAGE and i.deferred for i in imports)
