"""permute_dims, .T, .mT, reshape, expand_dims, squeeze and broadcast_to
against NumPy, for every layout (batch and dense dimensions included) and
fill value, eagerly and under ``jax.jit``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array import BCOOArray
from _oracle import assert_matches, cases, same_scalar, to_np


@settings(max_examples=30)
@given(data=st.data())
def test_permute_dims(data):
    c = data.draw(cases(max_ndim=4), label="x")
    perm = tuple(data.draw(st.permutations(range(c.dense.ndim)), label="perm"))
    axes = tuple(a - c.dense.ndim if data.draw(st.booleans()) else a for a in perm)
    out = xp.permute_dims(c.arr, axes)
    assert_matches(out, np.transpose(c.dense, perm))
    assert same_scalar(out.fill_value, c.fill)
    if data.draw(st.booleans(), label="jit"):
        assert_matches(jax.jit(lambda a: xp.permute_dims(a, axes))(c.arr), np.transpose(c.dense, perm))


@settings(max_examples=10)
@given(cases(min_ndim=2, max_ndim=4))
def test_transposes(c):
    assert_matches(c.arr.mT, np.swapaxes(c.dense, -1, -2))
    assert_matches(xp.matrix_transpose(c.arr), np.swapaxes(c.dense, -1, -2))
    if c.dense.ndim == 2:
        assert_matches(c.arr.T, c.dense.T)
    else:
        with pytest.raises(ValueError, match="2-D"):
            c.arr.T


@settings(max_examples=30)
@given(data=st.data())
def test_reshape(data):
    c = data.draw(cases(max_ndim=4), label="x")
    size = c.dense.size
    # a random factorisation of the size into up to 4 dims (or any zero-size shape)
    if size == 0:
        new = tuple(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3).filter(lambda s: 0 in s)))
    else:
        new = []
        rest = size
        for _ in range(data.draw(st.integers(0, 3))):
            divs = [d for d in range(1, rest + 1) if rest % d == 0]
            d = data.draw(st.sampled_from(divs))
            new.append(d)
            rest //= d
        new.append(rest)
        new = tuple(new)
        if data.draw(st.booleans()):
            perm = data.draw(st.permutations(range(len(new))))
            new = tuple(new[i] for i in perm)
    expected = c.dense.reshape(new)
    out = xp.reshape(c.arr, new)
    assert_matches(out, expected)
    assert same_scalar(out.fill_value, c.fill)
    if size and data.draw(st.booleans(), label="minus_one"):
        j = data.draw(st.integers(0, len(new) - 1))
        assert_matches(xp.reshape(c.arr, new[:j] + (-1,) + new[j + 1:]), expected)
    if data.draw(st.booleans(), label="jit"):
        assert_matches(jax.jit(lambda a: xp.reshape(a, new))(c.arr), expected)


def test_reshape_batch_layout_only_batch_changes():
    dense = np.arange(24.0).reshape(2, 3, 4) % 5
    a = BCOOArray.fromdense(dense, n_batch=2)
    out = xp.reshape(a, (6, 4))
    assert_matches(out, dense.reshape(6, 4))
    with pytest.raises(ValueError, match="reshape"):
        xp.reshape(a, (5, 5))
    with pytest.raises(ValueError, match="-1"):
        xp.reshape(a, (-1, -1))


@settings(max_examples=10)
@given(data=st.data())
def test_expand_squeeze(data):
    c = data.draw(cases(max_ndim=3), label="x")
    ax = data.draw(st.integers(-c.dense.ndim - 1, c.dense.ndim), label="axis")
    e = xp.expand_dims(c.arr, axis=ax)
    assert_matches(e, np.expand_dims(c.dense, ax))
    assert_matches(xp.squeeze(e, axis=ax), c.dense)


@settings(max_examples=20)
@given(data=st.data())
def test_broadcast_to(data):
    c = data.draw(cases(max_ndim=3), label="x")
    lead = tuple(data.draw(st.lists(st.integers(0, 2), max_size=2)))
    target = lead + tuple(data.draw(st.integers(0, 2)) if s == 1 else s for s in c.dense.shape)
    expected = np.broadcast_to(c.dense, target)
    out = xp.broadcast_to(c.arr, target)
    assert_matches(out, expected)
    assert same_scalar(out.fill_value, c.fill)
    bad = [i for i, s in enumerate(c.dense.shape) if s != 1]
    if bad:
        wrong = list(c.dense.shape)
        wrong[bad[0]] += 1
        with pytest.raises(ValueError, match="broadcast"):
            xp.broadcast_to(c.arr, tuple(wrong))


@pytest.mark.parametrize("jit", [False, True])
def test_reshape_to_0d_ignores_padding(jit):
    # Reshaping (squeezing) to 0-d drops the last sparse dimension: padding entries used
    # to land at () and be summed in (7 instead of the fill value 1 below). Found by the
    # differential fuzz (conformance/test_fuzz.py, squeeze).
    run = jax.jit if jit else (lambda f: f)
    pad_only = BCOOArray((np.array([1, 1, 1, 4], np.uint32), np.ones((4, 1), np.int32)), shape=(1,), fill_value=1)
    mixed = BCOOArray((np.array([2, 5, 3], np.int32), np.array([[1], [0], [0]], np.int32)), shape=(1,),
                      fill_value=0)
    flags = BCOOArray((np.array([True, False]), np.array([[1, 0], [0, 0]], np.int32)), shape=(1, 1), fill_value=False)
    for a, want in ((pad_only, 1), (mixed, 8), (flags, False)):
        for f in (lambda v: xp.squeeze(v, axis=tuple(range(v.ndim))), lambda v: xp.reshape(v, ())):
            got = run(f)(a)
            assert got.shape == () and got.dtype == a.dtype
            assert to_np(got) == want


def test_repeat_of_an_empty_axis_or_zero_counts():
    """repeat with a repeats array on an empty axis (an array whose slots are all padding) or with every
    count zero gives an empty result, as NumPy does (found by the fuzz: seed 1556888735, case 6700)."""
    padded = BCOOArray._from_buffers(jnp.zeros(4, jnp.int8), jnp.zeros((4, 1), jnp.int32), (0,), n_batch=0,
                                     n_dense=0, fill_value=np.int8(0))
    out = xp.repeat(padded, np.zeros(0, np.int64))
    assert out.shape == (0,) and out.nse == 0
    A = xp.asarray(np.array([[1.0, 0.0], [0.0, 2.0]], np.float32))
    got = xp.repeat(A, np.array([0, 0]), axis=0)
    assert got.shape == (0, 2) and got.todense().shape == (0, 2)
    want = np.repeat(np.array([[1.0, 0.0], [0.0, 2.0]], np.float32), [2, 0], axis=1)
    np.testing.assert_array_equal(np.asarray(xp.repeat(A, np.array([2, 0]), axis=1).todense()), want)
