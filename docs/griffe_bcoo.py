"""A griffe extension for the API reference (``mkdocs.yml``: ``extensions``).

mkdocstrings reads ``bcoo_array`` statically (no import, so no JAX needed to
build the site). Two things static analysis gets wrong are put right here:

* **Generated functions.** The element-wise functions and the FFTs are made
  by factories and bound to static names (``exp = _unary("exp")``,
  ``fftn = _make_nd("fftn")``). Statically these are attributes with no
  docstring. For every module-level ``NAME = FACTORY("literal")`` whose
  factory defines an inner ``def`` and sets its ``__doc__`` from a
  ``TEMPLATE.format(...)``, this extension evaluates that template on the
  module's literal tables (a small evaluator: literals, the module's
  ``NamedTuple`` classes, subscripts, ``str`` methods; anything else is
  opaque) and replaces the attribute by a function with the inner
  ``def``'s signature and the formatted docstring, as at run time.
* **Docstrings assigned after the definition** (``sum.__doc__ =
  _DOC.format(...)``) are evaluated the same way.
* **Public ``__slots__``** set outside ``__init__`` (``BCOOArray.data``, ...)
  become attributes, described by the class docstring's ``Attributes``
  section.
* **``bool``.** griffe resolves a name by walking up to the parent package,
  so ``keepdims: bool`` in any submodule resolved to the namespace's
  ``bcoo_array.bool`` dtype and rendered as ``bool_``. Python does not look
  names up in the parent package; every submodule that does not define
  ``bool`` itself gets ``bool`` bound to ``builtins.bool``.
"""

from __future__ import annotations

import ast
import collections
from typing import Any

import griffe

PACKAGE = "bcoo_array"


class _Opaque:
    """A value the evaluator does not know (a JAX function, a call it cannot make)."""

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __getitem__(self, key):
        return self


OPAQUE = _Opaque()
_STR_METHODS = {"capitalize", "format", "lower", "upper", "strip", "title", "replace", "join"}


def _eval(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id, OPAQUE)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_eval(e, env) for e in node.elts)
    if isinstance(node, ast.Dict):
        return {_eval(k, env): _eval(v, env) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Subscript):
        container, key = _eval(node.value, env), _eval(node.slice, env)
        try:
            return container[key]
        except (KeyError, IndexError, TypeError):
            return OPAQUE
    if isinstance(node, ast.Attribute):
        value = _eval(node.value, env)
        if isinstance(value, str) and node.attr in _STR_METHODS:
            return getattr(value, node.attr)
        if isinstance(value, tuple) and hasattr(value, "_fields") and node.attr in value._fields:
            return getattr(value, node.attr)
        return OPAQUE
    if isinstance(node, ast.Call):
        fn = _eval(node.func, env)
        if fn is OPAQUE or not callable(fn):
            return OPAQUE
        args = [_eval(a, env) for a in node.args]
        kwargs = {k.arg: _eval(k.value, env) for k in node.keywords if k.arg}
        try:
            return fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - an evaluation we cannot make statically
            return OPAQUE
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _eval(node.left, env), _eval(node.right, env)
        return left + right if isinstance(left, str) and isinstance(right, str) else OPAQUE
    return OPAQUE


def _assign(target: ast.AST, value: Any, env: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        values = value if isinstance(value, tuple) and len(value) == len(target.elts) else [OPAQUE] * len(target.elts)
        for t, v in zip(target.elts, values):
            _assign(t, v, env)


def _namedtuple(cls: ast.ClassDef, env: dict[str, Any]):
    fields, defaults = [], []
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            fields.append(stmt.target.id)
            if stmt.value is not None:
                defaults.append(_eval(stmt.value, env))
    return collections.namedtuple(cls.name, fields, defaults=defaults or None)


def _module_env(tree: ast.Module) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and any(
            (isinstance(b, ast.Name) and b.id == "NamedTuple") or (isinstance(b, ast.Attribute) and b.attr == "NamedTuple")
            for b in stmt.bases
        ):
            env[stmt.name] = _namedtuple(stmt, env)
        elif isinstance(stmt, ast.Assign):
            value = _eval(stmt.value, env)
            for target in stmt.targets:
                _assign(target, value, env)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            _assign(stmt.target, _eval(stmt.value, env), env)
    return env


def _doc_statement(stmt: ast.stmt, inner: str) -> ast.expr | None:
    """The value of ``inner.__doc__ = ...``, if ``stmt`` is that assignment."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        t = stmt.targets[0]
        if isinstance(t, ast.Attribute) and t.attr == "__doc__" and isinstance(t.value, ast.Name) and t.value.id == inner:
            return stmt.value
    return None


def _generate(factory: ast.FunctionDef, arg: Any, env: dict[str, Any]) -> tuple[ast.FunctionDef, str] | None:
    """The inner ``def`` of ``factory`` and its docstring for ``factory(arg)``."""
    if len(factory.args.args) != 1:
        return None
    local = dict(env)
    local[factory.args.args[0].arg] = arg
    inner = None
    for stmt in factory.body:
        if isinstance(stmt, ast.FunctionDef):
            inner = stmt
            continue
        if inner is not None and (value := _doc_statement(stmt, inner.name)) is not None:
            doc = _eval(value, local)
            return (inner, doc) if isinstance(doc, str) else None
        if isinstance(stmt, ast.Assign):
            value = _eval(stmt.value, local)
            for target in stmt.targets:
                _assign(target, value, local)
    return None


_KINDS = {
    "posonly": griffe.ParameterKind.positional_only,
    "args": griffe.ParameterKind.positional_or_keyword,
    "kwonly": griffe.ParameterKind.keyword_only,
}


def _parameters(fn: ast.FunctionDef, parent: griffe.Module) -> griffe.Parameters:
    a = fn.args
    params = []
    positional = [(p, "posonly") for p in a.posonlyargs] + [(p, "args") for p in a.args]
    pos_defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    rows = [(p, kind, d) for (p, kind), d in zip(positional, pos_defaults)]
    rows += [(p, "kwonly", d) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    for p, kind, default in rows:
        annotation = griffe.safe_get_annotation(p.annotation, parent) if p.annotation is not None else None
        params.append(griffe.Parameter(p.arg, annotation=annotation, kind=_KINDS[kind],
                                       default=ast.unparse(default) if default is not None else None))
    return griffe.Parameters(*params)


def _attributes_section(doc: str) -> dict[str, tuple[str, str]]:
    """``name -> (type, description)`` from a numpy-style ``Attributes`` section."""
    out: dict[str, tuple[str, str]] = {}
    lines = doc.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.strip() == "Attributes" and set(lines[i + 1].strip()) == {"-"}:
            j, current = i + 2, None
            while j < len(lines) and not (j + 1 < len(lines) and lines[j + 1].strip() and
                                          set(lines[j + 1].strip()) == {"-"}):
                text = lines[j]
                if text and not text[0].isspace():
                    names, _, kind = text.partition(" : ")
                    current = [n.strip() for n in names.split(",")]
                    for n in current:
                        out[n] = (kind.strip(), "")
                elif text.strip() and current:
                    for n in current:
                        out[n] = (out[n][0], (out[n][1] + " " + text.strip()).strip())
                j += 1
    return out


class BcooArrayDocs(griffe.Extension):
    """See the module docstring."""

    def on_module_members(self, *, node: Any, mod: griffe.Module, **kwargs: Any) -> None:
        if not (mod.path == PACKAGE or mod.path.startswith(PACKAGE + ".")):
            return
        if mod.path != PACKAGE and "bool" not in mod.members:
            mod.set_member("bool", griffe.Alias("bool", "builtins.bool", parent=mod))
        if isinstance(node, ast.Module):
            self._generated_functions(node, mod)
            self._assigned_docstrings(node, mod)
            for stmt in node.body:
                if isinstance(stmt, ast.ClassDef) and stmt.name in mod.members:
                    self._slots(stmt, mod.members[stmt.name])

    def _slots(self, node: ast.ClassDef, cls: Any) -> None:
        """Public ``__slots__`` set outside ``__init__`` (griffe misses them) become attributes, described
        by the class docstring's ``Attributes`` section."""
        slots = next((s.value for s in node.body if isinstance(s, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in s.targets)), None)
        if not isinstance(slots, (ast.Tuple, ast.List)):
            return
        described = _attributes_section(cls.docstring.value if cls.docstring else "")
        for elt in slots.elts:
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str) and not elt.value.startswith("_") \
                    and elt.value not in cls.members:
                name = elt.value
                attr = griffe.Attribute(name, lineno=slots.lineno, endlineno=slots.end_lineno, parent=cls)
                attr.labels.add("instance-attribute")
                if name in described:
                    annotation, text = described[name]
                    attr.annotation = annotation
                    attr.docstring = griffe.Docstring(text, parent=attr)
                cls.set_member(name, attr)

    def _assigned_docstrings(self, tree: ast.Module, mod: griffe.Module) -> None:
        """Module-level ``name.__doc__ = TEMPLATE.format(...)`` (the statistical and searching
        functions share templates this way)."""
        env = None
        for stmt in tree.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            target = stmt.targets[0]
            if not (isinstance(target, ast.Attribute) and target.attr == "__doc__" and isinstance(target.value, ast.Name)):
                continue
            member = mod.members.get(target.value.id)
            if member is None or member.is_alias:
                continue
            if env is None:
                env = _module_env(tree)
            doc = _eval(stmt.value, env)
            if isinstance(doc, str):
                member.docstring = griffe.Docstring(doc, lineno=stmt.lineno, endlineno=stmt.end_lineno, parent=member)

    def _generated_functions(self, tree: ast.Module, mod: griffe.Module) -> None:
        factories = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
        env = None
        for stmt in tree.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            call = stmt.value
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in factories
                    and len(call.args) == 1 and isinstance(call.args[0], ast.Constant) and not call.keywords):
                continue
            if env is None:
                env = _module_env(tree)
            made = _generate(factories[call.func.id], call.args[0].value, env)
            if made is None:
                continue
            inner, doc = made
            name = stmt.targets[0].id
            func = griffe.Function(name, lineno=stmt.lineno, endlineno=stmt.end_lineno, parent=mod)
            func.parameters = _parameters(inner, mod)
            func.docstring = griffe.Docstring(doc, lineno=stmt.lineno, endlineno=stmt.end_lineno, parent=func)
            mod.set_member(name, func)
