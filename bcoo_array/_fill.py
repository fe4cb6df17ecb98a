"""Fill values: exact conversion to a dtype, exact comparison, hashable keys
and evaluation of a function on fill values.

Every BCOOArray carries its fill value as a NumPy scalar of its dtype (static
metadata, never traced). Comparisons here are bit-exact: NaN equals NaN and
``-0.0`` differs from ``0.0``, so dropping entries equal to the fill value
loses nothing.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ._shapes import is_concrete, is_tracer


def fill_scalar(value, dtype: np.dtype) -> np.generic:
    """Return ``value`` as a NumPy scalar of ``dtype``, refusing lossy casts.

    Raises
    ------
    TypeError
        If ``value`` is not a scalar.
    ValueError
        If ``value`` cannot be represented exactly in ``dtype``.
    """
    if is_tracer(value):
        raise TypeError(
            "fill_value must be a concrete scalar, not a traced value: the fill value is static "
            "metadata of a BCOOArray. Compute it outside jax.jit or pass it as a static argument."
        )
    arr = np.asarray(value)
    if arr.ndim != 0:
        raise TypeError(f"fill_value must be a scalar, got an array of shape {arr.shape}")
    if arr.dtype.kind == "c" and dtype.kind != "c":
        if arr.imag != 0:
            raise ValueError(f"fill_value={value!r} has an imaginary part; {dtype} cannot hold it")
        arr = arr.real  # an exactly real complex: cast its real part (no ComplexWarning)
    with np.errstate(all="ignore"):
        out = arr.astype(dtype)
        lossy = False
        if arr.dtype.kind == "c" and dtype.kind != "c":
            lossy = bool(arr.imag != 0)
        if dtype.kind in "biu":
            lossy = lossy or not same_value_np(out.astype(arr.dtype), arr)
        elif arr.dtype.kind in "fc":
            lossy = lossy or bool(np.isfinite(arr) and not np.isfinite(out))
    if lossy:
        raise ValueError(f"fill_value={value!r} cannot be represented as {dtype}; pick a fill value of that dtype")
    return out[()]


def same_value_np(a, b) -> bool:
    """Whether two NumPy scalars hold the same value, NaN equal to NaN and -0.0 distinct from 0.0."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype == b.dtype and a.tobytes() == b.tobytes():
        return True  # the common case (is the fill value zero?), without the general comparison below
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        ac, bc = np.asarray(a, dtype=complex), np.asarray(b, dtype=complex)
        parts = [(ac.real, bc.real), (ac.imag, bc.imag)]
        return bool(all(
            (np.isnan(x) and np.isnan(y)) or (x == y and np.signbit(x) == np.signbit(y)) for x, y in parts
        ))
    return bool(a == b)


def zero_fill(fill) -> bool:
    """Whether a fill value is exactly ``+0`` (bits of zero): unstored entries are structural zeros.

    The meaning every kernel needs (a product skips unstored entries, a
    union's unstored side adds nothing, a sum counts nothing for them). A
    fill of ``-0.0`` is not zero here: ``1 / x`` gives ``-inf`` there, and
    ``x + 0.0`` changes its sign bit. ``fill`` is a NumPy scalar (a
    BCOOArray's ``fill_value``).
    """
    f = np.asarray(fill)
    zero = _ZERO_BYTES.get(f.dtype)
    if zero is None:
        zero = _ZERO_BYTES[f.dtype] = np.zeros((), f.dtype).tobytes()
    return f.tobytes() == zero


_ZERO_BYTES: dict = {}  # dtype -> the bytes of its zero (``zero_fill`` runs on every product)


def reads_as_zero(fill) -> bool:
    """Whether a fill value compares equal to zero (``-0.0`` included): what a library without fill values
    (scipy.sparse, jax.experimental.sparse, ``.npz`` files) would read back for the unstored entries.

    The meaning of conversions, which lose only the sign of a ``-0.0`` fill (scipy has no fill value), never
    a value. Kernels use [`zero_fill`][bcoo_array._fill.zero_fill].
    """
    f = np.asarray(fill)
    return zero_fill(f) or (f.dtype.kind in "fc" and bool(f == 0))


def same_value(x, fill):
    """Elementwise: does ``x`` hold exactly the value ``fill`` (jnp, traceable)?

    NaN matches NaN and ``-0.0`` does not match ``0.0``, so dropping the entries
    where this holds loses nothing.
    """
    fill = jnp.asarray(fill, dtype=x.dtype)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        return same_value(x.real, fill.real) & same_value(x.imag, fill.imag)
    if jnp.issubdtype(x.dtype, jnp.floating):  # (by bits: XLA on a CPU compares a subnormal equal to 0)
        both_nan = jnp.isnan(x) & jnp.isnan(fill)
        return both_nan | (same_float(x, fill) & (jnp.signbit(x) == jnp.signbit(fill)))
    return x == fill


def exact_zero(v):
    """Elementwise, traceable: whether ``v`` (real floats) is +0 or -0 by its bits. XLA on a CPU compares
    subnormals as zeros (``v == 0`` holds for them there), where NumPy and IEEE 754 do not."""
    uint = jnp.dtype(f"uint{8 * jnp.dtype(v.dtype).itemsize}")
    magnitude = jnp.asarray(np.iinfo(uint).max >> 1, uint)  # every bit but the sign's
    return (jax.lax.bitcast_convert_type(v, uint) & magnitude) == 0


def same_float(x, y):
    """Elementwise, traceable: ``x == y`` of real floats (NaN aside) from their bits, equal bits or two
    zeros, so that subnormals compare as IEEE 754 says on every backend (``exact_zero``)."""
    y = jnp.asarray(y, x.dtype)
    uint = jnp.dtype(f"uint{8 * jnp.dtype(x.dtype).itemsize}")
    same_bits = jax.lax.bitcast_convert_type(x, uint) == jax.lax.bitcast_convert_type(y, uint)
    return same_bits | (exact_zero(x) & exact_zero(y))


def fill_key(fill: np.generic) -> tuple[str, bytes]:
    """A hashable key that identifies a fill value exactly (NaN included)."""
    arr = np.asarray(fill)
    return (arr.dtype.str, arr.tobytes())


def fill_from_key(key: tuple[str, bytes]) -> np.generic:
    """Inverse of ``fill_key``."""
    return np.frombuffer(key[1], dtype=np.dtype(key[0]))[0]


_FILL_RESULTS: "OrderedDict[tuple, np.generic]" = OrderedDict()
_FILL_RESULTS_SIZE = 1024
_FILL_LOCK = threading.Lock()


def eval_fill(fn: Callable, *fills) -> np.generic:
    """Evaluate ``fn`` on scalar fill values at trace time; a NumPy scalar.

    ``fn`` runs through JAX (so the result is exactly what the same function
    gives on stored entries); results are remembered per ``(fn, fills)``,
    since an eager JAX call costs far more than the lookup. The key holds
    ``fn`` itself, so a function's id is never reused while it is cached.
    """
    key = (fn, *(fill_key(np.asarray(f)) for f in fills))
    with _FILL_LOCK:
        hit = _FILL_RESULTS.get(key)
    if hit is not None:
        return hit
    with jax.ensure_compile_time_eval():
        out = np.asarray(fn(*(jax.device_put(np.asarray(f)) for f in fills)))[()]
    with _FILL_LOCK:
        _FILL_RESULTS[key] = out
        while len(_FILL_RESULTS) > _FILL_RESULTS_SIZE:
            _FILL_RESULTS.popitem(last=False)
    return out


@functools.lru_cache(maxsize=None)
def _values_and_fill(fn: Callable):
    """``fn`` on stored values and on fill values, as one compiled program (one per ``fn``)."""
    def run(args, fills):
        return fn(*args), fn(*fills)

    return jax.jit(run)


def on_one_device(args) -> bool:
    """Whether every concrete operand is a NumPy value or a JAX array on a single device."""
    for a in args:
        if isinstance(a, jax.Array):
            if len(a.sharding.device_set) != 1:
                return False
        elif not isinstance(a, (np.ndarray, np.generic)):
            return False
    return True


def apply_with_fill(fn: Callable, args: tuple, fills: tuple):
    """``fn(*args)`` on stored values and ``fn(*fills)`` on fill values: ``(values, fill)``.

    Eagerly (concrete operands on one device) both run in one compiled
    program, cached per ``fn`` and operand shapes, instead of one XLA program
    per primitive of ``fn`` plus one for the fill value: a first call of an
    element-wise function compiles once. While tracing, ``fn`` joins the
    trace and the fill value comes from ``eval_fill``. ``fn`` must be a
    stable function (module level, or from a cached factory), since the
    compiled program is cached on it. A function with a false
    ``fuse_complex`` attribute runs primitive by primitive on complex
    operands (see ``_elementwise_functions._complex_fix``).

    Returns
    -------
    values : array
        ``fn(*args)``.
    fill : numpy.generic
        ``fn(*fills)``, exactly what ``fn`` gives on stored entries.
    """
    if not (is_concrete(*args) and on_one_device(args)) or (
            not getattr(fn, "fuse_complex", True) and any(np.dtype(a.dtype).kind == "c" for a in args)):
        return fn(*args), eval_fill(fn, *fills)
    values, fill = _values_and_fill(fn)(tuple(args), tuple(np.asarray(f) for f in fills))
    if is_tracer(fill):  # concrete operands inside an outer trace (shard_map, jit): staged out
        return values, eval_fill(fn, *fills)
    return values, np.asarray(fill)[()]


class Twin:
    """An element-wise function with its JAX and NumPy implementations of the same meaning.

    Calling it runs the JAX one (traced code, the XLA engine); the host
    engine runs ``numpy`` on host buffers (``host_apply``). Instances are
    stable keys for the compiled-program caches, like module-level functions.

    Parameters
    ----------
    jax_fn : callable
        The JAX implementation (the reference for dtypes and special cases).
    numpy_fn : callable or None
        The NumPy twin, or None where none exists (the XLA engine then runs).
    complex_ok : bool
        False when the NumPy twin does not give the standard's complex special
        cases; complex operands then take the JAX implementation.
    """

    __slots__ = ("jax_fn", "numpy_fn", "complex_ok", "fuse_complex", "dtype", "__name__", "__wrapped__",
                 "__weakref__")

    def __init__(self, jax_fn: Callable, numpy_fn: Callable | None, *, complex_ok: bool = True, dtype=None):
        self.dtype = None if dtype is None else np.dtype(dtype)  # a fixed result dtype (casts), else derived
        self.jax_fn = jax_fn
        self.numpy_fn = numpy_fn
        self.complex_ok = complex_ok
        self.fuse_complex = getattr(jax_fn, "fuse_complex", True)
        self.__name__ = getattr(jax_fn, "__name__", "twin")
        self.__wrapped__ = jax_fn

    def __call__(self, *args):
        return self.jax_fn(*args)

    def __repr__(self) -> str:
        return f"Twin({self.__name__})"


_RESULT_DTYPES: dict = {}


def result_dtype(fn: Twin, dtypes: tuple) -> np.dtype:
    """The dtype ``fn``'s JAX implementation gives for operands of ``dtypes`` (cached per ``fn`` and dtypes).

    NumPy's answer on 0-d operands is taken where it must agree with JAX's
    (bool, an operand's dtype, or the real dtype of a complex operand); any
    other answer (``divide`` of integers: NumPy float64, JAX float32 below
    int64) asks JAX by a trace (``jax.eval_shape``, no compilation).
    ``tests/test_engine.py`` checks the rule against JAX for every function
    and dtype.
    """
    if fn.dtype is not None:
        return fn.dtype
    key = (fn, dtypes)
    dt = _RESULT_DTYPES.get(key)
    if dt is None:
        with np.errstate(all="ignore"):
            got = np.asarray(fn.numpy_fn(*(np.zeros((), d) for d in dtypes))).dtype
        reals = {np.dtype(d.char.lower()) for d in dtypes if d.kind == "c"}
        if got == np.bool_ or got in dtypes or got in reals:
            dt = got
        else:
            dt = np.dtype(jax.eval_shape(fn.jax_fn, *(jax.ShapeDtypeStruct((), d) for d in dtypes)).dtype)
        _RESULT_DTYPES[key] = dt
    return dt


def host_apply(fn: Callable, args: tuple, fills: tuple):
    """The host engine's ``apply_with_fill``: ``fn``'s NumPy twin on host values and on the fill values.

    Parameters
    ----------
    fn : Twin
        The function; its JAX implementation fixes the result dtype.
    args : tuple of numpy.ndarray
        Host operands (stored values, gathered dense values), of one dtype.
    fills : tuple of scalars
        The fill values matching ``args``.

    Returns
    -------
    (values, fill) or None
        NumPy values of JAX's result dtype (sharing the operand's buffer when
        ``fn`` returns it, as ``real`` of a real array: held buffers are never
        written to) and the result's fill value (a NumPy scalar); None when ``fn`` has no NumPy twin for
        these dtypes, or NumPy refuses the values (integers to negative
        integer powers): the caller then runs the XLA engine.
    """
    np_fn = getattr(fn, "numpy_fn", None)
    if np_fn is None:
        return None
    dtypes = tuple(np.dtype(a.dtype) for a in args)
    if not fn.complex_ok and any(d.kind == "c" for d in dtypes):
        return None
    out_dt = result_dtype(fn, dtypes)
    try:
        with np.errstate(all="ignore"):
            values = np.asarray(np_fn(*args))
            fill = np.asarray(np_fn(*(np.asarray(f, d) for f, d in zip(fills, dtypes))))
    except (ValueError, OverflowError, TypeError):
        return None
    if values.dtype != out_dt:
        values = values.astype(out_dt)
    return values, fill.astype(out_dt)[()]
