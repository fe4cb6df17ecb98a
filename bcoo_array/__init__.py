"""bcoo_array: sparse arrays in JAX's BCOO layout with a fill value, as a
complete namespace of the Python array API standard.

    >>> import bcoo_array as xp
    >>> A = xp.asarray([[0.0, 2.0], [0.0, 0.0]])
    >>> A.nse, float(xp.sum(A))
    (1, 2.0)

The namespace is assembled explicitly below, one block per chapter of the
standard (https://data-apis.org/array-api/2025.12/).
"""

from ._version import API_VERSION, __version__

__array_api_version__ = API_VERSION

# The array object and constructors beyond the standard.
from ._array_object import BCOOArray

__all__ = ["BCOOArray", "__array_api_version__", "__version__"]

# Constants.
from ._constants import e, inf, nan, newaxis, pi

__all__ += ["e", "inf", "nan", "newaxis", "pi"]

# Data types.
from ._dtypes import (
    bool_ as bool,  # noqa: A001 - the standard's name
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)

__all__ += ["bool", "complex64", "complex128", "float32", "float64", "int8", "int16", "int32", "int64",
            "uint8", "uint16", "uint32", "uint64"]

# Creation functions.
from ._creation_functions import *  # noqa: F401,F403
from ._creation_functions import __all__ as _creation_all

__all__ += _creation_all

# Data type functions.
from ._data_type_functions import *  # noqa: F401,F403
from ._data_type_functions import __all__ as _dtf_all

__all__ += _dtf_all

# Element-wise functions.
from ._elementwise_functions import *  # noqa: F401,F403
from ._elementwise_functions import __all__ as _ew_all

__all__ += _ew_all

# Indexing functions.
from ._indexing_functions import *  # noqa: F401,F403
from ._indexing_functions import __all__ as _idx_all

__all__ += _idx_all

# Linear algebra functions.
from ._linear_algebra_functions import *  # noqa: F401,F403
from ._linear_algebra_functions import __all__ as _la_all

__all__ += _la_all

# Manipulation functions.
from ._manipulation_functions import *  # noqa: F401,F403
from ._manipulation_functions import __all__ as _manip_all

__all__ += _manip_all

# Statistical functions.
from ._statistical_functions import *  # noqa: F401,F403
from ._statistical_functions import __all__ as _stat_all

__all__ += _stat_all

# Searching functions.
from ._searching_functions import *  # noqa: F401,F403
from ._searching_functions import __all__ as _search_all

__all__ += _search_all

# Set functions.
from ._set_functions import *  # noqa: F401,F403
from ._set_functions import __all__ as _set_all

__all__ += _set_all

# Sorting functions.
from ._sorting_functions import *  # noqa: F401,F403
from ._sorting_functions import __all__ as _sort_all

__all__ += _sort_all

# Utility functions.
from ._utility_functions import *  # noqa: F401,F403
from ._utility_functions import __all__ as _util_all

__all__ += _util_all

# Manipulation functions that rearrange or join arrays.
from ._rearranging_functions import *  # noqa: F401,F403
from ._rearranging_functions import __all__ as _rearr_all

__all__ += _rearr_all

# Extensions: linear algebra and Fourier transforms.
from . import fft, linalg  # noqa: E402

__all__ += ["fft", "linalg"]

# Inspection.
from ._info import __array_namespace_info__

__all__ += ["__array_namespace_info__"]

# Conversions and scipy.sparse-compatible functions (beyond the standard).
from ._convert.jax_sparse import from_jax_sparse, to_jax_sparse
from ._convert.pydata import from_pydata_sparse, to_pydata_sparse
from ._convert.scipy import from_scipy, to_scipy
from ._scipy_functions import *  # noqa: F401,F403
from ._scipy_functions import __all__ as _scipy_fn_all
from .io import load_npz, mmread, mmwrite, save_npz

__all__ += ["from_scipy", "to_scipy", "from_pydata_sparse", "to_pydata_sparse", "from_jax_sparse", "to_jax_sparse",
            "save_npz", "load_npz", "mmread", "mmwrite"] + _scipy_fn_all

# Sharded arrays (bcoo_array.sharded): the namespace functions above take them
# too; keep this block last so that every function is routed.
from . import sharded
from .sharded._dispatch import install as _install_sharded

_install_sharded(globals())
