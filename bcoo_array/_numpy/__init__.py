"""NumPy dispatch for BCOOArray: ``__array_function__`` and ``__array_ufunc__``.

This package sits above the public namespace: it uses only public names of
``bcoo_array`` (imported as ``xp``), and ``BCOOArray`` imports it lazily
on the first NumPy call. Its modules:

* ``.protocol``: the two protocols (NotImplemented for unknown types,
  ``out=`` refused, lookup in the tables);
* ``.registry``: the literal tables ``{numpy function: implementation}``
  and ``{ufunc: namespace function}``, and the result kind of each entry;
* ``.adapters``: NumPy signatures mapped onto namespace functions;
* ``.extras``: NumPy functions the namespace lacks, composed of
  namespace functions;
* ``.operands``: argument conversion and keyword refusals shared by both.
"""

from .protocol import array_function, array_ufunc

__all__ = ["array_function", "array_ufunc"]
