"""Plans cached on the identity of immutable index buffers.

JAX arrays are immutable, so anything computed from the *values* of a
concrete ``indices`` buffer (a row pointer, a sort order, the pattern of a
sum or product) stays valid for as long as that buffer object lives. The
cache holds a weak reference to each key buffer and drops the entry when one
of them is garbage collected, so it never keeps an array alive and never
serves a plan for a different buffer that reuses a freed ``id``. It is
bounded (least recently used entries go first). This is the "analysis phase"
of cuSPARSE / MKL inspector-executor SpMV, done implicitly.

Memory: a plan takes one to three times the memory of the index buffer it
belongs to, and lives only as long as that buffer (and at most
``IdentityCache.maxsize`` plans live at once); ``PLANS.clear()`` frees
them all.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable

import jax
import numpy as np

from .._shapes import valid_rows


class IdentityCache:
    """An LRU map from ``(buffers..., static key)`` to a plan, weak in the buffers.

    Parameters
    ----------
    maxsize : int
        Largest number of entries kept.
    """

    def __init__(self, maxsize: int = 64):
        self.maxsize = int(maxsize)
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        # (key, ref) pairs whose buffer died. Weakref callbacks only append here
        # (atomic, lock-free): a callback can fire inside ``get`` while the lock is
        # held (garbage collection runs at any allocation), so taking the lock
        # there would deadlock. ``get`` purges them under the lock.
        self._dead: list = []

    def __len__(self) -> int:
        with self._lock:
            self._purge()
            return len(self._entries)

    def clear(self) -> None:
        """Forget every plan."""
        with self._lock:
            self._entries.clear()

    def get(self, buffers: tuple, static: Any, compute: Callable[[], Any]):
        """The plan for ``buffers`` (concrete JAX arrays) and hashable ``static``; computed on a miss."""
        key = (*map(id, buffers), static)
        # A hit takes no lock (a dict read and move_to_end are single atomic steps), so the
        # eager calls that hit (every SpMV after the first) pay microseconds; misses purge.
        hit = self._entries.get(key)
        if hit is not None and all(r() is b for r, b in zip(hit[0], buffers)):
            try:
                self._entries.move_to_end(key)
            except KeyError:  # evicted by another thread meanwhile: still a valid plan
                pass
            return hit[1]
        with self._lock:
            self._purge()
            hit = self._entries.get(key)
            if hit is not None and all(r() is b for r, b in zip(hit[0], buffers)):
                self._entries.move_to_end(key)
                return hit[1]
        # Plans are constants even when first asked for inside a trace (jit,
        # custom_linear_solve): compute them eagerly so no tracer is cached.
        with jax.ensure_compile_time_eval():
            value = compute()
        try:
            refs = tuple(weakref.ref(b, self._dropper(key)) for b in buffers)
        except TypeError:  # not weakly referenceable: do not cache
            return value
        with self._lock:
            self._entries[key] = (refs, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return value

    def put(self, buffers: tuple, static: Any, value) -> None:
        """Record ``value`` for ``buffers`` and ``static`` (a fact its producer knows, so no later call
        computes it); buffers that cannot be weakly referenced are not recorded."""
        key = (*map(id, buffers), static)
        try:
            refs = tuple(weakref.ref(b, self._dropper(key)) for b in buffers)
        except TypeError:
            return
        with self._lock:
            self._purge()
            self._entries[key] = (refs, value)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def peek(self, buffers: tuple, static: Any):
        """The cached value for ``buffers`` and ``static``, or None (nothing is computed); a hit counts as a use
        (least recently used entries go first)."""
        key = (*map(id, buffers), static)
        hit = self._entries.get(key)
        if hit is not None and all(r() is b for r, b in zip(hit[0], buffers)):
            try:
                self._entries.move_to_end(key)
            except KeyError:  # evicted by another thread meanwhile: still the right value
                pass
            return hit[1]
        return None

    def _purge(self) -> None:
        """Drop the entries whose buffers died (call with the lock held)."""
        while self._dead:
            key, ref = self._dead.pop()
            hit = self._entries.get(key)
            if hit is not None and any(r is ref for r in hit[0]):
                del self._entries[key]

    def _dropper(self, key):
        def drop(ref, _self=weakref.ref(self), _key=key):
            cache = _self()
            if cache is not None:
                cache._dead.append((_key, ref))
        return drop


#: The cache shared by the kernels (row pointers, sort orders, pattern plans).
PLANS = IdentityCache(maxsize=64)

#: Small facts about an index buffer (whether it holds padding): many entries, each a few bytes, kept apart
#: so that they never evict a plan.
FACTS = IdentityCache(maxsize=512)


def valid_entries(indices, sizes) -> tuple[int, bool]:
    """``(n_valid, first)`` of the NumPy index buffer ``indices`` (``(..., nse, k)``): how many entries are not
    padding (no coordinate past its size) and, for a 2-D buffer, whether they come first (canonical form).
    One pass over the buffer, cached in ``FACTS``: a warm call reads no index."""
    static = ("valid", tuple(sizes))
    got = FACTS.peek((indices,), static)  # the warm call: one dictionary read, no closure
    if got is not None:
        return got
    valid = valid_rows(indices, static[1])
    n = int(np.count_nonzero(valid))
    got = (n, indices.ndim == 2 and bool(valid[:n].all()))
    FACTS.put((indices,), static, got)
    return got


def record_no_padding(indices, sizes) -> None:
    """Record in ``FACTS`` that the fresh NumPy index buffer ``indices`` (2-D, ``(nse, k)``) holds no padding,
    as its producer knows (``fromdense`` of NumPy values): ``valid_entries`` then reads no index."""
    FACTS.put((indices,), ("valid", tuple(sizes)), (indices.shape[0], True))


def has_padding(indices, sizes) -> bool:
    """Whether the NumPy index buffer ``indices`` (``(..., nse, k)``) holds padding (``valid_entries``)."""
    return valid_entries(indices, sizes)[0] != math.prod(indices.shape[:-1])
