"""Moving buffers between JAX and NumPy on the CPU without needless copies.

Structural work (merging patterns, slicing rows, planning products) runs in
NumPy and scipy on the host. ``host_buffers`` gives zero-copy NumPy
views of concrete CPU buffers; ``to_device`` hands NumPy results to JAX
from a 64-byte aligned buffer. JAX copies host data into its own buffer
either way (checked: a later write to the NumPy array does not reach the
JAX array, so a user's scipy matrix is never aliased), but from an aligned
source the copy is about 2-3x faster here than from NumPy's default
16-byte alignment (40k int32: 89 us against 250 us).
"""

from __future__ import annotations

import jax
import numpy as np

from .._shapes import is_concrete

from .._engine import cpu_only as _cpu_only
from .._engine import single_cpu


def on_host(a) -> bool:
    """Whether concrete array ``a`` (JAX or NumPy) lives in host memory (a view costs no transfer)."""
    if _cpu_only() or isinstance(a, np.ndarray):
        return True
    return all(d.platform == "cpu" for d in a.devices())


def host_buffers(*arrays):
    """Zero-copy NumPy views of concrete CPU arrays, or None (traced, or on another device)."""
    if not is_concrete(*arrays):
        return None
    if _cpu_only():  # skip the per-array device query (a few microseconds each, on every eager call)
        return [np.asarray(a) for a in arrays]
    out = []
    for a in arrays:
        try:
            if any(d.platform != "cpu" for d in a.devices()):
                return None
        except AttributeError:  # a NumPy array already
            pass
        out.append(np.asarray(a))
    return out


def _address(x: np.ndarray) -> int:
    return x.__array_interface__["data"][0]  # (x.ctypes.data costs ~10 us)


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialised NumPy array whose buffer starts on a 64-byte boundary."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for s in shape:
        nbytes *= int(s)
    buf = np.empty(nbytes + 64, np.uint8)
    off = (-_address(buf)) % 64
    return buf[off:off + nbytes].view(dtype).reshape(shape)


#: Bytes below which ``host_empty`` takes NumPy's own allocation: copying such a buffer on its hand-off to JAX
#: costs less than aligning it on every call (``aligned_empty`` 2.6 us against ``np.empty`` 0.2 us).
SMALL_BUFFER = 4096


def host_empty(shape, dtype) -> np.ndarray:
    """An uninitialised buffer for a host result: ``aligned_empty`` when large (JAX adopts it without a copy),
    ``np.empty`` when smaller than ``SMALL_BUFFER`` bytes (``to_device`` copies a misaligned one)."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for s in shape:
        nbytes *= int(s)
    return np.empty(shape, dtype) if nbytes < SMALL_BUFFER else aligned_empty(shape, dtype)


def adopt(x: np.ndarray) -> jax.Array:
    """A NumPy array this package has just made, as a JAX array, with no XLA compilation.

    ``jnp.asarray`` of a NumPy array stages a small program per shape and
    dtype (``lax.stage``), which eager code pays as one compilation per new
    shape; ``to_device`` hands the buffer over without one (DLPack or
    ``jax.device_put``). Same as ``to_device(x, owned=True)``: ``x`` must
    not be written to again.
    """
    return to_device(np.asarray(x), owned=True)


def to_device(x: np.ndarray, *, owned: bool = False) -> jax.Array:
    """``x`` as a JAX array on the default CPU device.

    Parameters
    ----------
    x : numpy.ndarray
        Host buffer of any shape and dtype.
    owned : bool
        True only when ``x`` was just made by this package and nothing writes
        to it again: JAX may then keep ``x``'s memory without a copy. When
        False (the default; a user's buffer, or a view of one) the result is
        always a copy, so later writes to ``x`` never reach it.

    Returns
    -------
    jax.Array
        Same shape as ``x``; its dtype as JAX canonicalizes it (64-bit types
        become 32-bit ones when x64 is off, as ``jax.device_put`` does).

    Notes
    -----
    When JAX has a single device, a CPU, the buffer is handed over by DLPack
    (``jax.dlpack.from_dlpack``: no copy, no compilation, about half the
    fixed cost of ``jax.device_put`` here); otherwise ``jax.device_put``,
    whose result is not committed to a device (a DLPack import is), so it
    can meet arrays laid out on a mesh.
    """
    want = jax.dtypes.canonicalize_dtype(x.dtype)
    if not owned or _address(x) % 64 or not x.flags.c_contiguous or not x.flags.writeable or want != x.dtype:
        y = aligned_empty(x.shape, want)
        y[...] = x
        x = y
    if single_cpu() and x.dtype != np.bool_:
        return jax.dlpack.from_dlpack(x)
    # Uncommitted: free to join arrays on any device of a mesh. Evaluated now even inside a trace (a loop body
    # closing over the array): the buffer is concrete, and a tracer cached on an array would escape its trace.
    with jax.ensure_compile_time_eval():
        return jax.device_put(x)


def unique_ints(a) -> np.ndarray:
    """The sorted unique values of an integer array (flattened): ``np.unique(a)``, by a sort.

    NumPy 2.3+ answers a plain ``np.unique`` with a hash table that is
    pathologically slow on large or already sorted integer keys (measured
    with NumPy 2.4: 12 s for 10^7 random int64 keys, 12 s for sorted ones,
    against 0.13 s for a sort and a mask); index work on the host goes
    through this instead. Keys already strictly increasing (the positions of
    a canonical matrix) are returned as a copy without a sort. Keys that
    mostly ascend (``_sort_kind``) take NumPy's stable sort (timsort), which
    takes their runs as they come: 0.2 s for 10^7 block keys of a matrix
    sorted by row, against 1.3 s for the default sort, which serves the
    rest (on random keys timsort is 1.3-2x slower).

    Parameters
    ----------
    a : array_like of integers

    Returns
    -------
    numpy.ndarray
        1-D, sorted, of ``a``'s dtype.
    """
    flat = np.asarray(a).ravel()
    kind = _sort_kind(flat)
    if kind is None:
        return flat.copy()
    s = np.sort(flat, kind=kind)
    return s[_firsts(s)]


def _sort_kind(flat: np.ndarray) -> str | None:
    """How to sort the keys ``flat`` for the unique helpers: None where they are already strictly increasing
    (unique and sorted, as the positions of a canonical matrix: no sort), ``"stable"`` (timsort: runs merged
    as they come) where at most a quarter step down from the one before (partly sorted: block keys of a
    matrix sorted by row), else ``"quicksort"`` (introsort, faster on random keys)."""
    if flat.size < 2 or bool(np.all(flat[1:] > flat[:-1])):
        return None
    return "stable" if np.count_nonzero(flat[1:] < flat[:-1]) * 4 <= flat.size else "quicksort"


def _firsts(s: np.ndarray) -> np.ndarray:
    """Mask of the first element of each run of equal values of the sorted, non-empty ``s``."""
    keep = np.empty(s.size, bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return keep


def unique_inverse(a) -> tuple[np.ndarray, np.ndarray]:
    """The sorted unique values of an integer array (flattened) and each element's place among them:
    ``np.unique(a, return_inverse=True)`` (flattened), by a sort (``unique_ints``; the inverse needs the
    sort's permutation); keys already strictly increasing take no sort.

    Parameters
    ----------
    a : array_like of integers

    Returns
    -------
    (values, inverse) : numpy.ndarray, numpy.ndarray
        1-D; ``values`` sorted and of ``a``'s dtype, ``inverse`` int64 of
        ``a``'s size with ``values[inverse]`` equal to ``a`` flattened.
    """
    flat = np.asarray(a).ravel()
    kind = _sort_kind(flat)
    if kind is None:
        return flat.copy(), np.arange(flat.size, dtype=np.int64)
    order = np.argsort(flat, kind=kind)
    s = flat[order]
    keep = _firsts(s)
    inverse = np.empty(flat.size, np.int64)
    inverse[order] = np.cumsum(keep) - 1
    return s[keep], inverse


def unique_counts(a) -> tuple[np.ndarray, np.ndarray]:
    """The sorted unique values of an integer array (flattened) and how often each occurs:
    ``np.unique(a, return_counts=True)``, by a sort (``unique_ints``); keys already strictly increasing
    take no sort.

    Parameters
    ----------
    a : array_like of integers

    Returns
    -------
    (values, counts) : numpy.ndarray, numpy.ndarray
        1-D, ``values`` sorted and of ``a``'s dtype, ``counts`` int64 of the
        same length (both empty for an empty ``a``).
    """
    flat = np.asarray(a).ravel()
    kind = _sort_kind(flat)
    if kind is None:
        return flat.copy(), np.ones(flat.size, np.int64)
    s = np.sort(flat, kind=kind)
    starts = np.flatnonzero(_firsts(s))
    return s[starts], np.diff(starts, append=s.size).astype(np.int64)
