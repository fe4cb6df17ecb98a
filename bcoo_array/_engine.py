"""The eager engine: where an operation runs, decided in one place.

An operation has up to two implementations of the same algorithm, declared
side by side through ``Operation``:

* ``host``: NumPy (and the native kernels) on host buffers. It runs when every
  array operand is concrete and in host memory (a ``BCOOArray`` whose buffers
  can be read on the host, a NumPy array, a concrete JAX array on a single CPU
  device, a Python scalar). No XLA program is compiled and nothing crosses
  into JAX: a result keeps NumPy buffers until JAX needs them
  (``BCOOArray.data``, a trace, a device move), then crosses once.
* ``xla``: JAX on JAX buffers, for traced operands (``jit``, ``grad``,
  ``vmap``, ``shard_map``) and arrays on other devices (GPU, a mesh). It is
  the tested path for every other backend.

``BCOO_ARRAY_HOST=0`` (read at every call) sends every operation to its
``xla`` implementation on the CPU too, so the test suite can check both
engines on the same inputs. As JAX registers one lowering per platform and
scipy's ``_matmul_dispatch`` one hook per operand kind, the choice for an
operation declared this way is made by ``Operation.__call__`` alone, not by
the chapter that calls it. (Not every operation is declared yet: see "The
eager engine" in ``docs/design.md`` for those that still compile.)
"""

from __future__ import annotations

import os
import weakref
from typing import Callable

import jax
import numpy as np

from ._routing import one_device as single_cpu  # (whether JAX has exactly one device, a CPU)
from ._shapes import is_tracer

#: Environment variable: ``0`` forces the XLA engine on the CPU (read at every call).
HOST_ENV = "BCOO_ARRAY_HOST"

_CPU_ONLY: list = []


def cpu_only() -> bool:
    """Whether JAX runs on the CPU alone (every array then lives in host memory; fixed once JAX has started)."""
    if not _CPU_ONLY:
        _CPU_ONLY.append(jax.default_backend() == "cpu" and all(d.platform == "cpu" for d in jax.devices()))
    return _CPU_ONLY[0]


def host_enabled() -> bool:
    """Whether the host engine may run (``BCOO_ARRAY_HOST`` is not ``0``)."""
    return os.environ.get(HOST_ENV) != "0"


def host_view(x) -> np.ndarray | None:
    """A zero-copy NumPy view of a concrete JAX array on one CPU device; None otherwise (traced, a GPU, a mesh)."""
    if isinstance(x, np.ndarray):
        return x
    if not isinstance(x, jax.Array) or is_tracer(x):
        return None
    if not single_cpu():
        # Several devices: only the default one. An array placed elsewhere keeps its device through the XLA
        # engine (a host result would come back on the default device).
        try:
            devices = x.devices()
        except AttributeError:
            return None
        if len(devices) != 1 or next(iter(devices)) != _default_device():
            return None
    return np.asarray(x)


_DEFAULT: list = []


def _default_device():
    if not _DEFAULT:
        _DEFAULT.append(jax.devices()[0])
    return _DEFAULT[0]


def on_host(x) -> bool:
    """Whether operand ``x`` can be read on the host: a BCOOArray with host-readable buffers, a NumPy value,
    a Python scalar, a concrete JAX array on one CPU device, or None (an absent optional operand)."""
    if x is None or isinstance(x, (np.ndarray, np.generic, bool, int, float, complex)):
        return True
    views = getattr(x, "_host_buffers", None)
    if views is not None:
        return views() is not None
    if isinstance(x, jax.Array):
        return host_view(x) is not None
    return False  # a tracer, or an object the host engine does not know


#: Stored entries (or dense elements) above which a bandwidth-bound operation (``Operation(..., large=True)``)
#: runs on the XLA engine even on the host, once its signature is hot (``HOT_CALLS``): XLA's fused, threaded
#: loop makes one pass where the NumPy twin makes several (cage11, 2.6 million entries: ``A + B`` 2 ms against
#: 14 ms). ``BCOO_ARRAY_HOST_MAX`` (entries, read at every call) overrides it.
HOST_MAX_ENTRIES = 1 << 18
HOST_MAX_ENV = "BCOO_ARRAY_HOST_MAX"

#: Calls of a large operation on one signature (operation, operands' shapes, dtypes and stored entries) that
#: the host serves before XLA takes over: tiered execution, as a JIT compiler interprets a method before it
#: compiles it once it is hot. Counted per new set of operands: the same operands keep the engine they took
#: first (``_CHOSEN``), so repeating a call repeats its result bit for bit. XLA compiles per signature (50-150
#: ms on a fresh process), and a call that happens once (a scikit-learn fit on a large matrix: ``xp.exp(A)`` at
#: 1.4 million entries 112 ms first, 1.1 ms warm) would pay that for a saving of a fraction of a millisecond; a
#: loop over new arrays pays it on its third iteration, after which every such call takes the faster engine.
#: Off (1: XLA from the first large call, as before tiering) until the engines agree bit for bit on every
#: input: a review found integer ``floor_divide`` by zero giving NumPy's 0 on the host and XLA's -1/-2 (XLA's
#: path now gives NumPy's 0 too, as do its float quotients' signed zeros and ``maximum``/``minimum`` of signed
#: zeros on the host; casts of NaN and out-of-range floats to integers now follow XLA on the host), and
#: last-bit differences of ``exp``/``sum`` for fresh operands of a
#: hot signature. 3 turns tiering on.
HOT_CALLS = 1

#: signature -> calls seen (bounded: the oldest signatures are forgotten first).
_CALLS: dict = {}
_CALLS_MAX = 4096

#: (operation, ids of the operands' buffers) -> (weak references to them, whether XLA runs): the same operands
#: always take the engine they took first, so a repeated call gives bit-identical results (NumPy's and XLA's
#: transcendental functions and summation orders differ in the last bits). An entry goes with its buffers.
_CHOSEN: dict = {}


def operand_entries(x) -> int:
    """Stored entries of a BCOOArray (padding included), elements of a dense array, 1 for scalars."""
    if isinstance(x, (list, tuple)):
        return sum(operand_entries(y) for y in x)
    nse = getattr(x, "_host_buffers", None)
    if nse is not None:
        d = x._hdata if x._hdata is not None else x._data
        return int(d.size) if d is not None else 0
    return int(getattr(x, "size", 1))


def host_max_entries() -> int:
    """The size above which bandwidth-bound operations take the XLA engine (``HOST_MAX_ENTRIES``)."""
    got = os.environ.get(HOST_MAX_ENV)
    return int(got) if got else HOST_MAX_ENTRIES


def _signature(x):
    """What XLA compiles for operand ``x``: its shape, dtype and, for a BCOOArray, its stored entries."""
    if isinstance(x, (list, tuple)):
        return tuple(_signature(y) for y in x)
    shape = getattr(x, "shape", None)
    if shape is None:
        return type(x)
    nse = getattr(x, "nse", None) if hasattr(x, "_host_buffers") else None
    return (tuple(shape), str(getattr(x, "dtype", "")), nse)


def _hot(name: str, operands) -> bool:
    """Count a large call on its signature; whether it is at least the ``HOT_CALLS``-th."""
    key = (name, _signature(operands))
    n = _CALLS.pop(key, 0) + 1
    _CALLS[key] = n  # re-inserted last: the dictionary's order is the order of last use
    if len(_CALLS) > _CALLS_MAX:
        try:
            del _CALLS[next(iter(_CALLS))]
        except (RuntimeError, StopIteration, KeyError):  # another thread changed it meanwhile: trim later
            pass
    return n >= HOT_CALLS


def _buffers_of(operands) -> tuple:
    """One buffer standing for each array operand (a BCOOArray's values or indices, a NumPy or JAX array)."""
    out = []
    for x in operands:
        if isinstance(x, (list, tuple)):
            out.extend(_buffers_of(x))
        elif hasattr(x, "_host_buffers"):
            for b in (x._data, x._hdata, x._indices, x._hindices):
                if isinstance(b, (np.ndarray, jax.Array)):
                    out.append(b)
                    break
        elif isinstance(x, (np.ndarray, jax.Array)):
            out.append(x)
    return tuple(out)


def _takes_xla(name: str, operands) -> bool:
    """Whether a large call runs on XLA: the engine these operands took before, else XLA once the signature is
    hot (``_hot``), remembered for them."""
    bufs = _buffers_of(operands)
    key = (name, *map(id, bufs))
    hit = _CHOSEN.get(key)
    if hit is not None and all(r() is b for r, b in zip(hit[0], bufs)):
        return hit[1]
    xla = _hot(name, operands)
    if bufs:
        try:
            refs = tuple(weakref.ref(b, lambda _ref, k=key: _CHOSEN.pop(k, None)) for b in bufs)
        except TypeError:  # not weakly referenceable: not remembered
            return xla
        _CHOSEN[key] = (refs, xla)
    return xla


def runs_on_host(*operands) -> bool:
    """Whether the host engine serves these operands (the engine is enabled and each one is on the host)."""
    if not host_enabled():
        return False
    for x in operands:
        if isinstance(x, (list, tuple)):
            if not all(on_host(y) for y in x):
                return False
        elif not on_host(x):
            return False
    return True


_ZERO = np.zeros(1)
_ZERO_OUT = np.zeros(1)


def _clear_fp_status() -> None:
    """Leave the thread's floating-point status flags clear after host work.

    Host kernels compute under ``np.errstate(all="ignore")`` (``inf - inf`` of
    stored values is the caller's business), but errstate does not clear the
    flags they raise, and NumPy's BLAS ``matmul`` reads them without clearing
    first: a user's next ``D @ x`` would warn about our NaN. A ufunc clears
    the flags before its loop and raises none here.
    """
    np.add(_ZERO, _ZERO, out=_ZERO_OUT)


class Operation:
    """One operation's implementations, side by side, and the one place that picks between them.

    Parameters
    ----------
    name : str
        The operation's name (for messages and ``repr``).
    operands : callable, optional
        Given the call's arguments, returns the array operands whose state
        decides the engine (default: every positional argument).
    large : bool or callable
        The operation is bandwidth-bound: operands of more than
        ``host_max_entries()`` entries in all take the XLA engine (its fused
        loop beats several NumPy passes there; see ``HOST_MAX_ENTRIES``)
        from the ``HOT_CALLS``-th call on one signature (the first calls run
        on the host and compile nothing). A callable decides per call, from
        the call's arguments.

    Examples
    --------
    >>> unary = Operation("unary")
    >>> @unary.host
    ... def _(fn, x): ...
    >>> @unary.xla
    ... def _(fn, x): ...

    Notes
    -----
    The ``host`` implementation runs when ``runs_on_host`` holds for the
    operands; it may return ``NotImplemented`` for an input it does not
    serve (a dtype NumPy lacks, say), and the ``xla`` one runs instead. The
    ``xla`` implementation must accept every input.
    """

    __slots__ = ("name", "_operands", "_large", "_host", "_xla")

    def __init__(self, name: str, operands: Callable | None = None, *, large: bool = False):
        self.name = name
        self._operands = operands
        self._large = large
        self._host = None
        self._xla = None

    def host(self, fn: Callable) -> Callable:
        """Register the host (NumPy) implementation; returns ``fn``."""
        self._host = fn
        return fn

    def xla(self, fn: Callable) -> Callable:
        """Register the XLA (JAX) implementation; returns ``fn``."""
        self._xla = fn
        return fn

    def __call__(self, *args, **kwargs):
        if self._host is not None:
            ops = args if self._operands is None else self._operands(*args, **kwargs)
            large = self._large(*args, **kwargs) if callable(self._large) else self._large
            if runs_on_host(*ops) and not (large and operand_entries(ops) > host_max_entries()
                                           and _takes_xla(self.name, ops)):
                out = self._host(*args, **kwargs)
                _clear_fp_status()
                if out is not NotImplemented:
                    return out
        return self._xla(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Operation({self.name!r}, host={self._host is not None}, xla={self._xla is not None})"
