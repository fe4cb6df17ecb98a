"""array-api-extra's functions run on BCOOArrays (the library picks the
namespace through array-api-compat), compared with the same function on the
NumPy arrays of the same values."""

from __future__ import annotations

import array_api_extra as xpx
import numpy as np
import pytest

import bcoo_array as xp
from bcoo_array import BCOOArray

a = np.array([[0.0, 1.5, 0.0, -2.0], [3.0, 0.0, 0.0, 0.5], [0.0, 0.0, 4.0, 0.0]])
ints = np.array([[3, 0, 1, 0], [0, 3, 2, 7]], np.int64)

# name -> function of one array (BCOOArray or NumPy).
CASES = {
    "atleast_nd": lambda x: xpx.atleast_nd(x[0], ndim=3),
    "cov": lambda x: xpx.cov(x),
    "kron": lambda x: xpx.kron(x, x[:2, :2]),
    "pad": lambda x: xpx.pad(x, 1),
    "pad_widths": lambda x: xpx.pad(x, ((1, 0), (0, 2)), constant_values=3.0),
    "setdiff1d": lambda x: xpx.setdiff1d(x[0], x[1]),
    "sinc": lambda x: xpx.sinc(x),
    "isclose": lambda x: xpx.isclose(x, x + 1e-9),
    "nunique": lambda x: xpx.nunique(x),
    "nan_to_num": lambda x: xpx.nan_to_num(x / x, fill_value=-1.0),
    "create_diagonal": lambda x: xpx.create_diagonal(x[0]),
    "at_set": lambda x: xpx.at(x)[0, 1].set(7.0),
    "nansum": lambda x: xpx.nansum(x / x),
    "union1d": lambda x: xpx.union1d(x[0], x[1]),
    "isin": lambda x: xpx.isin(x, x[0]),
}


def _dense(r):
    return np.asarray(r.todense()) if isinstance(r, BCOOArray) else np.asarray(r)


@pytest.mark.parametrize("name", list(CASES))
def test_function_matches_numpy(name):
    f = CASES[name]
    got = f(xp.asarray(a))
    assert isinstance(got, BCOOArray)
    with np.errstate(all="ignore"):
        exp = f(a)
    np.testing.assert_allclose(_dense(got), exp, rtol=1e-12, equal_nan=True)


def test_expand_dims_tuple_axis():
    # Deprecated in array-api-extra in favour of the standard's own expand_dims
    # with a tuple axis; both are checked.
    with pytest.warns(DeprecationWarning, match="expand_dims"):
        got = xpx.expand_dims(xp.asarray(a), axis=(0, 2))
    exp = np.expand_dims(a, (0, 2))
    np.testing.assert_array_equal(_dense(got), exp)
    np.testing.assert_array_equal(_dense(xp.expand_dims(xp.asarray(a), axis=(0, 2))), exp)


def test_integer_functions():
    X = xp.asarray(ints)
    assert int(xpx.nunique(X)) == np.unique(ints).size
    np.testing.assert_array_equal(_dense(xpx.setdiff1d(X[1], X[0])), np.setdiff1d(ints[1], ints[0]))
    np.testing.assert_array_equal(_dense(xpx.one_hot(X[1], 8)), np.eye(8)[ints[1]])


def test_sparsity_is_kept_where_the_fill_rule_allows():
    A = xp.asarray(a)
    K = xpx.kron(A, A)
    assert K.nse < K.size and K.fill_value == 0
    C = xpx.create_diagonal(A[0])
    assert C.nse < C.size and C.fill_value == 0  # only the diagonal is stored
