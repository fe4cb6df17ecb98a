"""The explicit tables behind NumPy dispatch, built once at import.

``FUNCTIONS`` maps NumPy functions (the objects ``numpy.sum``,
``numpy.linalg.norm``, ...) to their implementation: an adapter onto the
namespace (``.adapters``) or a composition for a function the namespace
lacks (``.extras``). ``UFUNCS`` maps NumPy ufuncs to the element-wise
namespace functions (any other ufunc is applied to the stored values and the
fill value by ``.foreign``); ``REDUCE`` maps the ufuncs whose ``.reduce`` and
``.reduceat`` are computed from the stored entries, ``ACCUMULATE`` those
whose ``.accumulate`` is a namespace function (``.methods``).
``method_support`` states, for any ufunc and method, how it is served or that
it is refused.

The tables are literals: nothing is found by name, nothing is checked per
call. ``SPARSE_RESULT``, ``MIXED_RESULT`` and ``PYTHON_RESULT``
record the kind of each function's result (every other entry of
``FUNCTIONS`` is ``DENSE``); ``docs/numpy_coverage.md`` is generated
from this module (``python docs/numpy_coverage.py``) and the tests check the
declared kinds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import bcoo_array as xp

from . import adapters as ad
from . import extras as ex
from . import methods as me

#: NumPy function -> implementation with NumPy's signature. Keys are the function objects.
FUNCTIONS: dict[Callable, Callable] = {
    # statistics
    np.sum: ad.sum_,
    np.prod: ad.prod,
    np.max: ad.max_,
    np.amax: ad.max_,
    np.min: ad.min_,
    np.amin: ad.min_,
    np.mean: ad.mean,
    np.var: ad.var,
    np.std: ad.std,
    np.cumsum: ad.cumsum,
    np.cumprod: ad.cumprod,
    np.cumulative_sum: ad.cumulative_sum,
    np.cumulative_prod: ad.cumulative_prod,
    np.all: ad.all_,
    np.any: ad.any_,
    np.count_nonzero: ad.count_nonzero,
    np.diff: ad.diff,
    np.average: ex.average,
    # NaN-aware reductions (beyond the standard)
    np.nansum: ex.nansum,
    np.nanprod: ex.nanprod,
    np.nanmax: ex.nanmax,
    np.nanmin: ex.nanmin,
    np.nanmean: ex.nanmean,
    np.nanvar: ex.nanvar,
    np.nanstd: ex.nanstd,
    np.nanargmax: ex.nanargmax,
    np.nanargmin: ex.nanargmin,
    np.nancumsum: ex.nancumsum,
    np.nancumprod: ex.nancumprod,
    # searching, sorting, sets
    np.argmax: ad.argmax,
    np.argmin: ad.argmin,
    np.nonzero: ad.nonzero,
    np.argwhere: ex.argwhere,
    np.flatnonzero: ex.flatnonzero,
    np.where: ad.where,
    np.searchsorted: ad.searchsorted,
    np.sort: ad.sort,
    np.argsort: ad.argsort,
    np.unique: ad.unique,
    np.unique_values: ad.unique_values,
    np.unique_counts: ad.unique_counts,
    np.unique_inverse: ad.unique_inverse,
    np.unique_all: ad.unique_all,
    np.isin: ad.isin,
    # manipulation
    np.transpose: ad.transpose,  # numpy.permute_dims is this object
    np.matrix_transpose: ad.matrix_transpose,
    np.moveaxis: ad.moveaxis,
    np.swapaxes: ex.swapaxes,
    np.reshape: ad.reshape,
    np.ravel: ad.ravel,
    np.expand_dims: ad.expand_dims,
    np.squeeze: ad.squeeze,
    np.broadcast_to: ad.broadcast_to,
    np.broadcast_arrays: ad.broadcast_arrays,
    np.atleast_1d: ex.atleast_1d,
    np.atleast_2d: ex.atleast_2d,
    np.atleast_3d: ex.atleast_3d,
    np.concatenate: ad.concatenate,  # numpy.concat is this object
    np.stack: ad.stack,
    np.hstack: ex.hstack,
    np.vstack: ex.vstack,
    np.unstack: ad.unstack,
    np.flip: ad.flip,
    np.roll: ad.roll,
    np.repeat: ad.repeat,
    np.tile: ad.tile,
    np.copy: ad.copy,
    np.ndim: ad.ndim,
    np.shape: ad.shape,
    np.size: ad.size,
    np.result_type: ad.result_type,
    np.iscomplexobj: ad.iscomplexobj,
    np.isrealobj: ad.isrealobj,
    np.may_share_memory: ex.may_share_memory,
    np.shares_memory: ex.shares_memory,
    # indexing
    np.take: ad.take,
    np.take_along_axis: ad.take_along_axis,
    np.diagonal: ad.diagonal,
    np.trace: ad.trace,
    # creation and data types
    np.tril: ad.tril,
    np.triu: ad.triu,
    np.meshgrid: ad.meshgrid,
    np.zeros_like: ad.zeros_like,
    np.ones_like: ad.ones_like,
    np.empty_like: ad.empty_like,
    np.full_like: ad.full_like,
    np.astype: ad.astype,
    # element-wise functions that are not ufuncs
    np.clip: ad.clip,
    np.round: ad.round_,
    np.around: ad.round_,
    np.real: ad.real,
    np.imag: ad.imag,
    np.isclose: ex.isclose,
    np.allclose: ex.allclose,
    np.array_equal: ex.array_equal,
    # products
    np.dot: ex.dot,
    np.tensordot: ad.tensordot,
    np.einsum: ex.einsum,
    np.kron: ex.kron,
    np.outer: ad.outer,
    np.inner: ex.inner,
    np.vdot: ex.vdot,
    # numpy.linalg
    np.linalg.norm: ad.linalg_norm,
    np.linalg.vector_norm: ad.linalg_vector_norm,
    np.linalg.matrix_norm: ad.linalg_matrix_norm,
    np.linalg.matmul: ad.linalg_matmul,
    np.linalg.vecdot: ad.linalg_vecdot,
    np.linalg.tensordot: ad.tensordot,
    np.linalg.matrix_transpose: ad.matrix_transpose,
    np.linalg.diagonal: ad.linalg_diagonal,
    np.linalg.trace: ad.linalg_trace,
    np.linalg.outer: ad.linalg_outer,
    np.linalg.cross: ad.linalg_cross,
    np.linalg.cholesky: ad.linalg_cholesky,
    np.linalg.det: ad.linalg_det,
    np.linalg.slogdet: ad.linalg_slogdet,
    np.linalg.inv: ad.linalg_inv,
    np.linalg.solve: ad.linalg_solve,
    np.linalg.svdvals: ad.linalg_svdvals,
    np.linalg.eigh: ad.linalg_eigh,
    np.linalg.eigvalsh: ad.linalg_eigvalsh,
    np.linalg.matrix_power: ad.linalg_matrix_power,
    np.linalg.matrix_rank: ad.linalg_matrix_rank,
    np.linalg.pinv: ad.linalg_pinv,
    np.linalg.qr: ad.linalg_qr,
    np.linalg.svd: ad.linalg_svd,
    # numpy.fft
    np.fft.fft: ad.fft_fft,
    np.fft.ifft: ad.fft_ifft,
    np.fft.rfft: ad.fft_rfft,
    np.fft.irfft: ad.fft_irfft,
    np.fft.hfft: ad.fft_hfft,
    np.fft.ihfft: ad.fft_ihfft,
    np.fft.fftn: ad.fft_fftn,
    np.fft.ifftn: ad.fft_ifftn,
    np.fft.rfftn: ad.fft_rfftn,
    np.fft.irfftn: ad.fft_irfftn,
    np.fft.fftshift: ad.fft_fftshift,
    np.fft.ifftshift: ad.fft_ifftshift,
}

#: NumPy ufunc -> element-wise namespace function (``ufunc(...)``, i.e. ``__call__``).
UFUNCS: dict[np.ufunc, Callable] = {
    np.absolute: xp.abs,
    np.fabs: xp.abs,
    np.arccos: xp.acos,
    np.arccosh: xp.acosh,
    np.add: xp.add,
    np.arcsin: xp.asin,
    np.arcsinh: xp.asinh,
    np.arctan: xp.atan,
    np.arctan2: xp.atan2,
    np.arctanh: xp.atanh,
    np.bitwise_and: xp.bitwise_and,
    np.left_shift: xp.bitwise_left_shift,
    np.invert: xp.bitwise_invert,
    np.bitwise_or: xp.bitwise_or,
    np.right_shift: xp.bitwise_right_shift,
    np.bitwise_xor: xp.bitwise_xor,
    np.ceil: xp.ceil,
    np.conjugate: xp.conj,
    np.copysign: xp.copysign,
    np.cos: xp.cos,
    np.cosh: xp.cosh,
    np.divide: xp.divide,
    np.equal: xp.equal,
    np.exp: xp.exp,
    np.expm1: xp.expm1,
    np.floor: xp.floor,
    np.floor_divide: xp.floor_divide,
    np.greater: xp.greater,
    np.greater_equal: xp.greater_equal,
    np.hypot: xp.hypot,
    np.isfinite: xp.isfinite,
    np.isinf: xp.isinf,
    np.isnan: xp.isnan,
    np.less: xp.less,
    np.less_equal: xp.less_equal,
    np.log: xp.log,
    np.log1p: xp.log1p,
    np.log2: xp.log2,
    np.log10: xp.log10,
    np.logaddexp: xp.logaddexp,
    np.logical_and: xp.logical_and,
    np.logical_not: xp.logical_not,
    np.logical_or: xp.logical_or,
    np.logical_xor: xp.logical_xor,
    np.maximum: xp.maximum,
    np.minimum: xp.minimum,
    np.multiply: xp.multiply,
    np.negative: xp.negative,
    np.nextafter: xp.nextafter,
    np.not_equal: xp.not_equal,
    np.positive: xp.positive,
    np.power: xp.pow,
    np.reciprocal: xp.reciprocal,
    np.remainder: xp.remainder,
    np.rint: xp.round,
    np.sign: xp.sign,
    np.signbit: xp.signbit,
    np.sin: xp.sin,
    np.sinh: xp.sinh,
    np.square: xp.square,
    np.sqrt: xp.sqrt,
    np.subtract: xp.subtract,
    np.tan: xp.tan,
    np.tanh: xp.tanh,
    np.trunc: xp.trunc,
    np.matmul: xp.matmul,
    np.vecdot: xp.vecdot,  # the one ufunc called with a keyword: axis=
}

#: Ufuncs whose ``.reduce`` (and ``.reduceat``, per segment) is computed from the stored entries plus
#: the fill value -> function(x, axis, dtype, keepdims).
REDUCE: dict[np.ufunc, Callable] = {
    np.add: me.add_reduce,
    np.multiply: me.multiply_reduce,
    np.maximum: me.maximum_reduce,
    np.minimum: me.minimum_reduce,
    np.fmax: me.fmax_reduce,
    np.fmin: me.fmin_reduce,
    np.logical_and: me.logical_and_reduce,
    np.logical_or: me.logical_or_reduce,
    np.logical_xor: me.logical_xor_reduce,
    np.bitwise_and: me.bitwise_and_reduce,
    np.bitwise_or: me.bitwise_or_reduce,
    np.bitwise_xor: me.bitwise_xor_reduce,
    np.equal: me.equal_reduce,
    np.not_equal: me.not_equal_reduce,
    np.subtract: me.subtract_reduce,
}

#: Ufuncs whose ``.accumulate`` is a namespace function -> function(x, axis, dtype). Other binary
#: ufuncs accumulate with NumPy on the dense values (a running value is dense by nature).
ACCUMULATE: dict[np.ufunc, Callable] = {
    np.add: me.add_accumulate,
    np.multiply: me.multiply_accumulate,
}

#: The ufunc methods NumPy has, in the order the coverage document lists them.
METHODS = ("__call__", "reduce", "accumulate", "reduceat", "outer", "at")


def _plain(ufunc: np.ufunc) -> bool:
    return ufunc.signature is None


def method_support(ufunc: np.ufunc, method: str) -> str | None:
    """How ``ufunc.<method>`` is served on BCOOArrays, or None where it is refused.

    Parameters
    ----------
    ufunc : numpy.ufunc
        Any ufunc (NumPy's, scipy.special's, ...).
    method : str
        One of ``METHODS``.

    Returns
    -------
    str or None
        A short description (the coverage document prints it), or None when
        the call raises TypeError naming the fix (NumPy on ``A.toarray()``,
        or the opt-in ``BCOO_ARRAY_AUTO_DENSIFY=1``). Methods NumPy itself
        allows only for binary ufuncs (``reduce``, ``accumulate``,
        ``reduceat``, ``outer``) are None for the others, and NumPy raises
        its own ValueError.
    """
    binary = ufunc.nin == 2 and ufunc.nout == 1 and _plain(ufunc)
    if method == "__call__":
        if ufunc in UFUNCS:
            return f"bcoo_array.{_target(ufunc)}"
        return "host: stored values and fill" if _plain(ufunc) else None
    if method == "reduce":
        return f"sparse: methods.{REDUCE[ufunc].__name__}" if ufunc in REDUCE else None
    if method == "reduceat":
        return "sparse: reduce per segment" if ufunc in REDUCE else None
    if method == "accumulate":
        if ufunc in ACCUMULATE:
            return f"dense: methods.{ACCUMULATE[ufunc].__name__}"
        return "dense: NumPy on the dense values" if binary else None
    if method == "outer":
        return "sparse: product pattern where the fill allows" if ufunc.nin == 2 and _plain(ufunc) else None
    if method == "at":
        return "in place: touched positions" if ufunc.nin in (1, 2) and ufunc.nout == 1 and _plain(ufunc) else None
    raise ValueError(f"unknown ufunc method {method!r}")


def _target(ufunc: np.ufunc) -> str:
    """The namespace name of a ufunc of ``UFUNCS``."""
    if ufunc is np.matmul:
        return "matmul"
    if ufunc is np.vecdot:
        return "vecdot"
    return UFUNCS[ufunc].__name__


# -- result kinds (documentation and tests) ------------------------------------------------------

SPARSE = "sparse"  # a sparse input gives a sparse result
DENSE = "dense"  # inherently dense: a dense-layout BCOOArray (or 0-d)
MIXED = "sparse; dense if the fill varies"  # element-wise with a dense operand

#: Entries of FUNCTIONS whose sparse input gives a sparse result.
SPARSE_RESULT = frozenset({
    np.diff, np.sort, np.isin,
    np.transpose, np.matrix_transpose, np.moveaxis, np.swapaxes, np.reshape, np.ravel, np.expand_dims,
    np.squeeze, np.broadcast_to, np.broadcast_arrays, np.atleast_1d, np.atleast_2d, np.atleast_3d,
    np.concatenate, np.stack, np.hstack, np.vstack, np.unstack, np.flip, np.roll, np.repeat, np.tile, np.copy,
    np.take, np.diagonal, np.tril, np.triu, np.zeros_like, np.ones_like, np.empty_like, np.full_like,
    np.astype, np.round, np.around, np.real, np.imag, np.kron, np.outer,
    np.linalg.matrix_transpose, np.linalg.diagonal, np.linalg.outer, np.fft.fftshift, np.fft.ifftshift,
})

#: Entries of FUNCTIONS that are sparse for sparse operands and dense where a dense operand makes the fill vary.
MIXED_RESULT = frozenset({
    np.where, np.clip, np.isclose, np.dot, np.tensordot, np.einsum, np.inner,
    np.linalg.matmul, np.linalg.vecdot, np.linalg.tensordot, np.linalg.cross,
})

#: Entries of FUNCTIONS that return Python values, not arrays: the kind of value.
PYTHON_RESULT = {np.ndim: "int", np.shape: "tuple", np.size: "int", np.may_share_memory: "bool",
                 np.shares_memory: "bool", np.result_type: "dtype", np.iscomplexobj: "bool",
                 np.isrealobj: "bool"}


def result_kind(func: Callable) -> str:
    """The result kind of a registered NumPy function.

    Parameters
    ----------
    func : callable
        A key of ``FUNCTIONS``.

    Returns
    -------
    str
        ``SPARSE``, ``MIXED``, ``DENSE``, or ``'int'``/``'tuple'``/``'bool'``
        for the functions that return Python values.

    Raises
    ------
    KeyError
        If ``func`` is not registered.
    """
    if func not in FUNCTIONS:
        raise KeyError(func)
    if func in PYTHON_RESULT:
        return PYTHON_RESULT[func]
    return SPARSE if func in SPARSE_RESULT else MIXED if func in MIXED_RESULT else DENSE
