"""array-api-compat on BCOOArrays: namespace detection, its helpers, and a
generic array-API routine run through ``array_namespace`` on both bcoo_array
and the reference namespace (array-api-strict) with the same values."""

from __future__ import annotations

import array_api_compat as compat
import array_api_strict
import jax.numpy as jnp
import numpy as np
import pytest

import bcoo_array as xp

a = np.array([[0.0, 1.5, 0.0, -2.0], [3.0, 0.0, 0.0, 0.5], [0.0, 0.0, 4.0, 0.0]])


def test_array_namespace_is_bcoo_array():
    A = xp.asarray(a)
    assert compat.array_namespace(A) is xp
    assert compat.array_namespace(A, A.T) is xp
    assert compat.array_namespace(A, 2.0, None) is xp  # Python scalars and None are ignored
    assert compat.get_namespace(A) is xp


@pytest.mark.parametrize("other", [np.ones(3), jnp.ones(3), array_api_strict.ones(3)],
                         ids=["numpy", "jax", "array_api_strict"])
def test_mixing_namespaces_raises(other):
    with pytest.raises(TypeError, match="[Mm]ultiple namespaces"):
        compat.array_namespace(xp.asarray(a), other)


def test_predicates_and_helpers():
    A = xp.asarray(a)
    assert compat.is_array_api_obj(A)
    for pred in (compat.is_numpy_array, compat.is_jax_array, compat.is_pydata_sparse_array):
        assert not pred(A)
    assert not compat.is_jax_namespace(xp) and not compat.is_numpy_namespace(xp)
    assert compat.size(A) == a.size
    assert compat.device(A) == A.device
    B = compat.to_device(A, A.device)
    np.testing.assert_array_equal(np.asarray(B.todense()), a)
    assert compat.is_lazy_array(A) is False


def _softmax_rows(x):
    """A numerically stable row softmax written against the array API only."""
    ns = compat.array_namespace(x)
    m = ns.max(x, axis=1, keepdims=True)
    e = ns.exp(x - m)
    return e / ns.sum(e, axis=1, keepdims=True)


def _column_zscores(x):
    ns = compat.array_namespace(x)
    mu = ns.mean(x, axis=0)
    sd = ns.std(x, axis=0, correction=1)
    return (x - mu) / ns.where(sd > 0, sd, ns.ones_like(sd))


@pytest.mark.parametrize("routine", [_softmax_rows, _column_zscores])
def test_generic_routine_matches_reference_namespace(routine):
    got = routine(xp.asarray(a))
    assert compat.array_namespace(got) is xp
    ref = routine(array_api_strict.asarray(a))
    np.testing.assert_allclose(np.asarray(got.todense()), np.asarray(ref), rtol=1e-12)


def test_sparse_stays_sparse_through_compat():
    A = xp.asarray(a)
    ns = compat.array_namespace(A)
    B = ns.multiply(ns.sin(A), 2.0)  # sin(0) * 2 == 0: the pattern is kept
    assert B.nse == A.nse and B.fill_value == 0
