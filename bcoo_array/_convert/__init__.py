"""Conversions between BCOOArray and other libraries' sparse arrays.

Foreign types are recognised through ``sys.modules`` (as array-api-compat
does), so nothing is imported unless the user already imported it: importing
bcoo_array never imports pydata-sparse.
"""

from __future__ import annotations

import sys


def from_foreign(obj):
    """Convert a scipy.sparse, pydata-sparse or jax.experimental.sparse object; None for anything else.

    Raises
    ------
    TypeError
        For a jax.experimental.sparse object other than BCOO / BCSR.
    """
    mod = type(obj).__module__ or ""
    sp = sys.modules.get("scipy.sparse")
    if mod.startswith("scipy.sparse") and sp is not None and sp.issparse(obj):
        from .scipy import from_scipy

        return from_scipy(obj)
    pyd = sys.modules.get("sparse")
    if mod.startswith("sparse") and pyd is not None and isinstance(obj, getattr(pyd, "SparseArray", ())):
        from .pydata import from_pydata_sparse

        return from_pydata_sparse(obj)
    js = sys.modules.get("jax.experimental.sparse")
    if mod.startswith("jax.experimental.sparse") and js is not None and isinstance(obj, js.JAXSparse):
        from .jax_sparse import from_jax_sparse

        return from_jax_sparse(obj)
    return None
