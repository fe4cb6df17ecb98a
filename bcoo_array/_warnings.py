"""The library's warning classes and how they are raised (pointing at the user's line)."""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class MatrixSemanticsWarning(UserWarning):
    """A scipy.sparse *matrix* (``spmatrix``) became an array with array semantics.

    scipy's ``csr_matrix``, ``coo_matrix``, ... follow ``numpy.matrix``:
    ``A * B`` is the matrix product and ``A.sum(axis=1)`` keeps two
    dimensions. A BCOOArray follows the array semantics of scipy's ``sparray``
    (``csr_array``): ``*`` is element-wise (``@`` is the product) and a sum
    drops its axis, so code written for a matrix silently computes something
    else. scipy documents the change in its migration guide
    (https://docs.scipy.org/doc/scipy/reference/sparse.migration_to_sparray.html).

    Silence it once the code uses ``@``::

        import warnings
        warnings.filterwarnings("ignore", category=bcoo_array.MatrixSemanticsWarning)
    """


class DowncastWarning(UserWarning):
    """A 64-bit input was taken as 32-bit: JAX's x64 mode is off and the downcast opt-in is on.

    See [`bcoo_array.set_downcast_64bit`][]. Values outside the 32-bit
    type's range or precision change; turn x64 on
    (``jax.config.update("jax_enable_x64", True)``) to keep them.
    """


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the first frame outside this package (the user's call)."""
    level = 2  # stacklevel 1 is this function, 2 its caller (frame below)
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
