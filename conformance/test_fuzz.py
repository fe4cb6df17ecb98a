"""Differential fuzz: random layouts x dtypes x fill values x namespace functions,
eager and under ``jax.jit``, against dense NumPy (through array-api-strict).

Each case ``i`` of seed ``s`` draws everything from ``numpy.random.default_rng([s, i])``,
so one case reproduces on its own:

* a function from :data:`FUNCTIONS` (element-wise, reductions, manipulation,
  indexing, searching, linear algebra, sorting and sets, ``clip``/``astype``),
* its operands: BCOOArrays in messy layouts (``tests/_oracle.py``'s
  :func:`build_case`: any ``n_batch``/``n_dense``, duplicates, padding, unsorted
  entries, explicit fill entries) of 0-4 dimensions (zero-size included), all
  13 dtypes, fill values 0 / non-zero / NaN / +-inf; dense JAX arrays, NumPy
  arrays and Python scalars as the other operands of binary functions,
* its keyword arguments (axes, ``keepdims``, shifts, keys, ...).

The oracle is array-api-strict (NumPy underneath, with the standard's type
promotion) applied to the dense values. Values, dtype and shape must agree:
exactly for integers and bools, within a tolerance scaled to the dtype's eps
for floats, with NaN in the same positions. Both raising counts as agreement;
the library raising on input the oracle accepts is a mismatch. Every
jit-compatible case runs eagerly and, for the cases selected by
``BCOO_FUZZ_JIT``, again under ``jax.jit`` (BCOOArray and JAX operands traced,
NumPy operands and Python scalars closed over, so concrete).

Environment variables (see conformance/README.md):

``BCOO_FUZZ_CASES``  number of cases (default 200: the CI size).
``BCOO_FUZZ_SEED``   an integer, or ``random`` for a fresh seed (printed). The
                     default is a fixed seed, so CI is reproducible, like the
                     derandomized Hypothesis profile of tests/conftest.py.
``BCOO_FUZZ_START``  index of the first case (to run a long fuzz in chunks).
``BCOO_FUZZ_CASE``   run this one case index only (the repro of a failure).
``BCOO_FUZZ_ONLY``   comma-separated function names to draw from.
``BCOO_FUZZ_JIT``    run every n-th case under jit as well (default 2; 0: never).
``BCOO_FUZZ_LOG``    a file to which every mismatch is appended (one line each).
"""

from __future__ import annotations

import math
import operator
import os
import secrets
import sys
import traceback
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

xs = pytest.importorskip("array_api_strict")

from _oracle import GeneratorDraws, build_case

import bcoo_array as xp
from bcoo_array import BCOOArray
from bcoo_array._elementwise_functions import TABLE

API_VERSION = "2025.12"
CI_SEED = 20261201

ALL = tuple(np.dtype(n) for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                  "uint64", "float32", "float64", "complex64", "complex128"))
INTS = tuple(d for d in ALL if d.kind in "iu")
NUMERIC = tuple(d for d in ALL if d.kind != "b")
REAL = tuple(d for d in ALL if d.kind in "iuf")
FLOAT = tuple(d for d in ALL if d.kind in "fc")
RFLOAT = tuple(d for d in ALL if d.kind == "f")
CFLOAT = tuple(d for d in ALL if d.kind == "c")
CATEGORY = {
    "all": ALL, "numeric": NUMERIC, "real numeric": REAL, "floating-point": FLOAT,
    "real floating-point": RFLOAT, "integer": INTS, "integer or boolean": INTS + (np.dtype(bool),),
    "bool": (np.dtype(bool),),
}
#: Narrower than the table's category where the standard leaves the rest to the
#: implementation and array-api-strict refuses it.
NARROWER = {"divide": FLOAT, "imag": CFLOAT}
ERRORS = (TypeError, ValueError, IndexError, OverflowError, ZeroDivisionError)
#: Functions being rewritten elsewhere: their mismatches are reported apart.
SORTING_AREA = {"sort", "argsort", "searchsorted", "unique_all", "unique_counts", "unique_inverse",
                "unique_values"}


# -- operands -------------------------------------------------------------------------------


class Operand:
    """One argument of a case: ``kind`` is sparse (a BCOOArray), jax, numpy or scalar."""

    def __init__(self, kind, dense, arr=None):
        self.kind, self.dense, self.arr = kind, dense, arr

    def ours(self):
        if self.kind == "sparse":
            return self.arr
        if self.kind == "jax":
            return jnp.asarray(self.dense)
        return self.dense  # a NumPy array or a Python scalar

    def strict(self):
        return self.dense if self.kind == "scalar" else xs.asarray(np.asarray(self.dense))

    def describe(self):
        if self.kind == "scalar":
            return repr(self.dense)
        if self.kind == "sparse":
            a = self.arr
            return (f"BCOOArray(shape={a.shape}, dtype={a.dtype}, n_batch={a.n_batch}, n_dense={a.n_dense}, "
                    f"nse={a.nse}, fill={a.fill_value!r})")
        return f"{self.kind} array(shape={self.dense.shape}, dtype={self.dense.dtype})"


class Ctx:
    """The random choices of one case."""

    def __init__(self, rng):
        self.rng = rng
        self.d = GeneratorDraws(rng)
        # Complex infinities are left out: NumPy's complex functions do not follow the
        # standard's special cases (expm1(inf+0j) is inf+nanj in NumPy, inf+0j in the
        # standard and in bcoo_array); the official suite (run.py) checks those cases.
        self.complex_case = False

    def inf_ok(self, dtype):
        return np.dtype(dtype).kind == "f" and not self.complex_case

    def pick(self, seq):
        return self.d.sample(list(seq))

    def int(self, lo, hi):
        return self.d.integer(lo, hi)

    def bool(self, p=0.5):
        return bool(self.rng.random() < p)

    def shape(self, min_ndim=0, max_ndim=4, max_side=3):
        return self.d.shape(min_ndim, max_ndim, max_side)

    def fill(self, dtype, finite=False):
        dtype = np.dtype(dtype)
        if dtype.kind == "b":
            opts = [False, False, True]
        elif dtype.kind == "u":
            opts = [0, 0, 0, 1, 3]
        elif dtype.kind == "i":
            opts = [0, 0, 0, -1, 3]
        else:
            opts = [0, 0, 0, -1, 3, 0.5] + ([] if finite else [math.nan])
            opts += [math.inf, -math.inf] if not finite and self.inf_ok(dtype) else []
            if dtype.kind == "c" and not finite:
                opts.append(complex(1, -2))
        return np.asarray(self.pick(opts)).astype(dtype)[()]

    def sparse(self, dtype=None, dtypes=ALL, shape=None, finite=False, min_ndim=0, max_ndim=4, **kw):
        dtype = np.dtype(dtype if dtype is not None else self.pick(dtypes))
        if shape is None:
            shape = self.shape(min_ndim, max_ndim)
        c = build_case(self.d, shape=shape, dtype=dtype, fill=self.fill(dtype, finite), nan_values=not finite,
                       inf_values=not finite and self.inf_ok(dtype) and self.bool(0.3), nse_multiple=4, **kw)
        return Operand("sparse", c.dense, c.arr)

    def dense(self, dtype, shape, finite=False):
        c = build_case(self.d, shape=shape, dtype=dtype, fill=self.fill(dtype, finite), nan_values=not finite,
                       inf_values=not finite and self.inf_ok(dtype) and self.bool(0.3))
        return c.dense

    def scalar(self, dtype, finite=False):
        dtype = np.dtype(dtype)
        if dtype.kind == "b":
            return self.bool()
        if dtype.kind == "u":
            return self.int(0, 4)
        if dtype.kind == "i":
            return self.int(-4, 4)
        opts = [float(self.int(-4, 4)), 0.5, self.int(-3, 3)] + ([] if finite else [math.nan])
        opts += [math.inf] if not finite and self.inf_ok(dtype) else []
        v = self.pick(opts)
        if dtype.kind == "c" and self.bool():
            v = complex(v, self.int(-2, 2))
        return v

    def operand(self, dtype, shape, *, scalar=True, finite=False):
        """A sparse, JAX, NumPy or Python-scalar operand of ``dtype`` (broadcastable to ``shape``)."""
        kind = self.pick(["sparse"] * 5 + ["jax"] * 2 + ["numpy"] * 2 + (["scalar"] * 2 if scalar else []))
        if kind == "sparse":
            return self.sparse(dtype, shape=shape, finite=finite)
        if kind == "scalar":
            return Operand("scalar", self.scalar(dtype, finite))
        return Operand(kind, self.dense(dtype, shape, finite))

    def broadcast_pair(self, max_ndim=4):
        s1 = self.shape(0, max_ndim)
        k = self.int(0, len(s1))
        s2 = tuple(1 if self.bool(0.3) else d for d in s1[len(s1) - k:])
        return (s2, s1) if self.bool() else (s1, s2)

    def axis(self, ndim, *, none=True, tuples=True):
        opts = ["none"] if none else []
        if ndim:
            opts += ["int", "int"] + (["tuple"] if tuples else [])
        if not opts:
            return None
        k = self.pick(opts)
        if k == "none":
            return None
        if k == "int":
            return self.int(-ndim, ndim - 1)
        n = self.int(0, ndim)
        return tuple(int(a) for a in self.rng.permutation(ndim)[:n])

    def other_dtype(self, dt):
        """``dt`` most often, else another dtype of the same family the standard promotes."""
        if self.bool(0.7):
            return dt
        fam = {"b": "b", "i": "iu", "u": "iu", "f": "fc", "c": "fc"}[dt.kind]
        opts = [t for t in ALL if t.kind in fam]
        if dt.kind in "iu":  # uint64 with a signed integer has no promotion in the standard
            opts = [t for t in opts if not (t == np.uint64 and dt.kind == "i")
                    and not (dt == np.uint64 and t.kind == "i")]
        return np.dtype(self.pick(opts))


class Case:
    """One drawn case: ``call(ns, *operands)`` runs it in namespace ``ns``."""

    def __init__(self, name, call, operands, *, tol="elementwise", jit=True, note="", oracle=None, product=False):
        self.name, self.call, self.operands = name, call, operands
        self.tol, self.jit, self.note, self.oracle = tol, jit, note, oracle
        #: a product: its result type follows the mixed-type rule (docs/design.md)
        self.product = product

    def result_type(self, jit: bool) -> str:
        """The type the result must have: "sparse", "jax" or "numpy" (the mixed-type rule)."""
        kinds = {o.kind for o in self.operands}
        if not self.product:
            return "sparse"
        if "jax" in kinds or ("numpy" in kinds and jit):
            return "jax"
        return "numpy" if "numpy" in kinds else "sparse"


# -- the function table ------------------------------------------------------------------------

FUNCTIONS: dict = {}


def fuzz(*names):
    def deco(fn):
        for n in names:
            FUNCTIONS[n] = fn
        return fn
    return deco


def _unary(name):
    spec = TABLE[name]

    def gen(c):
        x = c.sparse(dtypes=NARROWER.get(name, CATEGORY[spec.category]))
        return Case(name, lambda ns, a: getattr(ns, name)(a), [x])
    return gen


def _nonzero(ns, b):
    """``b`` with zeros replaced by 1 (integer divisors)."""
    if isinstance(b, (bool, int)):
        return b or 1
    return ns.where(b == 0, ns.ones_like(b), b)


def _std_floor_divide(x1, x2):
    """The oracle of floor division: NumPy's, with the standard's special cases for floats
    (bcoo_array's documented choice, ``_elementwise_functions._floor_divide``): where x1
    is zero or an operand infinite, the result is ``x1 / x2`` (``0.5 // -inf`` is -0.0;
    NumPy, following Python, gives -1.0)."""
    want = np.asarray(xs.floor_divide(x1, x2))
    if want.dtype.kind != "f":
        return xs.asarray(want)
    a, b = (np.asarray(v) if not isinstance(v, (int, float)) else v for v in (x1, x2))
    with np.errstate(all="ignore"):
        a, b = np.broadcast_arrays(np.asarray(a, want.dtype), np.asarray(b, want.dtype))
        special = (a == 0) | np.isinf(a) | np.isinf(b)
        return xs.asarray(np.where(special, a / b, want).astype(want.dtype))


def _binary(name):
    spec = TABLE[name]

    def gen(c):
        dt = np.dtype(c.pick(NARROWER.get(name, CATEGORY[spec.category])))
        dt2 = c.other_dtype(dt) if name not in ("bitwise_left_shift", "bitwise_right_shift") else dt
        if dt2 not in NARROWER.get(name, CATEGORY[spec.category]):
            dt2 = dt
        c.complex_case = "c" in (dt.kind, dt2.kind)
        s1, s2 = c.broadcast_pair()
        # Multiplying by a traced non-finite value keeps an unstored zero a zero
        # (docs/design.md, "A * s with a traced s keeps the zero fill of A,
        # treating s as finite"): the dense operands of annihilating functions
        # are finite, so the oracle (NumPy's 0 * inf = nan) applies.
        finite = spec.annihilator is not None
        first_sparse = c.bool()
        a = c.sparse(dt, shape=s1) if first_sparse else c.operand(dt, s1, finite=finite)
        b = c.operand(dt2, s2, finite=finite) if first_sparse else c.sparse(dt2, shape=s2)
        ints = dt.kind in "iu" and dt2.kind in "iu"
        fix = None
        if name in ("pow", "bitwise_left_shift", "bitwise_right_shift") and ints:
            fix = "abs"  # negative integer exponents / shifts are unspecified
        if name in ("floor_divide", "remainder") and ints:
            fix = "nonzero"  # integer division by zero is unspecified

        def call(ns, x1, x2):
            if fix == "abs":
                x2 = abs(x2) if isinstance(x2, (int, bool)) else ns.abs(x2)
            elif fix == "nonzero":
                x2 = _nonzero(ns, x2)
            if ns is xs and name == "floor_divide":
                return _std_floor_divide(x1, x2)
            return getattr(ns, name)(x1, x2)
        return Case(name, call, [a, b])
    return gen


for _n, _s in TABLE.items():
    FUNCTIONS[_n] = _unary(_n) if _s.nargs == 1 else _binary(_n)


@fuzz("clip")
def _clip(c):
    x = c.sparse(dtypes=REAL)
    dt = x.dense.dtype
    lo = c.pick([None, c.scalar(dt, finite=True)])
    hi = c.pick([None, c.scalar(dt, finite=True)])
    if dt.kind == "u":
        lo = None if lo is None else abs(lo)
    if dt.kind == "f":
        lo, hi = (None if v is None else float(v) for v in (lo, hi))
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo  # min > max is unspecified
    return Case("clip", lambda ns, a: ns.clip(a, min=lo, max=hi), [x])


@fuzz("astype")
def _astype(c):
    x = c.sparse(finite=True)
    src = x.dense.dtype
    dt = np.dtype(c.pick(ALL))
    if src.kind == "c" and dt.kind != "c":
        dt = src  # complex -> real is not defined by the standard
    if dt.kind in "iub" and src.kind in "fc":
        dt = src  # float -> integer of a non-integral or out-of-range value is unspecified
    if dt.kind in "iu" and src.kind in "iu":
        lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
        if x.dense.size and (x.dense.min() < lo or x.dense.max() > hi) or not lo <= x.arr.fill_value <= hi:
            dt = src  # out of range is unspecified
    return Case("astype", lambda ns, a: ns.astype(a, getattr(ns, dt.name)), [x])


# reductions


def _reduction(name, dtypes, *, tuples=True, extra=None):
    def gen(c):
        x = c.sparse(dtypes=dtypes)
        kw = {"axis": c.axis(x.dense.ndim, tuples=tuples), "keepdims": c.bool()}
        if extra:
            kw.update(extra(c, x))
        return Case(name, lambda ns, a: getattr(ns, name)(a, **kw), [x], tol="reduction")
    return gen


for _n, _d in (("max", REAL), ("min", REAL), ("mean", FLOAT), ("any", ALL), ("all", ALL),
               ("count_nonzero", ALL)):
    FUNCTIONS[_n] = _reduction(_n, _d)
FUNCTIONS["var"] = _reduction("var", RFLOAT, extra=lambda c, x: {"correction": c.pick([0, 1, 0.5])})
FUNCTIONS["std"] = _reduction("std", RFLOAT, extra=lambda c, x: {"correction": c.pick([0, 1])})


def _ns_dtype(ns, kw):
    """``kw`` with a dtype name turned into ``ns``'s dtype object."""
    if isinstance(kw.get("dtype"), str):
        return dict(kw, dtype=getattr(ns, kw["dtype"]))
    return kw


def _sum_dtype_named(c, x):
    dt = x.dense.dtype
    if dt.kind in "iu" and c.bool(0.3):
        return {"dtype": c.pick([t.name for t in INTS if t.kind == dt.kind and t.itemsize >= dt.itemsize])}
    return {}


for _n, _d in (("sum", NUMERIC), ("prod", NUMERIC)):
    def _gen(c, _n=_n, _d=_d):
        x = c.sparse(dtypes=_d)
        kw = {"axis": c.axis(x.dense.ndim), "keepdims": c.bool(), **_sum_dtype_named(c, x)}
        return Case(_n, lambda ns, a: getattr(ns, _n)(a, **_ns_dtype(ns, kw)), [x], tol="reduction")
    FUNCTIONS[_n] = _gen


def _cumulative(name):
    def gen(c):
        # The standard's x "should have one or more dimensions": 0-d input is unspecified.
        x = c.sparse(dtypes=NUMERIC, min_ndim=1)
        nd = x.dense.ndim
        axis = c.int(-nd, nd - 1) if nd > 1 or (nd == 1 and c.bool()) else None
        kw = {"axis": axis, "include_initial": c.bool()}
        return Case(name, lambda ns, a: getattr(ns, name)(a, **kw), [x], tol="reduction")
    return gen


FUNCTIONS["cumulative_sum"] = _cumulative("cumulative_sum")
FUNCTIONS["cumulative_prod"] = _cumulative("cumulative_prod")


@fuzz("diff")
def _diff(c):
    x = c.sparse(dtypes=NUMERIC, min_ndim=1)
    nd = x.dense.ndim
    kw = {"axis": c.int(-nd, nd - 1), "n": c.int(1, 2)}
    return Case("diff", lambda ns, a: ns.diff(a, **kw), [x], tol="reduction")


# manipulation


@fuzz("reshape")
def _reshape(c):
    x = c.sparse()
    shp = x.dense.shape
    opts = [tuple(int(v) for v in c.rng.permutation(np.array(shp, dtype=np.int64))) if shp else (), (-1,),
            (x.dense.size, 1), (1,) + shp]
    if len(shp) >= 2:
        opts.append((shp[0] * shp[1],) + shp[2:])
        opts.append((-1,) + shp[2:] if shp[0] * shp[1] else shp)
    target = c.pick(opts)
    return Case("reshape", lambda ns, a: ns.reshape(a, target), [x])


@fuzz("permute_dims")
def _permute(c):
    x = c.sparse()
    perm = tuple(int(v) for v in c.rng.permutation(x.dense.ndim))
    return Case("permute_dims", lambda ns, a: ns.permute_dims(a, perm), [x])


@fuzz("matrix_transpose")
def _mt(c):
    x = c.sparse(min_ndim=2)
    return Case("matrix_transpose", lambda ns, a: ns.matrix_transpose(a), [x])


@fuzz("expand_dims")
def _expand(c):
    x = c.sparse(max_ndim=3)
    axis = c.int(-x.dense.ndim - 1, x.dense.ndim)
    return Case("expand_dims", lambda ns, a: ns.expand_dims(a, axis=axis), [x])


@fuzz("squeeze")
def _squeeze(c):
    shp = tuple(1 if c.bool(0.4) else s for s in c.shape())
    x = c.sparse(shape=shp)
    ones = [i for i, s in enumerate(shp) if s == 1]
    axis = tuple(i - len(shp) if c.bool() else i for i in ones if c.bool(0.7))
    if len(axis) == 1 and c.bool():
        axis = axis[0]
    return Case("squeeze", lambda ns, a: ns.squeeze(a, axis=axis), [x])


@fuzz("flip")
def _flip(c):
    x = c.sparse()
    axis = c.axis(x.dense.ndim)
    return Case("flip", lambda ns, a: ns.flip(a, axis=axis), [x])


@fuzz("roll")
def _roll(c):
    x = c.sparse()
    nd = x.dense.ndim
    if nd and c.bool(0.3):
        k = c.int(1, nd)
        axis = tuple(c.int(-nd, nd - 1) for _ in range(k))
        shift = tuple(c.int(-5, 5) for _ in range(k))
    else:
        axis = c.int(-nd, nd - 1) if nd and c.bool(0.7) else None
        shift = c.int(-5, 5)
    return Case("roll", lambda ns, a: ns.roll(a, shift, axis=axis), [x])


@fuzz("moveaxis")
def _moveaxis(c):
    x = c.sparse(min_ndim=1)
    nd = x.dense.ndim
    src, dst = c.int(-nd, nd - 1), c.int(-nd, nd - 1)
    return Case("moveaxis", lambda ns, a: ns.moveaxis(a, src, dst), [x])


def _same_family(c, dt):
    fam = {"b": "b", "i": "iu", "u": "iu", "f": "f", "c": "c"}[dt.kind]
    opts = [t for t in ALL if t.kind in fam and not (t.kind != dt.kind and np.uint64 in (t, dt))]
    return np.dtype(c.pick(opts)) if c.bool(0.3) else dt


@fuzz("concat")
def _concat(c):
    x = c.sparse(min_ndim=0 if c.bool(0.1) else 1)
    nd = x.dense.ndim
    axis = c.int(-nd, nd - 1) if nd and c.bool(0.8) else None
    ops = [x]
    for _ in range(c.int(1, 2)):
        shp = list(x.dense.shape)
        if axis is not None:
            shp[axis] = c.int(0, 3)
        else:
            shp = list(c.shape(1, 3))
        dt = _same_family(c, x.dense.dtype)
        ops.append(c.sparse(dt, shape=tuple(shp)) if c.bool(0.8) else Operand("jax", c.dense(dt, tuple(shp))))
    return Case("concat", lambda ns, *a: ns.concat(list(a), axis=axis), ops)


@fuzz("stack")
def _stack(c):
    x = c.sparse()
    ops = [x] + [c.sparse(_same_family(c, x.dense.dtype), shape=x.dense.shape) for _ in range(c.int(0, 2))]
    axis = c.int(-x.dense.ndim - 1, x.dense.ndim)
    return Case("stack", lambda ns, *a: ns.stack(list(a), axis=axis), ops)


@fuzz("unstack")
def _unstack(c):
    x = c.sparse(min_ndim=1)
    axis = c.int(-x.dense.ndim, x.dense.ndim - 1)
    return Case("unstack", lambda ns, a: ns.unstack(a, axis=axis), [x])


@fuzz("broadcast_to")
def _broadcast_to(c):
    s1, s2 = c.broadcast_pair()
    target = tuple(np.broadcast_shapes(s1, s2))
    x = c.sparse(shape=s1)
    return Case("broadcast_to", lambda ns, a: ns.broadcast_to(a, target), [x])


@fuzz("broadcast_arrays")
def _broadcast_arrays(c):
    s1, s2 = c.broadcast_pair()
    x, y = c.sparse(shape=s1), c.sparse(shape=s2)
    return Case("broadcast_arrays", lambda ns, a, b: tuple(ns.broadcast_arrays(a, b)), [x, y])


@fuzz("tile")
def _tile(c):
    x = c.sparse()
    reps = tuple(c.int(0, 2) for _ in range(c.int(0, 4)))
    return Case("tile", lambda ns, a: ns.tile(a, reps), [x])


@fuzz("repeat")
def _repeat(c):
    x = c.sparse()
    nd = x.dense.ndim
    axis = c.int(-nd, nd - 1) if nd and c.bool(0.7) else None
    n = x.dense.size if axis is None else x.dense.shape[axis]
    if c.bool():
        reps = Operand(c.pick(["numpy", "sparse"]), np.asarray(c.d.integers(0, 3, n), np.int64))
        if reps.kind == "sparse":
            reps.arr = xp.asarray(reps.dense)
        # An array of repeats sets the output size from its values: not traceable.
        return Case("repeat", lambda ns, a, r: ns.repeat(a, r, axis=axis), [x, reps], jit=reps.kind == "numpy")
    r = c.int(0, 3)
    return Case("repeat", lambda ns, a: ns.repeat(a, r, axis=axis), [x])


# indexing


def _basic_key(c, shape):
    """A basic index: integers and slices (fewer than ``ndim`` at times), ``None``, one ``...``."""
    key = []
    for n in shape[:len(shape) if c.bool(0.7) else c.int(0, len(shape))]:
        if c.bool(0.15):
            key.append(None)
        if n and c.bool(0.3):
            key.append(c.int(-n, n - 1))
        else:
            key.append(slice(c.pick([None, c.int(-4, 4)]), c.pick([None, c.int(-4, 4)]),
                             c.pick([None, 1, 2, -1, -2, 3])))
    if c.bool(0.25):
        i = c.int(0, len(key))
        j = c.int(i, len(key))
        key[i:j] = [Ellipsis]
    if c.bool(0.1):
        key.append(None)
    if len(key) == 1 and c.bool():
        return key[0]
    return tuple(key)


def _numpy_oracle(fn, *operands):
    """The oracle as NumPy applied to the dense values (for indexing: array-api-strict
    refuses keys the standard leaves to implementations, such as fewer indices than
    dimensions, which NumPy and bcoo_array accept)."""
    return lambda: xs.asarray(np.asarray(fn(*(o.dense for o in operands))))


@fuzz("getitem_basic")
def _getitem_basic(c):
    x = c.sparse()
    key = _basic_key(c, x.dense.shape)
    return Case("getitem_basic", lambda ns, a: a[key], [x], note=f"key={key!r}",
                oracle=_numpy_oracle(lambda a: a[key], x))


@fuzz("getitem_int_array")
def _getitem_int(c):
    """Integer-array indexing as the standard has it: integers or integer arrays on every
    axis, or one integer array among basic indices (other mixes with slices are left to
    implementations; bcoo_array refuses them with an IndexError)."""
    x = c.sparse(min_ndim=1)
    shp = x.dense.shape
    ishape = c.shape(0, 2, 3)
    if 0 not in shp and c.bool():
        key = [np.asarray(c.rng.integers(-n, n, size=ishape), np.int64) if c.bool(0.7) else c.int(-n, n - 1)
               for n in shp]
        if not any(isinstance(k, np.ndarray) for k in key):
            key[0] = np.asarray(c.rng.integers(-shp[0], shp[0], size=ishape), np.int64)
    else:
        axes = [i for i, n in enumerate(shp) if n]
        if not axes:
            return _getitem_basic(c)
        ax = c.pick(axes)
        # Slices only beside the array: NumPy treats an integer there as a second advanced
        # index (moving the result's axes), which the standard does not specify.
        key = [slice(None)] * len(shp)
        key[ax] = np.asarray(c.rng.integers(-shp[ax], shp[ax], size=ishape), np.int64)
    kind = c.pick(["numpy", "sparse"])

    def call(ns, a):
        conv = xp.asarray if kind == "sparse" else (lambda k: k)
        return a[tuple(conv(k) if isinstance(k, np.ndarray) else k for k in key)]
    return Case("getitem_int_array", call, [x], note=f"key={key!r} as {kind}",
                oracle=_numpy_oracle(lambda a: a[tuple(key)], x))


@fuzz("getitem_bool_mask")
def _getitem_mask(c):
    x = c.sparse(min_ndim=1)
    k = c.int(1, x.dense.ndim)
    m = c.sparse(bool, shape=x.dense.shape[:k]) if c.bool() else Operand("numpy", np.asarray(
        c.d.booleans(math.prod(x.dense.shape[:k])), bool).reshape(x.dense.shape[:k]))
    return Case("getitem_bool_mask", lambda ns, a, mm: a[mm], [x, m], jit=False,
                oracle=_numpy_oracle(lambda a, mm: a[mm], x, m))


OPERATORS = {
    "+": ("add", "numeric"), "-": ("subtract", "numeric"), "*": ("multiply", "numeric"),
    "/": ("divide", "floating-point"), "//": ("floor_divide", "real numeric"), "%": ("remainder", "real numeric"),
    "**": ("pow", "floating-point"), "&": ("bitwise_and", "integer or boolean"),
    "|": ("bitwise_or", "integer or boolean"), "^": ("bitwise_xor", "integer or boolean"),
    "<<": ("bitwise_left_shift", "integer"), ">>": ("bitwise_right_shift", "integer"),
    "<": ("less", "real numeric"), "<=": ("less_equal", "real numeric"), ">": ("greater", "real numeric"),
    ">=": ("greater_equal", "real numeric"), "==": ("equal", "all"), "!=": ("not_equal", "all"),
}


PY_OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
    "%": operator.mod, "**": operator.pow, "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<<": operator.lshift, ">>": operator.rshift, "<": operator.lt, "<=": operator.le, ">": operator.gt,
    ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}


@fuzz("operator")
def _operator(c):
    """Python operators, reflected ones included (a scalar or NumPy/JAX array on the left)."""
    op = c.pick(sorted(OPERATORS))
    name, cat = OPERATORS[op]
    dt = np.dtype(c.pick(CATEGORY[cat]))
    if op in ("<<", ">>", "//", "%", "**") and dt.kind in "iu":
        x = c.sparse(dt, finite=True)
        other = Operand("scalar", c.int(1, 3))  # no negative exponents / shifts, no division by zero
    else:
        c.complex_case = dt.kind == "c"
        s1, s2 = c.broadcast_pair()
        x = c.sparse(dt, shape=s1, finite=name == "multiply" or dt.kind == "c")
        other = c.operand(dt, s2, finite=name in ("multiply", "bitwise_and") or dt.kind == "c")
        if other.kind == "jax" and c.bool():
            other.kind = "numpy"
    fn = PY_OPERATORS[op]

    int_op = op in ("<<", ">>", "//", "%", "**") and dt.kind in "iu"

    def run(ns, a, b):
        if int_op:
            # The sparse array is the right operand of a reflected operator (``2 // x``): its
            # entries, unstored ones included, are made non-zero divisors / non-negative shifts and
            # exponents in both namespaces, as the scalar is (the standard leaves the rest unspecified).
            if op in ("//", "%"):
                b = _nonzero(ns, b)
            else:
                b = abs(b) if isinstance(b, (bool, int)) else ns.abs(b)
        if ns is xs and op == "//":
            return _std_floor_divide(a, b)
        return fn(a, b)
    if other.kind in ("numpy", "jax") or c.bool():
        # NumPy and JAX arrays on the left would run their own operator: sparse on the left.
        return Case("operator", lambda ns, a, b: run(ns, a, b), [x, other], note=f"x {op} other")
    return Case("operator", lambda ns, a, b: run(ns, b, a), [x, other], note=f"other {op} x")


@fuzz("setitem")
def _setitem(c):
    x = c.sparse(min_ndim=1)
    key = _basic_key(c, x.dense.shape)
    key = tuple(k for k in (key if isinstance(key, tuple) else (key,)) if k is not None)
    v = c.scalar(x.dense.dtype)
    if isinstance(v, float) and x.dense.dtype.kind in "iub":
        v = int(v)

    def oracle():
        d = x.dense.copy()
        d[key] = v
        return xs.asarray(d)

    def call(ns, a):
        b = ns.asarray(a, copy=True)
        b[key] = v
        return b
    return Case("setitem", call, [x], note=f"key={key!r} value={v!r}", oracle=oracle)


@fuzz("take")
def _take(c):
    x = c.sparse(min_ndim=1)
    nd = x.dense.ndim
    axis = c.int(-nd, nd - 1) if nd > 1 else c.pick([None, 0, -1])
    n = x.dense.size if axis is None else x.dense.shape[axis]
    if n == 0:
        idx = np.zeros((0,), np.int64)
    else:
        idx = np.asarray(c.rng.integers(-n, n, size=c.int(0, 5)), np.int64)
    ind = Operand(c.pick(["numpy", "jax", "sparse"]), idx)
    if ind.kind == "sparse":
        ind.arr = xp.asarray(idx)
    return Case("take", lambda ns, a, i: ns.take(a, i, axis=axis), [x, ind])


@fuzz("take_along_axis")
def _take_along(c):
    x = c.sparse(min_ndim=1)
    nd = x.dense.ndim
    axis = c.int(-nd, nd - 1)
    n = x.dense.shape[axis]
    shp = list(x.dense.shape)
    shp[axis] = c.int(0, 3) if n else 0
    idx = np.asarray(c.rng.integers(-n, n, size=shp) if n else np.zeros(shp), np.int64)
    ind = Operand(c.pick(["numpy", "jax", "sparse"]), idx)
    if ind.kind == "sparse":
        ind.arr = xp.asarray(idx)
    return Case("take_along_axis", lambda ns, a, i: ns.take_along_axis(a, i, axis=axis), [x, ind])


# searching


def _argext(name):
    def gen(c):
        x = c.sparse(dtypes=REAL)
        kw = {"axis": c.axis(x.dense.ndim, tuples=False), "keepdims": c.bool()}
        return Case(name, lambda ns, a: getattr(ns, name)(a, **kw), [x])
    return gen


FUNCTIONS["argmax"] = _argext("argmax")
FUNCTIONS["argmin"] = _argext("argmin")


@fuzz("nonzero")
def _nonzero_case(c):
    x = c.sparse(min_ndim=1)
    return Case("nonzero", lambda ns, a: tuple(ns.nonzero(a)), [x], jit=False)


@fuzz("where")
def _where(c):
    s1, s2 = c.broadcast_pair()
    dt = np.dtype(c.pick(ALL))
    cond = c.sparse(bool, shape=s1) if c.bool(0.8) else Operand("numpy", c.dense(bool, s1))
    a = c.operand(dt, s2)
    b = c.operand(c.other_dtype(dt), s1 if c.bool() else s2)
    return Case("where", lambda ns, m, x1, x2: ns.where(m, x1, x2), [cond, a, b])


@fuzz("searchsorted")
def _searchsorted(c):
    x = c.sparse(dtypes=REAL, shape=(c.int(0, 5),))
    v = c.sparse(x.dense.dtype)
    side = c.pick(["left", "right"])
    return Case("searchsorted", lambda ns, a, b: ns.searchsorted(ns.sort(a), b, side=side), [x, v])


@fuzz("isin")
def _isin(c):
    a = c.sparse(dtypes=INTS)
    b = c.sparse(a.dense.dtype)
    inv = c.bool()
    return Case("isin", lambda ns, x1, x2: ns.isin(x1, x2, invert=inv), [a, b],
                # array-api-strict 2.6.1 ignores invert=True for a 0-d x2: NumPy is the oracle.
                oracle=lambda: xs.asarray(np.isin(a.dense, b.dense, invert=inv)))


# sorting and sets (being rewritten elsewhere: SORTING_AREA)


def _sorting(name):
    def gen(c):
        x = c.sparse(dtypes=REAL, min_ndim=1)
        nd = x.dense.ndim
        kw = {"axis": c.int(-nd, nd - 1), "descending": c.bool()}
        return Case(name, lambda ns, a: getattr(ns, name)(a, **kw), [x])
    return gen


FUNCTIONS["sort"] = _sorting("sort")
FUNCTIONS["argsort"] = _sorting("argsort")


def _unique(name):
    def gen(c):
        x = c.sparse()
        return Case(name, lambda ns, a: getattr(ns, name)(a), [x], jit=False)
    return gen


for _n in ("unique_all", "unique_counts", "unique_inverse", "unique_values"):
    FUNCTIONS[_n] = _unique(_n)


# linear algebra
#
# Unstored entries count as exact zeros in products (the Notes of
# bcoo_array.matmul: ``S @ d`` ignores inf / nan of ``d`` where ``S`` stores
# nothing, as scipy.sparse does), where dense NumPy gives 0 * inf = nan: the
# operands of products are finite, so NumPy's dense product is the oracle.


def _lin_operand(c, dt, shape):
    if c.bool(0.75):
        return c.sparse(dt, shape=shape, finite=True)
    return Operand(c.pick(["jax", "numpy"]), c.dense(dt, shape, finite=True))


@fuzz("matmul")
def _matmul(c):
    dt = np.dtype(c.pick(NUMERIC))
    dt2 = c.other_dtype(dt)
    m, k, n = c.int(0, 3), c.int(0, 3), c.int(0, 3)
    lead1, lead2 = c.pick([((), ()), ((2,), ()), ((), (2,)), ((2,), (1,)), ((1, 2), (2,))])
    s1 = c.pick([lead1 + (m, k), (k,)])
    s2 = c.pick([lead2 + (k, n), (k,)])
    a = c.sparse(dt, shape=s1, finite=True) if c.bool(0.8) else _lin_operand(c, dt, s1)
    b = _lin_operand(c, dt2, s2)
    if c.bool():
        a, b = b, a
    return Case("matmul", lambda ns, x1, x2: ns.matmul(x1, x2), [a, b], tol="linalg", product=True)


@fuzz("tensordot")
def _tensordot(c):
    dt = np.dtype(c.pick(NUMERIC))
    s = c.shape(1, 3)
    kk = c.int(0, len(s))
    axes_ = c.pick(["int", "pairs"])
    s2 = s[len(s) - kk:] + c.shape(0, 2)
    if axes_ == "int":
        axes = kk
    else:
        ax1 = list(range(len(s) - kk, len(s)))
        ax2 = list(range(kk))
        perm = list(c.rng.permutation(kk))
        axes = ([ax1[p] for p in perm], [ax2[p] for p in perm])
    a = c.sparse(dt, shape=s, finite=True)
    b = _lin_operand(c, c.other_dtype(dt), s2)
    return Case("tensordot", lambda ns, x1, x2: ns.tensordot(x1, x2, axes=axes), [a, b], tol="linalg",
                product=True)


@fuzz("vecdot")
def _vecdot(c):
    dt = np.dtype(c.pick(NUMERIC))
    s1, s2 = c.broadcast_pair(3)
    k = c.int(0, 3)
    a = c.sparse(dt, shape=s1 + (k,), finite=True)
    b = _lin_operand(c, c.other_dtype(dt), s2 + (k,))
    if c.bool():
        a, b = b, a
    return Case("vecdot", lambda ns, x1, x2: ns.vecdot(x1, x2), [a, b], tol="linalg")


@fuzz("linalg.matrix_norm")
def _matrix_norm(c):
    x = c.sparse(dtypes=FLOAT, shape=c.pick([(), (2,)]) + (c.int(1, 3), c.int(1, 3)), finite=True)
    o = c.pick(["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
    kd = c.bool()
    return Case("linalg.matrix_norm", lambda ns, a: ns.linalg.matrix_norm(a, ord=o, keepdims=kd), [x], tol="linalg")


@fuzz("linalg.vector_norm")
def _vector_norm(c):
    x = c.sparse(dtypes=FLOAT, min_ndim=1, finite=c.bool())
    axis = c.axis(x.dense.ndim)
    o = c.pick([2, 1, 0, 3, -1, -2, math.inf, -math.inf])
    if x.dense.size == 0 and o in (-1, -2, math.inf, -math.inf):
        o = 2  # max / min of an empty set: unspecified (NumPy returns 0 or inf)
    kd = c.bool()
    return Case("linalg.vector_norm", lambda ns, a: ns.linalg.vector_norm(a, axis=axis, keepdims=kd, ord=o), [x],
                tol="linalg")


@fuzz("linalg.diagonal", "linalg.trace")
def _diag(c):
    name = c.pick(["diagonal", "trace"])
    x = c.sparse(dtypes=NUMERIC if name == "trace" else ALL, min_ndim=2)
    k = c.int(-3, 3)
    return Case(f"linalg.{name}", lambda ns, a: getattr(ns.linalg, name)(a, offset=k), [x], tol="reduction")


@fuzz("linalg.outer")
def _outer(c):
    dt = np.dtype(c.pick(NUMERIC))
    a = c.sparse(dt, shape=(c.int(0, 3),), finite=True)
    b = _lin_operand(c, c.other_dtype(dt), (c.int(0, 3),))
    return Case("linalg.outer", lambda ns, x1, x2: ns.linalg.outer(x1, x2), [a, b])


# -- running a case -----------------------------------------------------------------------------

NAMES = sorted(FUNCTIONS)
EPS_FACTOR = {"elementwise": 16, "reduction": 256, "linalg": 1024}


def draw(seed: int, index: int) -> Case:
    rng = np.random.default_rng([seed, index])
    names = [n for n in NAMES if n in ONLY] if ONLY else NAMES
    name = names[int(rng.integers(len(names)))]
    return FUNCTIONS[name](Ctx(rng))


RESULT_TYPES = {"sparse": (BCOOArray,), "jax": (jax.Array,), "numpy": (np.ndarray, np.generic)}


def _compare(got, want, tol, where="result", kind="sparse"):
    """Raise AssertionError unless ``got`` (ours) matches ``want`` (strict).

    ``kind``: the type ``got`` must have (see :meth:`Case.result_type`).
    """
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)), f"{where}: expected a tuple, got {type(got).__name__}"
        assert len(got) == len(want), f"{where}: length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, tol, f"{where}[{i}]", kind)
        return
    expected = RESULT_TYPES[kind]
    assert isinstance(got, expected), f"{where}: expected a {expected[0].__name__}, got {type(got).__name__}"
    w = np.asarray(want)
    assert got.shape == w.shape, f"{where}: shape {got.shape} != {w.shape}"
    assert got.dtype == w.dtype, f"{where}: dtype {got.dtype} != {w.dtype}"
    if kind != "sparse":
        g = np.asarray(got)
    else:
        assert np.asarray(got.fill_value).dtype == got.dtype, (
            f"{where}: fill value dtype {np.asarray(got.fill_value).dtype}")
        g = np.asarray(got.todense())
    if w.dtype.kind not in "fc":
        np.testing.assert_array_equal(g, w, err_msg=where)
        return
    eps = float(np.finfo(w.dtype).eps)
    k = EPS_FACTOR[tol]
    fin = w[np.isfinite(w)]
    scale = max(1.0, float(np.max(np.abs(fin)))) if fin.size else 1.0
    np.testing.assert_allclose(g, w, rtol=k * eps, atol=k * eps * scale, equal_nan=True, err_msg=where)
    assert np.array_equal(np.isnan(g), np.isnan(w)), f"{where}: NaN positions differ"


def _oracle(case: Case):
    with xs.ArrayAPIStrictFlags(api_version=API_VERSION), np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if case.oracle is not None:
                return case.oracle()
            return case.call(xs, *(o.strict() for o in case.operands))
        except ERRORS as exc:
            return exc


def _ours(case: Case, jit: bool):
    vals = [o.ours() for o in case.operands]
    if not jit:
        return case.call(xp, *vals)
    traced = [i for i, o in enumerate(case.operands) if o.kind in ("sparse", "jax")]

    def f(*tr):
        v = list(vals)
        for i, t in zip(traced, tr):
            v[i] = t
        return case.call(xp, *v)
    return jax.jit(f)(*(vals[i] for i in traced))


#: bcoo_array.matmul's documented refusal (its Raises section): sparse @ sparse under
#: ``jax.jit`` whose static bound of products exceeds the dense route raises with the
#: advice (``sparse_matmul(..., nse=)``) instead of densifying silently.
JIT_PRODUCT_REFUSAL = "sparse @ sparse under jax.jit"


def _documented_refusal(case: Case, mode: str, exc: Exception) -> bool:
    """Whether ``exc`` is a refusal the library documents for this case (not a mismatch)."""
    both_sparse = all(o.kind == "sparse" for o in case.operands)
    return (mode == "jit" and case.product and both_sparse and isinstance(exc, ValueError)
            and str(exc).startswith(JIT_PRODUCT_REFUSAL))


def check_case(seed: int, index: int, jit_every: int):
    """Run case ``index`` of ``seed``: a list of (mode, message) mismatches."""
    case = draw(seed, index)
    want = _oracle(case)
    modes = ["eager"]
    if case.jit and jit_every and index % jit_every == 0:
        modes.append("jit")
    out = []
    for mode in modes:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = _ours(case, mode == "jit")
        except ERRORS as exc:
            if not isinstance(want, Exception) and not _documented_refusal(case, mode, exc):
                out.append((mode, f"raised {type(exc).__name__}: {exc} (the oracle returned a result)"))
            continue
        except Exception as exc:  # noqa: BLE001 - any other error is a mismatch, with its traceback
            out.append((mode, f"raised {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-4)}"))
            continue
        if isinstance(want, Exception):
            out.append((mode, f"returned a result where the oracle raised {type(want).__name__}: {want}"))
            continue
        try:
            _compare(got, want, case.tol, kind=case.result_type(mode == "jit"))
        except AssertionError as exc:
            out.append((mode, str(exc).strip()))
    return case, out


def describe(case: Case) -> str:
    ops = "; ".join(o.describe() for o in case.operands)
    return f"{case.name}({ops}){' ' + case.note if case.note else ''}"


def repro(seed: int, index: int) -> str:
    return (f"BCOO_FUZZ_SEED={seed} BCOO_FUZZ_CASE={index} python -m pytest -p no:xdist "
            f"conformance/test_fuzz.py")


def _env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


ONLY = {n.strip() for n in os.environ.get("BCOO_FUZZ_ONLY", "").split(",") if n.strip()}


def _seed() -> int:
    v = os.environ.get("BCOO_FUZZ_SEED", "").strip()
    if v == "random":
        return secrets.randbits(32)
    return int(v) if v else CI_SEED


def test_function_table_is_known():
    unknown = sorted(ONLY - set(FUNCTIONS))
    assert not unknown, f"BCOO_FUZZ_ONLY names no fuzzed function: {unknown}; known: {NAMES}"
    # every element-wise function of the namespace has an entry
    assert set(TABLE) <= set(FUNCTIONS)


def test_compare_detects_differences():
    """The comparison fails on a wrong value, dtype, shape, NaN position or type."""
    want = xs.asarray(np.array([1.0, np.nan, 3.0]))
    _compare(xp.asarray(np.array([1.0, np.nan, 3.0])), want, "elementwise")
    for bad in (np.array([1.0, np.nan, 3.001]), np.array([1.0, 2.0, 3.0]), np.array([1.0, np.nan]),
                np.array([1.0, np.nan, 3.0], np.float32)):
        with pytest.raises(AssertionError):
            _compare(xp.asarray(bad), want, "elementwise")
    with pytest.raises(AssertionError):
        _compare(jnp.asarray([1.0, np.nan, 3.0]), want, "elementwise")
    with pytest.raises(AssertionError):
        _compare((xp.asarray(np.array([1, 2])),), (xs.asarray(np.array([1, 3])),), "elementwise")
    # products follow the mixed-type rule: the result's type is checked too
    _compare(np.array([1.0, np.nan, 3.0]), want, "linalg", kind="numpy")
    _compare(jnp.asarray([1.0, np.nan, 3.0]), want, "linalg", kind="jax")
    for got, kind in ((xp.asarray(np.array([1.0, np.nan, 3.0])), "numpy"), (np.array([1.0, np.nan, 3.0]), "jax"),
                      (np.array([1.0, np.nan, 2.0]), "numpy")):
        with pytest.raises(AssertionError):
            _compare(got, want, "linalg", kind=kind)


def test_fuzz():
    seed = _seed()
    one = os.environ.get("BCOO_FUZZ_CASE", "").strip()
    if one:
        indices = [int(one)]
    else:
        start = _env_int("BCOO_FUZZ_START", 0)
        indices = range(start, start + _env_int("BCOO_FUZZ_CASES", 200))
    jit_every = _env_int("BCOO_FUZZ_JIT", 2)
    log = os.environ.get("BCOO_FUZZ_LOG", "").strip()
    print(f"\nbcoo fuzz: seed={seed} cases={len(indices)} first={indices[0] if len(indices) else None} "
          f"jit_every={jit_every}", file=sys.stderr)
    failures, jitted, per_name = [], 0, {}
    for n, index in enumerate(indices):
        if n and n % 100 == 0:
            print(f"bcoo fuzz: seed={seed} {n} cases run, {len(failures)} mismatches", file=sys.stderr, flush=True)
        case, bad = check_case(seed, index, jit_every)
        per_name[case.name] = per_name.get(case.name, 0) + 1
        jitted += case.jit and jit_every and index % jit_every == 0
        for mode, msg in bad:
            text = (f"seed={seed} case={index} [{mode}] {describe(case)}\n  {msg}\n"
                    f"  repro: {repro(seed, index)}")
            failures.append(text)
            if log:
                with open(log, "a") as fh:
                    fh.write(text.replace("\n", "\n    ") + "\n")
    print(f"bcoo fuzz: seed={seed} ran {len(indices)} cases ({jitted} also under jit) over {len(per_name)} "
          f"functions, {len(failures)} mismatches", file=sys.stderr)
    assert not failures, f"{len(failures)} mismatches (seed={seed}):\n" + "\n".join(failures[:30])
