"""Conversions between BCOOArray and other libraries' sparse arrays.

Foreign types are recognised through ``sys.modules`` (as array-api-compat
does), so nothing is imported unless the user already imported it.
"""

from __future__ import annotations

import sys


def from_foreign(obj):
    """Convert a scipy.sparse, pydata-sparse or jax.experimental.sparse object; None for anything else."""
    mod = type(obj).__module__ or ""
    if mod.startswith("scipy.sparse") and "scipy.sparse" in sys.modules:
        import scipy.sparse as sp

        if sp.issparse(obj):
            from .scipy import from_scipy

            return from_scipy(obj)
    if mod.startswith("sparse") and "sparse" in sys.modules:
        import sparse

        if isinstance(obj, sparse.SparseArray):
            from .pydata import from_pydata_sparse

            return from_pydata_sparse(obj)
    if mod.startswith("jax.experimental.sparse"):
        from .jax_sparse import from_jax_sparse

        return from_jax_sparse(obj)
    return None
