"""NumPy dispatch for BCOOArray: ``__array_function__`` and ``__array_ufunc__``.

This package sits above the public namespace: it uses only public names of
``bcoo_array`` (imported as ``xp``), and ``BCOOArray`` imports it lazily
on the first NumPy call. Its modules:

* ``.protocol``: the two protocols (NotImplemented for unknown types,
  ``out=`` refused, lookup in the tables, the refusal that names the fix
  and the opt-in ``BCOO_ARRAY_AUTO_DENSIFY=1`` for what has no entry);
* ``.registry``: the literal tables ``{numpy function: implementation}``,
  ``{ufunc: namespace function}`` and the ufunc methods served
  (``method_support``), and the result kind of each entry;
* ``.adapters``: NumPy signatures mapped onto namespace functions;
* ``.extras``: NumPy functions the namespace lacks, composed of
  namespace functions;
* ``.methods``: the ufunc methods ``reduce``, ``accumulate``,
  ``reduceat``, ``outer`` and ``at``, and NumPy's dtype rules for calling
  a namespace function;
* ``.foreign``: ufuncs without a namespace function (``scipy.special.erf``)
  applied to the stored values and the fill value, and the densifying
  fallback of the opt-in;
* ``.operands``: argument conversion and keyword refusals shared by all.
"""

from .protocol import array_function, array_ufunc

__all__ = ["array_function", "array_ufunc"]
