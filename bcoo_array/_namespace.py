"""Late binding from the array class up to the functions behind its operators.

The class [`BCOOArray`][bcoo_array.BCOOArray] sits below the chapters of the
standard (they take and return it), yet its operators (``A + B``,
``A @ x``, ``A[i]``), its scipy.sparse methods and its NumPy protocol run
those chapters. They find them at call time through the accessors here.
These three deferred imports are the only imports in the package that run
from a lower layer to a higher one (``tests/test_layers.py`` checks this);
each is load-bearing: at class-definition time the modules above do not
exist yet, because they import the class.
"""

from __future__ import annotations

from types import ModuleType


def namespace() -> ModuleType:
    """The ``bcoo_array`` namespace module (the public functions of the standard)."""
    import bcoo_array  # deferred, load-bearing: the namespace imports this layer

    return bcoo_array


def indexing() -> ModuleType:
    """The module behind ``A[key]`` and ``A[key] = value``."""
    from . import (
        _indexing_functions,  # deferred, load-bearing: the indexing chapter imports the class
    )

    return _indexing_functions


def numpy_protocol() -> ModuleType:
    """The module behind ``__array_function__`` and ``__array_ufunc__``."""
    from . import (
        _numpy,  # deferred, load-bearing: NumPy dispatch sits above the namespace
    )

    return _numpy
