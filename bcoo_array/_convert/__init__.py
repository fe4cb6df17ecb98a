"""Conversions between BCOOArray and other libraries' sparse arrays:
scipy.sparse (``.scipy``), pydata-sparse (``.pydata``) and
jax.experimental.sparse (``.jax_sparse``).

Foreign types are recognised through ``sys.modules`` (``.._foreign``), so
nothing is imported unless the user already imported it: importing
bcoo_array never imports pydata-sparse.
"""

from __future__ import annotations

from .._foreign import foreign_kind
from .jax_sparse import from_jax_sparse, to_jax_sparse
from .pydata import from_pydata_sparse, to_pydata_sparse
from .scipy import from_scipy, to_scipy


def from_foreign(obj):
    """Convert a scipy.sparse, pydata-sparse or jax.experimental.sparse object; None for anything else.

    Parameters
    ----------
    obj : object
        Any object.

    Returns
    -------
    BCOOArray or None
        The converted array (values, shape and fill value kept), or None when
        ``obj`` is not another library's sparse array.

    Raises
    ------
    TypeError
        For a jax.experimental.sparse object other than BCOO / BCSR.
    """
    kind = foreign_kind(obj)
    if kind == "scipy":
        return from_scipy(obj)
    if kind == "pydata":
        return from_pydata_sparse(obj)
    if kind == "jax":
        return from_jax_sparse(obj)
    return None


__all__ = ["from_foreign", "from_jax_sparse", "from_pydata_sparse", "from_scipy", "to_jax_sparse",
           "to_pydata_sparse", "to_scipy"]
