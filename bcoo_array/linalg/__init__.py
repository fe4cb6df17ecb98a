"""The linear algebra extension of the array API standard: ``bcoo_array.linalg``.

The standard's functions live in :mod:`._standard` (see its docstring for
which results stay sparse and which are dense by nature). Iterative sparse
solvers, beyond the standard, are added below the standard block.
Spec: https://data-apis.org/array-api/2025.12/extensions/linear_algebra_functions.html
"""

from ._standard import *  # noqa: F401,F403
from ._standard import __all__ as _standard_all

__all__ = list(_standard_all)

# Iterative solvers (beyond the standard).
from ._solvers import __all__ as _solvers_all  # noqa: E402
from ._solvers import bicgstab, cg, gmres, lobpcg, spsolve  # noqa: E402,F401

__all__ += _solvers_all
