"""Test helpers: a Hypothesis strategy that draws a dense NumPy array together
with a BCOOArray representing it in an arbitrary (messy) BCOO layout, and
comparison helpers against that NumPy oracle.

The BCOOArray is always built through the public constructor
``BCOOArray((data, indices), shape=..., fill_value=...)`` and deliberately
contains everything the format allows:

* any split of the dimensions into batch / sparse / dense (``n_batch``,
  ``n_dense``), including ``n_sparse == 0``;
* a fill value that is 0, another small value, or NaN;
* duplicate entries (a stored block split into two blocks that sum to it
  exactly: small integers for numbers, True/True or False/False for bool);
* stored entries whose value equals the fill value;
* padding entries (an index equal to its dimension's size) holding garbage;
* entries in random order, ``nse == 0``, 0-d arrays and zero-size shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array import BCOOArray

#: dtypes drawn by default (x64 is on for the test session).
DTYPES = (
    np.dtype(np.bool_),
    np.dtype(np.int8),
    np.dtype(np.int32),
    np.dtype(np.int64),
    np.dtype(np.uint8),
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.complex128),
)
NUMERIC = tuple(d for d in DTYPES if d.kind != "b")
REAL = tuple(d for d in DTYPES if d.kind in "iuf")
FLOAT = tuple(d for d in DTYPES if d.kind in "fc")


@dataclass
class Case:
    """A dense oracle and a BCOOArray holding the same values."""

    dense: np.ndarray
    arr: BCOOArray
    n_batch: int
    n_dense: int
    fill: np.generic

    def __repr__(self) -> str:  # Hypothesis prints this on failure
        return (
            f"Case(shape={self.dense.shape}, dtype={self.dense.dtype}, n_batch={self.n_batch}, "
            f"n_dense={self.n_dense}, fill={self.fill!r}, nse={self.arr.nse},\n"
            f"  dense={self.dense!r},\n  data={np.asarray(self.arr.data)!r},\n"
            f"  indices={np.asarray(self.arr.indices)!r})"
        )


def shapes(min_ndim: int = 0, max_ndim: int = 4, max_side: int = 3):
    """Small shapes of 0-4 dimensions with sizes 0..max_side (0 and 1 included)."""
    return st.lists(st.integers(0, max_side), min_size=min_ndim, max_size=max_ndim).map(tuple)


class HypothesisDraws:
    """The random choices of :func:`build_case`, made by Hypothesis's ``draw``."""

    def __init__(self, draw):
        self.draw = draw

    def shape(self, min_ndim: int, max_ndim: int, max_side: int) -> tuple:
        return self.draw(shapes(min_ndim, max_ndim, max_side))

    def sample(self, seq):
        return self.draw(st.sampled_from(seq))

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def integers(self, lo: int, hi: int, n: int) -> list:
        return self.draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))

    def boolean(self) -> bool:
        return self.draw(st.booleans())

    def booleans(self, n: int) -> list:
        return self.draw(st.lists(st.booleans(), min_size=n, max_size=n))

    def permutation(self, n: int) -> list:
        return self.draw(st.permutations(range(n)))


class GeneratorDraws:
    """The random choices of :func:`build_case`, made by a ``numpy.random.Generator``
    (the differential fuzz, conformance/test_fuzz.py)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def shape(self, min_ndim: int, max_ndim: int, max_side: int) -> tuple:
        n = int(self.rng.integers(min_ndim, max_ndim + 1))
        return tuple(int(v) for v in self.rng.integers(0, max_side + 1, size=n))

    def sample(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def integer(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def integers(self, lo: int, hi: int, n: int) -> list:
        return [int(v) for v in self.rng.integers(lo, hi + 1, size=n)]

    def boolean(self) -> bool:
        return bool(self.rng.integers(2))

    def booleans(self, n: int) -> list:
        return [bool(v) for v in self.rng.integers(2, size=n)]

    def permutation(self, n: int) -> list:
        return [int(v) for v in self.rng.permutation(n)]


def _values(d, dtype: np.dtype, n: int, *, nan: bool, inf: bool = False) -> np.ndarray:
    """``n`` small values exactly representable in ``dtype`` (NaN and +-inf optional)."""
    if dtype.kind == "b":
        return np.array(d.booleans(n), dtype=bool)
    lo = 0 if dtype.kind == "u" else -4
    out = np.array(d.integers(lo, 4, n), dtype=np.int64).astype(dtype)
    if dtype.kind == "c":
        out = out + 1j * np.array(d.integers(-2, 2, n), dtype=dtype)
    if dtype.kind in "fc" and nan and n:
        mask = np.array(d.booleans(n))
        mask &= np.array(d.integers(0, 5, n)) == 0
        out[mask] = np.nan
    if dtype.kind in "fc" and inf and n:
        mask = np.array(d.integers(0, 7, n)) == 0
        out[mask] = np.array(d.sample([np.inf, -np.inf]), dtype=dtype)
    return out.astype(dtype)


def fill_options(dtype: np.dtype, *, nan: bool = True) -> list:
    """The fill values :func:`fill_values` draws from (0 twice: the most common)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return [np.bool_(False), np.bool_(False), np.bool_(True)]
    opts = [0, 0, 2] if dtype.kind == "u" else [0, 0, -1, 3]
    vals = [np.asarray(v).astype(dtype)[()] for v in opts]
    if dtype.kind in "fc" and nan:
        vals.append(np.asarray(np.nan).astype(dtype)[()])
    return vals


def fill_values(dtype: np.dtype, *, nan: bool = True):
    """Fill values for ``dtype``: 0 (most often), another small value, or NaN."""
    return st.sampled_from(fill_options(dtype, nan=nan))


def _split(d, block: np.ndarray, dtype: np.dtype):
    """Two blocks that sum (logical or for bool) exactly to ``block``."""
    if dtype.kind == "b":
        return block.copy(), block.copy()
    lo = 0 if dtype.kind == "u" else -2
    part = np.array(d.integers(lo, 2, block.size), dtype=np.int64).reshape(block.shape)
    if dtype.kind == "u":
        part = np.minimum(part, block.astype(np.int64))
    part = part.astype(dtype)
    with np.errstate(invalid="ignore"):
        rest = block - part  # NaN stays NaN; integers stay small, so no overflow
    return part, rest.astype(dtype)


@st.composite
def cases(draw, **kw) -> Case:
    """Draw a :class:`Case`: a dense NumPy array and an equal BCOOArray.

    Keyword arguments are those of :func:`build_case`; they fix parts of the
    draw (``shape``, ``dtype``, ``fill``, ``n_batch``, ``n_dense``);
    everything else is random.
    """
    return build_case(HypothesisDraws(draw), **kw)


def build_case(d, *, shape=None, dtype=None, dtypes=DTYPES, min_ndim: int = 0, max_ndim: int = 4,
               max_side: int = 3, fill=None, nan_fill: bool = True, nan_values: bool = True,
               inf_values: bool = False, n_batch=None, n_dense=None, allow_duplicates: bool = True,
               allow_padding: bool = True, allow_explicit_fill: bool = True, nse_multiple: int = 1) -> Case:
    """Build a :class:`Case` from the random choices of ``d``.

    ``d`` is a :class:`HypothesisDraws` (the strategy :func:`cases`) or a
    :class:`GeneratorDraws` (a seeded NumPy generator: the fuzz).
    ``inf_values`` also stores ``+-inf`` among the values of float dtypes;
    ``nse_multiple`` adds padding (where there is a sparse dimension) until
    ``nse`` is a multiple of it (fewer distinct buffer shapes, so fewer XLA
    compilations in a long fuzz).
    """
    if shape is None:
        shape = d.shape(min_ndim, max_ndim, max_side)
    shape = tuple(shape)
    ndim = len(shape)
    dtype = np.dtype(dtype) if dtype is not None else d.sample(dtypes)
    if n_batch is None:
        n_batch = d.integer(0, ndim)
    if n_dense is None:
        n_dense = d.integer(0, ndim - n_batch)
    if fill is None:
        fill = d.sample(fill_options(dtype, nan=nan_fill))
    fill = np.asarray(fill).astype(dtype)[()]
    n_sparse = ndim - n_batch - n_dense
    batch = shape[:n_batch]
    sizes = shape[n_batch:n_batch + n_sparse]
    dshape = shape[n_batch + n_sparse:]
    B = int(np.prod(batch, dtype=np.int64))
    P = int(np.prod(sizes, dtype=np.int64))
    D = int(np.prod(dshape, dtype=np.int64))

    def values(n, nan):
        return _values(d, dtype, n, nan=nan, inf=inf_values and nan)

    dense = np.full((B, P, D), fill, dtype=dtype)
    per_batch = []  # list of (index tuples, data blocks) per batch element
    for b in range(B):
        stored = d.booleans(P) if P else []
        entries_i, entries_d = [], []
        for p in range(P):
            if not stored[p]:
                continue
            block = values(D, nan_values)
            if allow_explicit_fill and D and d.integer(0, 4) == 0:
                block = np.full(D, fill, dtype)  # an explicit entry equal to the fill value
            dense[b, p] = block
            idx = np.unravel_index(p, sizes) if sizes else ()
            if allow_duplicates and d.integer(0, 3) == 0:
                b1, b2 = _split(d, block, dtype)
                entries_i += [idx, idx]
                entries_d += [b1, b2]
            else:
                entries_i.append(idx)
                entries_d.append(block)
        if not sizes and P == 1 and not entries_i and d.boolean():
            # n_sparse == 0: every stored entry sits at the single position ().
            block = values(D, nan_values)
            dense[b, 0] = block
            entries_i.append(())
            entries_d.append(block)
        per_batch.append((entries_i, entries_d))
    counts = [len(e[0]) for e in per_batch]
    can_pad = allow_padding and n_sparse > 0
    extra = d.integer(0, 2) if can_pad else 0
    nse = (max(counts) if counts else 0) + extra
    if can_pad and nse_multiple > 1:
        nse = -(-nse // nse_multiple) * nse_multiple
    data = np.zeros((B, nse, D), dtype=dtype)
    indices = np.zeros((B, nse, n_sparse), dtype=np.int64)
    for b, (ei, ed) in enumerate(per_batch):
        rows_i = [np.asarray(i, dtype=np.int64).reshape(n_sparse) for i in ei]
        rows_d = list(ed)
        if n_sparse == 0 and len(rows_i) < nse:
            # No padding exists without a sparse dimension: top up with an
            # explicit copy of the block (if nothing is stored) and zeros.
            zero = np.zeros(D, dtype)
            rows_d += [dense[b, 0].copy() if not rows_d else zero] + [zero] * (nse - len(rows_i) - 1)
            rows_i += [np.zeros(0, np.int64)] * (nse - len(rows_i))
        while len(rows_i) < nse:  # padding: at least one index equals its dimension's size
            pad = np.array([d.integer(0, s) for s in sizes], dtype=np.int64)
            j = d.integer(0, n_sparse - 1)
            pad[j] = sizes[j]
            if d.boolean():
                pad[:] = sizes
            rows_i.append(pad)
            rows_d.append(values(D, False))  # garbage, must be ignored
        perm = d.permutation(nse) if nse > 1 else list(range(nse))
        for dst, src in enumerate(perm):
            indices[b, dst] = rows_i[src]
            data[b, dst] = rows_d[src]
    dense = dense.reshape(shape)
    data = data.reshape(batch + (nse,) + dshape)
    indices = indices.reshape(batch + (nse, n_sparse))
    arr = BCOOArray((data, indices), shape=shape, fill_value=fill)
    return Case(dense=dense, arr=arr, n_batch=n_batch, n_dense=n_dense, fill=fill)


# -- comparisons ------------------------------------------------------------------------


def to_np(x) -> np.ndarray:
    """Dense NumPy value of a BCOOArray (or any array)."""
    if isinstance(x, BCOOArray):
        return np.asarray(x.todense())
    return np.asarray(x)


def same_scalar(a, b) -> bool:
    """Bit-level equality of two scalars up to NaN payload (NaN == NaN, -0.0 == 0.0 allowed)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "fc":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))
    return bool(a == b)


def assert_matches(result, expected, *, dtype=None, rtol: float | None = None, check_fill: bool = True):
    """Assert that BCOOArray ``result`` equals the NumPy ``expected`` entry by entry.

    Checks shape, dtype (``expected.dtype`` unless ``dtype`` is given) and
    values (NaN equal to NaN; exact unless ``rtol`` is given). Also checks
    that the result's layout is self-consistent (nse, n_batch, n_dense agree
    with the buffers) and that its fill value is a scalar of its dtype.
    """
    expected = np.asarray(expected)
    assert isinstance(result, BCOOArray), type(result)
    assert result.shape == expected.shape, (result.shape, expected.shape)
    want = np.dtype(dtype) if dtype is not None else expected.dtype
    assert result.dtype == want, (result.dtype, want)
    assert result.data.shape[result.n_batch] == result.nse
    assert result.indices.shape[-1] == result.ndim - result.n_batch - result.n_dense
    if check_fill:
        assert np.asarray(result.fill_value).dtype == result.dtype
    got = to_np(result)
    assert got.dtype == want
    assert got.shape == expected.shape
    if rtol is None:
        np.testing.assert_array_equal(got, expected.astype(want, copy=False))
    else:
        np.testing.assert_allclose(got, expected.astype(want, copy=False), rtol=rtol, atol=rtol, equal_nan=True)


def tol(dtype) -> float:
    """A relative tolerance for transcendental results in ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype in (np.float32, np.complex64):
        return 2e-5
    if dtype == np.float16:
        return 2e-3
    return 1e-12


__all__ = ["DTYPES", "FLOAT", "NUMERIC", "REAL", "Case", "GeneratorDraws", "HypothesisDraws", "assert_matches",
           "build_case", "cases", "fill_options", "fill_values", "same_scalar", "shapes", "to_np", "tol", "xp"]
