"""The public namespace: ``__all__`` lists, their static resolution, the
element-wise table and the array API version.

* every name of ``bcoo_array.__all__``, ``bcoo_array.linalg.__all__`` and
  ``bcoo_array.fft.__all__`` exists, once, and every function or class among
  them has a docstring;
* griffe, reading the source only (no import), resolves every one of those
  names to a function, class or attribute (or, for ``fft``/``linalg``, a
  module), so documentation tools, IDEs and type checkers see what the
  runtime sees;
* the element-wise table and the names bound in ``_elementwise_functions``
  and exported by the namespace are the same set;
* ``__array_api_version__`` is ``"2025.12"``, written as a value in
  ``_version.py`` only.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import bcoo_array
import bcoo_array._elementwise_functions as ew

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = ROOT / "bcoo_array"
API_VERSION = "2025.12"

NAMESPACES = {
    "bcoo_array": bcoo_array,
    "bcoo_array.linalg": bcoo_array.linalg,
    "bcoo_array.fft": bcoo_array.fft,
}


def _sources():
    return sorted(p for p in PACKAGE_DIR.rglob("*.py") if "__pycache__" not in p.parts)


# --------------------------------------------------------------------------- __all__


@pytest.mark.parametrize("modname", sorted(NAMESPACES))
def test_all_names_exist_once(modname):
    module = NAMESPACES[modname]
    names = list(module.__all__)
    assert names, f"{modname}.__all__ is empty"
    dups = sorted({n for n in names if names.count(n) > 1})
    assert not dups, f"{modname}.__all__ lists {dups} more than once"
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{modname}.__all__ lists names the module lacks: {missing}"


def test_init_blocks_and_all_agree():
    # The names imported by the literal blocks of __init__.py are exactly __all__.
    tree = ast.parse((PACKAGE_DIR / "__init__.py").read_text(encoding="utf-8"))
    imported = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            imported += [a.asname or a.name for a in node.names]
    assert len(imported) == len(set(imported)), "a name is imported twice in __init__.py"
    public = {n for n in imported if not n.startswith("_") or (n.startswith("__") and n.endswith("__"))}
    assert public == set(bcoo_array.__all__), (
        f"__init__.py: imported but not in __all__ {sorted(public - set(bcoo_array.__all__))}, "
        f"in __all__ but not imported {sorted(set(bcoo_array.__all__) - public)}")


@pytest.mark.parametrize("modname", sorted(NAMESPACES))
def test_public_functions_have_docstrings(modname):
    module = NAMESPACES[modname]
    bare = []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj):
            doc = obj.__doc__ if inspect.isclass(obj) or inspect.ismodule(obj) else inspect.getdoc(obj)
            if not (doc or "").strip():
                bare.append(name)
    assert not bare, f"{modname}: public functions without a docstring: {bare}"


# --------------------------------------------------------------------------- static resolution (griffe)


@pytest.fixture(scope="module")
def griffe_package():
    griffe = pytest.importorskip("griffe")
    return griffe, griffe.load("bcoo_array", search_paths=[str(ROOT)], allow_inspection=False)


def _resolve(griffe, obj):
    """Follow aliases to the object they name (``final_target`` or ``resolve_target``, as installed)."""
    if not obj.is_alias:
        return obj
    if hasattr(obj, "final_target"):
        return obj.final_target
    obj.resolve_target()
    return _resolve(griffe, obj.target)


@pytest.mark.parametrize("modname", sorted(NAMESPACES))
def test_griffe_resolves_every_public_name(griffe_package, modname):
    griffe, package = griffe_package
    static = package if modname == "bcoo_array" else package[modname.split(".", 1)[1]]
    runtime = NAMESPACES[modname]
    allowed = {griffe.Kind.FUNCTION, griffe.Kind.CLASS, griffe.Kind.ATTRIBUTE}
    problems = []
    for name in runtime.__all__:
        if name not in static.members:
            problems.append(f"{name}: not a member of the statically loaded {modname}")
            continue
        try:
            target = _resolve(griffe, static.members[name])
        except (griffe.AliasResolutionError, griffe.CyclicAliasError) as exc:
            problems.append(f"{name}: alias does not resolve ({exc})")
            continue
        kinds = allowed | ({griffe.Kind.MODULE} if inspect.ismodule(getattr(runtime, name)) else set())
        if target.kind not in kinds:
            problems.append(f"{name}: resolves to {target.path}, a {target.kind.value}")
    assert not problems, f"{modname}: names griffe cannot resolve statically:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("modname", sorted(NAMESPACES))
def test_griffe_reads_the_same_all(griffe_package, modname):
    _, package = griffe_package
    static = package if modname == "bcoo_array" else package[modname.split(".", 1)[1]]
    exports = static.exports
    assert exports is not None, f"griffe found no __all__ in {modname}"
    names = {e if isinstance(e, str) else getattr(e, "name", str(e)) for e in exports}
    assert names == set(NAMESPACES[modname].__all__), (
        f"{modname}: static __all__ differs from the runtime one: "
        f"only static {sorted(names - set(NAMESPACES[modname].__all__))}, "
        f"only runtime {sorted(set(NAMESPACES[modname].__all__) - names)}")


# --------------------------------------------------------------------------- the element-wise table


def _statically_bound_elementwise():
    """``{name: line}`` for ``name = _unary("name")`` / ``_binary("name")`` and ``def clip`` at module level."""
    tree = ast.parse((PACKAGE_DIR / "_elementwise_functions.py").read_text(encoding="utf-8"))
    bound, mismatched = {}, []
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and node.value.func.id in ("_unary", "_binary")):
            name = node.targets[0].id
            arg = node.value.args[0].value if node.value.args and isinstance(node.value.args[0], ast.Constant) else None
            if arg != name:
                mismatched.append(f"line {node.lineno}: {name} = {node.value.func.id}({arg!r})")
            bound[name] = node.lineno
        elif isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            bound[node.name] = node.lineno
    return bound, mismatched


def test_elementwise_table_bindings_and_all_agree():
    bound, mismatched = _statically_bound_elementwise()
    assert not mismatched, f"bindings whose name differs from their TABLE key: {mismatched}"
    table = set(ew.TABLE) | {"clip"}
    exported = set(ew.__all__)
    assert len(ew.__all__) == len(exported), "duplicates in _elementwise_functions.__all__"
    assert set(bound) == table, (
        f"TABLE (+ clip) and the static bindings differ: only in TABLE {sorted(table - set(bound))} "
        f"(add `name = _unary(\"name\")` or `_binary`), only bound {sorted(set(bound) - table)}")
    assert exported == table, (
        f"TABLE (+ clip) and _elementwise_functions.__all__ differ: only in TABLE {sorted(table - exported)}, "
        f"only in __all__ {sorted(exported - table)}")


def test_elementwise_functions_are_the_namespace_functions():
    missing = sorted(n for n in ew.__all__ if n not in bcoo_array.__all__)
    assert not missing, f"element-wise functions missing from bcoo_array.__all__ (and __init__.py's block): {missing}"
    different = sorted(n for n in ew.__all__ if getattr(bcoo_array, n) is not getattr(ew, n))
    assert not different, f"bcoo_array.<name> is not bcoo_array._elementwise_functions.<name> for {different}"


# --------------------------------------------------------------------------- the array API version


def test_array_api_version():
    assert bcoo_array.__array_api_version__ == API_VERSION
    from bcoo_array._version import API_VERSION as source

    assert source == API_VERSION


def _docstring_nodes(tree):
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_array_api_version_written_in_one_place():
    # As a value (a string literal of code, not a docstring, comment or spec link),
    # the version is written once: in _version.py.
    holders = {}
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstring_nodes(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                    and API_VERSION in node.value and "data-apis.org/" not in node.value):
                holders.setdefault(str(path.relative_to(ROOT)), []).append(node.lineno)
    assert list(holders) == ["bcoo_array/_version.py"], (
        f"the string {API_VERSION!r} is written as a value in {holders}; write it only in bcoo_array/_version.py "
        "and import API_VERSION from there")


def test_spec_links_name_the_implemented_version():
    stale = []
    for path in _sources():
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for version in re.findall(r"data-apis\.org/array-api/([^/\s]+)/", line):
                if version != bcoo_array.__array_api_version__:
                    stale.append(f"{path.relative_to(ROOT)}:{lineno} ({version})")
    assert not stale, f"spec links to another version than {bcoo_array.__array_api_version__}: {stale}"
