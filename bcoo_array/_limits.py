"""The densification guard: a limit on the dense arrays that functions build
implicitly from sparse input.

A function whose result (or an intermediate) is dense although its input is
sparse (``argsort`` returns a permutation of every position) calls
``check_dense`` with the shape and dtypes it is about to allocate
(``check_dense_arrays`` when they differ in shape: a densified input and a
Fourier transform of another length); above
the limit it raises a ``MemoryError`` naming the function, the shape,
the bytes, the limit, how to raise it and the explicit alternative
(``x.todense()``, which is never guarded). Only static shapes are read, so the
check works the same under ``jax.jit``.

The limit is, in order of precedence, the value given to
``set_max_dense_bytes``, the environment variable
``BCOO_ARRAY_MAX_DENSE_BYTES`` (read at every check), or 2 GiB.
"""

from __future__ import annotations

import math
import operator
import os

import numpy as np

#: Environment variable holding the limit in bytes (an integer; "inf" or "none" for no limit).
MAX_DENSE_BYTES_ENV = "BCOO_ARRAY_MAX_DENSE_BYTES"
#: The limit when neither ``set_max_dense_bytes`` nor the environment variable sets one: 2 GiB.
DEFAULT_MAX_DENSE_BYTES = 2 * 1024**3

_override: int | None = None
_UNLIMITED = ("inf", "none", "unlimited")


def _parse(value, source: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        if text.lower() in _UNLIMITED:
            return None
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{source}={value!r} must be a whole number of bytes (or 'inf' for no limit)") from None
    elif isinstance(value, float) and math.isinf(value) and value > 0:
        return None
    else:
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"{source}={value!r} must be an int number of bytes, or None to reset") from None
    if value < 0:
        raise ValueError(f"{source}={value} must be non-negative")
    return value


def get_max_dense_bytes() -> float:
    """The current limit on implicit dense allocations, in bytes (``inf`` when unlimited).

    Returns
    -------
    int or float
        The value set by ``set_max_dense_bytes``, else the environment
        variable ``BCOO_ARRAY_MAX_DENSE_BYTES``, else 2 GiB (2147483648).

    Raises
    ------
    ValueError
        If the environment variable is not a non-negative integer (or ``inf``).
    """
    if _override is not None:
        return math.inf if _override == -1 else _override
    env = os.environ.get(MAX_DENSE_BYTES_ENV)
    if env is None or not env.strip():
        return DEFAULT_MAX_DENSE_BYTES
    lim = _parse(env, MAX_DENSE_BYTES_ENV)
    return math.inf if lim is None else lim


def set_max_dense_bytes(limit) -> float:
    """Set the limit on dense arrays built implicitly from sparse input.

    Functions whose result or intermediate is inherently dense on a sparse
    input (``argsort``, ``unique_values`` of an array with a NaN fill value,
    ...) check the bytes they would allocate against this limit first and
    raise ``MemoryError`` above it. Explicit densification
    (``x.todense()``) is never limited.

    Parameters
    ----------
    limit : int, float('inf') or None
        The new limit in bytes; ``float('inf')`` (or the string ``"inf"``)
        removes it; None goes back to the environment variable
        ``BCOO_ARRAY_MAX_DENSE_BYTES`` or the default of 2 GiB.

    Returns
    -------
    int or float
        The previous limit (as ``get_max_dense_bytes`` gave it), so
        ``old = set_max_dense_bytes(n); ...; set_max_dense_bytes(old)``
        restores it.

    Raises
    ------
    TypeError
        If ``limit`` is not an integer, ``inf`` or None.
    ValueError
        If ``limit`` is negative.
    """
    global _override
    previous = get_max_dense_bytes()
    if limit is None:
        _override = None
        return previous
    lim = _parse(limit, "limit")
    _override = -1 if lim is None else lim
    return previous


def _human(n: float) -> str:
    for unit, size in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def dense_bytes(shape, *dtypes) -> int:
    """Bytes of one dense array of ``shape`` per dtype in ``dtypes``, summed."""
    n = math.prod(int(s) for s in shape)
    return n * sum(np.dtype(d).itemsize for d in dtypes)


def check_dense(name: str, shape, *dtypes, what: str = "", alternative: str = "") -> None:
    """Raise ``MemoryError`` if dense arrays of ``shape`` in ``dtypes`` exceed the limit.

    Parameters
    ----------
    name : str
        The public function about to densify (``"argsort"``).
    shape : tuple of int
        The static shape of the dense arrays.
    *dtypes : dtype
        One dtype per dense array of that shape (the densified input, the
        result, ...); their bytes are summed.
    what : str
        What the arrays are, for the message (``"the dense input and the
        index result"``).
    alternative : str
        The explicit way to get the same answer (``"jax.numpy.argsort(x.todense())"``).

    Raises
    ------
    MemoryError
        Naming the function, shape, bytes, limit, how to raise it and the
        explicit alternative.
    """
    check_dense_arrays(name, [(shape, dtypes)], what=what, alternative=alternative)


def check_dense_arrays(name: str, arrays, *, what: str = "", alternative: str = "") -> None:
    """``check_dense`` for dense arrays of several shapes (a densified input and a result of another shape).

    Parameters
    ----------
    name : str
        The public function about to densify (``"fft.rfft"``).
    arrays : sequence of (shape, dtype or sequence of dtype)
        Each static shape with the dtype (or dtypes, one array each) of the
        dense arrays of that shape; all their bytes are summed.
    what, alternative : str
        As for ``check_dense``.

    Raises
    ------
    MemoryError
        Above the limit, with ``check_dense``'s message (one ``shape ... and
        dtype ...`` part per shape).
    """
    parts: dict = {}  # shape -> dtypes, in order of first appearance (arrays of one shape are named together)
    nbytes = 0
    for shape, dts in arrays:
        dts = (dts,) if isinstance(dts, (str, type, np.dtype)) else tuple(dts)
        shape = tuple(int(s) for s in shape)
        nbytes += dense_bytes(shape, *dts)
        parts.setdefault(shape, []).extend(dts)
    limit = get_max_dense_bytes()
    if nbytes <= limit:
        return
    arrays_text = ", and of ".join(f"shape {shape} and dtype {', '.join(str(np.dtype(d)) for d in dts)}"
                                   for shape, dts in parts.items())
    desc = f" ({what})" if what else ""
    alt = alternative or "x.todense()"
    raise MemoryError(
        f"{name}() would allocate dense arrays of {arrays_text}{desc}: "
        f"{nbytes:,} bytes ({_human(nbytes)}), above the limit of {int(limit):,} bytes ({_human(limit)}) on "
        f"implicit densification. Densify explicitly instead ({alt}), or raise the limit with "
        f"bcoo_array.set_max_dense_bytes(n) or the environment variable {MAX_DENSE_BYTES_ENV}=n "
        f"(bytes; 'inf' for no limit)."
    )


def check_entries(name: str, n_entries: int, dtype, index_dtype, n_sparse: int, block: int = 1, *,
                  what: str = "", alternative: str = "") -> None:
    """Raise ``MemoryError`` if ``n_entries`` stored entries would exceed the limit of ``check_dense``.

    For operations whose *sparse* result stores about as many entries as a
    dense array has positions (a broadcast that materializes every batch
    element, an outer broadcast, assigning a slice): each entry holds
    ``block`` values of ``dtype`` and ``n_sparse`` indices of
    ``index_dtype``. The same limit, message and remedies as densification.
    """
    nbytes = int(n_entries) * (int(block) * np.dtype(dtype).itemsize + int(n_sparse) * np.dtype(index_dtype).itemsize)
    limit = get_max_dense_bytes()
    if nbytes <= limit:
        return
    desc = f" ({what})" if what else ""
    alt = f" ({alternative})" if alternative else ""
    raise MemoryError(
        f"{name}() would store {int(n_entries):,} entries{desc}: {nbytes:,} bytes ({_human(nbytes)}) of values "
        f"and indices, above the limit of {int(limit):,} bytes ({_human(limit)}) on implicit densification. "
        f"Work on a smaller piece or densify explicitly{alt}, or raise the limit with "
        f"bcoo_array.set_max_dense_bytes(n) or the environment variable {MAX_DENSE_BYTES_ENV}=n "
        f"(bytes; 'inf' for no limit)."
    )


__all__ = ["DEFAULT_MAX_DENSE_BYTES", "MAX_DENSE_BYTES_ENV", "check_dense", "check_dense_arrays", "check_entries",
           "dense_bytes", "get_max_dense_bytes", "set_max_dense_bytes"]
