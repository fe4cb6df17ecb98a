"""Route namespace functions to the sharded implementations.

:func:`install` wraps the functions of the ``bcoo_array`` namespace so that a
call with a :class:`ShardedBCOOArray` argument runs the sharded code; any
other call goes straight to the original function. This is how
``array_api_compat.array_namespace(A)`` (which returns ``bcoo_array`` for a
sharded ``A``) serves sharded arrays too.
"""

from __future__ import annotations

import functools

import numpy as np

from ._array import ShardedBCOOArray


def _has_sharded(args, kwargs) -> bool:
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, ShardedBCOOArray):
            return True
        if isinstance(a, (list, tuple)) and any(isinstance(e, ShardedBCOOArray) for e in a):
            return True
    return False


def _reductions():
    from .._layout import normalize_axes
    from .._operands import check_category
    from .._statistical_functions import _sum_dtype
    from . import _ops

    def _prep(x, axis, name, category):
        check_category(x.dtype, category, name)
        return normalize_axes(axis, x.ndim)

    def _cast(x, dt):
        import bcoo_array

        return x if x.dtype == dt else bcoo_array.astype(x, dt)

    def sum_(x, /, *, axis=None, dtype=None, keepdims=False):
        axes = _prep(x, axis, "sum", "numeric")
        return _ops.reduce(_cast(x, _sum_dtype(x.dtype, dtype)), "sum", axes, keepdims)

    def prod_(x, /, *, axis=None, dtype=None, keepdims=False):
        axes = _prep(x, axis, "prod", "numeric")
        return _ops.reduce(_cast(x, _sum_dtype(x.dtype, dtype)), "prod", axes, keepdims)

    def extreme(op):
        def f(x, /, *, axis=None, keepdims=False):
            axes = _prep(x, axis, op, "real numeric")
            if any(x.shape[a] == 0 for a in axes):
                raise ValueError(f"{op}() of a zero-size reduction has no identity; reduce over non-empty axes")
            return _ops.reduce(x, op, axes, keepdims)
        return f

    def mean_(x, /, *, axis=None, keepdims=False):
        import bcoo_array

        axes = _prep(x, axis, "mean", "floating-point")
        n = 1
        for a in axes:
            n *= x.shape[a]
        total = _ops.reduce(x, "sum", axes, keepdims)
        return bcoo_array.divide(total, np.asarray(n, x.dtype) if n else np.asarray(np.nan, x.dtype))

    def var_(x, /, *, axis=None, correction=0.0, keepdims=False):
        import bcoo_array

        axes = _prep(x, axis, "var", "floating-point")
        n = 1
        for a in axes:
            n *= x.shape[a]
        mu = mean_(x, axis=axes, keepdims=True)
        d = bcoo_array.subtract(x, mu)
        sq = bcoo_array.real(bcoo_array.multiply(bcoo_array.conj(d), d)) if x.dtype.kind == "c" else \
            bcoo_array.multiply(d, d)
        ss = _ops.reduce(sq, "sum", axes, keepdims)
        denom = n - correction
        return bcoo_array.divide(ss, np.asarray(denom, ss.dtype) if denom > 0 else np.asarray(np.nan, ss.dtype))

    def std_(x, /, *, axis=None, correction=0.0, keepdims=False):
        import bcoo_array

        return bcoo_array.sqrt(var_(x, axis=axis, correction=correction, keepdims=keepdims))

    return {"sum": sum_, "prod": prod_, "max": extreme("max"), "min": extreme("min"), "mean": mean_,
            "var": var_, "std": std_}


def _sharded_impl(name: str):
    from .. import _elementwise_functions as ew
    from . import _ops

    if name in ew.__all__:
        fn = getattr(ew, name)
        return lambda *a, **k: _ops.elementwise(fn, a, k)
    if name == "astype":
        from .._data_type_functions import astype

        def astype_(x, dtype, /, *, copy=True, device=None):
            if device is not None:
                raise ValueError("astype(device=...) of a sharded array: use A.to_device(...) to move it")
            return _ops.map_blocks(lambda blk: astype(blk, dtype, copy=copy), x, key=("astype", str(dtype), copy))
        return astype_
    if name == "where":
        from .._searching_functions import where

        return lambda *a, **k: _ops.elementwise(where, a, k)
    red = _reductions()
    if name in red:
        return red[name]
    if name == "matmul":
        return _ops.matmul
    if name == "permute_dims":
        return _ops.permute
    if name == "matrix_transpose":
        def mt(x, /):
            if x.ndim < 2:
                raise ValueError(f"matrix_transpose() needs at least 2 dimensions, got {x.ndim}")
            return _ops.permute(x, tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))
        return mt
    if name in ("result_type", "can_cast", "finfo", "iinfo"):
        def meta(*a, _n=name, **k):
            import bcoo_array._data_type_functions as dtf

            a = [x.dtype if isinstance(x, ShardedBCOOArray) else x for x in a]
            return getattr(dtf, _n)(*a, **k)
        return meta
    if name == "asarray":
        def asarray_(obj, /, *, dtype=None, device=None, copy=None):
            if copy:
                raise ValueError("asarray(copy=True) of a sharded array: its buffers are immutable; use copy=None")
            out = obj if dtype is None else _sharded_impl("astype")(obj, dtype)
            return out if device is None else out.to_device(device)
        return asarray_
    return None


def install(namespace: dict) -> None:
    """Wrap the array functions in ``namespace`` (the ``bcoo_array`` module's globals)."""
    import inspect

    for name in namespace.get("__all__", []):
        fn = namespace.get(name)
        if not inspect.isfunction(fn) or name.startswith("__"):
            continue

        def wrapper(*args, _fn=fn, _name=name, **kwargs):
            if _has_sharded(args, kwargs):
                impl = _sharded_impl(_name)
                if impl is None:
                    raise TypeError(
                        f"bcoo_array.{_name}() does not take sharded arrays; gather first with "
                        "bcoo_array.sharded.unshard(x) (or x.todense() for a dense JAX array)")
                return impl(*args, **kwargs)
            return _fn(*args, **kwargs)

        functools.update_wrapper(wrapper, fn)
        namespace[name] = wrapper
