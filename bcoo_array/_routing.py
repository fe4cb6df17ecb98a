"""Routing namespace functions to other array types of this package.

Every public function of the namespace is decorated with ``routed``.
When one of its arguments (or an element of a list or tuple argument) has a
type that defines ``__bcoo_function__``, the call goes to that method
instead:

    type(arg).__bcoo_function__(arg, func, args, kwargs)

``func`` is the public function; the method returns the result or raises.
This is how [`bcoo_array.sharded.ShardedBCOOArray`][] takes part in the
namespace (its method looks the function up in one explicit table and
raises "gather first" for the others) without the namespace importing it:
the same idea as NumPy's ``__array_function__`` (NEP 18).
"""

from __future__ import annotations

import functools

_PROTOCOL = "__bcoo_function__"


def is_routed_type(t: type) -> bool:
    """Whether instances of ``t`` implement namespace functions through ``__bcoo_function__``."""
    return hasattr(t, _PROTOCOL)


def _implementer(args, kwargs):
    for a in args:
        t = type(a)
        if hasattr(t, _PROTOCOL):
            return a
        if t is list or t is tuple:
            for e in a:
                if hasattr(type(e), _PROTOCOL):
                    return e
    for a in kwargs.values():
        if hasattr(type(a), _PROTOCOL):
            return a
    return None


def routed(fn):
    """Decorate a namespace function so that array types with ``__bcoo_function__`` can implement it.

    Parameters
    ----------
    fn : callable
        A public function of the namespace.

    Returns
    -------
    callable
        ``fn`` with the same name, signature and docstring; calls without
        such an argument run ``fn`` itself.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        other = _implementer(args, kwargs)
        if other is None:
            return fn(*args, **kwargs)
        return getattr(type(other), _PROTOCOL)(other, wrapper, args, kwargs)

    return wrapper


def public(fn, name: str, module: str):
    """A function built by a factory, named ``module.name`` and ``routed`` (the generated
    element-wise and FFT functions)."""
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module
    return routed(fn)
