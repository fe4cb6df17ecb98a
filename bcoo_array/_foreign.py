"""Recognising other libraries' sparse arrays without importing those libraries.

A type is recognised through ``sys.modules`` (as array-api-compat does): if
the user never imported pydata-sparse, no object can be a pydata-sparse
array, and importing bcoo_array never imports it. The conversions themselves
live in ``._convert``.
"""

from __future__ import annotations

import sys


def foreign_kind(obj) -> str | None:
    """Which library's sparse array ``obj`` is: ``"scipy"``, ``"pydata"``, ``"jax"`` or None.

    Parameters
    ----------
    obj : object
        Any object.

    Returns
    -------
    str or None
        ``"scipy"`` for a scipy.sparse array or matrix, ``"pydata"`` for a
        ``sparse.SparseArray``, ``"jax"`` for a ``jax.experimental.sparse``
        array (``JAXSparse``), None for anything else.
    """
    mod = type(obj).__module__ or ""
    if mod.startswith("scipy.sparse"):
        sp = sys.modules.get("scipy.sparse")
        return "scipy" if sp is not None and sp.issparse(obj) else None
    if mod == "sparse" or mod.startswith("sparse."):
        pyd = sys.modules.get("sparse")
        return "pydata" if pyd is not None and isinstance(obj, getattr(pyd, "SparseArray", ())) else None
    if mod.startswith("jax.experimental.sparse"):
        js = sys.modules.get("jax.experimental.sparse")
        return "jax" if js is not None and isinstance(obj, js.JAXSparse) else None
    return None
