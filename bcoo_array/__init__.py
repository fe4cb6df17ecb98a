"""bcoo_array: sparse arrays in JAX's BCOO layout with a fill value, as a
complete namespace of the Python array API standard.

    >>> import bcoo_array as xp
    >>> A = xp.asarray([[0.0, 2.0], [0.0, 0.0]])
    >>> A.nse, float(xp.sum(A))
    (1, 2.0)

The namespace is assembled explicitly below, one block per chapter of the
standard (https://data-apis.org/array-api/2025.12/), then the extensions and
what lies beyond the standard. ``tests/test_namespace.py`` checks that the
blocks and ``__all__`` agree.
"""

from ._version import API_VERSION as __array_api_version__
from ._version import __version__

__all__ = ["__array_api_version__", "__version__"]

# The array object.
from ._array_object import BCOOArray

__all__ += ["BCOOArray"]

# Constants.
from ._constants import e, inf, nan, newaxis, pi

__all__ += ["e", "inf", "nan", "newaxis", "pi"]

# Data types.
from ._dtypes import bool_ as bool  # noqa: A001 - the standard's name
from ._dtypes import (
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

__all__ += ["bool", "complex64", "complex128", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
            "uint8", "uint16", "uint32", "uint64"]

# Creation functions.
from ._creation_functions import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)

__all__ += [
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace",
    "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
]

# Data type functions.
from ._data_type_functions import (
    astype,
    can_cast,
    finfo,
    iinfo,
    isdtype,
    result_type,
)

__all__ += [
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
]

# Element-wise functions.
from ._elementwise_functions import (
    abs,
    acos,
    acosh,
    add,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    ceil,
    clip,
    conj,
    copysign,
    cos,
    cosh,
    divide,
    equal,
    exp,
    expm1,
    floor,
    floor_divide,
    greater,
    greater_equal,
    hypot,
    imag,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log10,
    log1p,
    log2,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    multiply,
    negative,
    nextafter,
    not_equal,
    positive,
    pow,
    real,
    reciprocal,
    remainder,
    round,
    sign,
    signbit,
    sin,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    trunc,
)

__all__ += [
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_invert",
    "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj",
    "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater",
    "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log10",
    "log1p", "log2", "logaddexp", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum",
    "minimum", "multiply", "negative", "nextafter", "not_equal", "positive", "pow", "real", "reciprocal",
    "remainder", "round", "sign", "signbit", "sin", "sinh", "sqrt", "square", "subtract", "tan", "tanh",
    "trunc",
]

# Indexing functions.
from ._indexing_functions import (
    take,
    take_along_axis,
)

__all__ += [
    "take", "take_along_axis",
]

# Linear algebra functions.
from ._linear_algebra_functions import (
    matmul,
    matrix_transpose,
    tensordot,
    vecdot,
)

__all__ += [
    "matmul", "matrix_transpose", "tensordot", "vecdot",
]

# Manipulation functions.
from ._manipulation_functions import (
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    tile,
    unstack,
)

__all__ += [
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
]

# Searching functions.
from ._searching_functions import (
    argmax,
    argmin,
    count_nonzero,
    nonzero,
    searchsorted,
    where,
)

__all__ += [
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where",
]

# Set functions.
from ._set_functions import (
    isin,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)

__all__ += [
    "isin", "unique_all", "unique_counts", "unique_inverse", "unique_values",
]

# Sorting functions.
from ._sorting_functions import (
    argsort,
    sort,
)

__all__ += [
    "argsort", "sort",
]

# Statistical functions.
from ._statistical_functions import (
    cumulative_prod,
    cumulative_sum,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)

__all__ += [
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
]

# Utility functions.
from ._utility_functions import (
    all,
    any,
    diff,
)

__all__ += [
    "all", "any", "diff",
]

# Extensions: linear algebra and Fourier transforms.
from . import fft, linalg

__all__ += ["fft", "linalg"]

# Beyond the standard: sparse-aware grad / jacfwd / jacrev (BCOOArray inputs and outputs).
from . import autodiff

__all__ += ["autodiff"]

# Inspection (and, beyond the standard, the state of the native kernels).
from ._info import __array_namespace_info__, native_kernel_info

__all__ += ["__array_namespace_info__", "native_kernel_info"]

# Warnings of the library's own.
from ._warnings import DowncastWarning, MatrixSemanticsWarning

__all__ += ["DowncastWarning", "MatrixSemanticsWarning"]

# Conversions (beyond the standard).
from ._convert import (
    from_jax_sparse,
    from_pydata_sparse,
    from_scipy,
    to_jax_sparse,
    to_pydata_sparse,
    to_scipy,
)

__all__ += [
    "from_jax_sparse", "from_pydata_sparse", "from_scipy", "to_jax_sparse", "to_pydata_sparse", "to_scipy",
]

# Storage layout (beyond the standard; jax.experimental.sparse's bcoo_update_layout).
from ._relayout import (
    update_layout,
)

__all__ += [
    "update_layout",
]

# File input and output (beyond the standard).
from .io import (
    save_npz,
    load_npz,
    mmread,
    mmwrite,
)

__all__ += [
    "save_npz", "load_npz", "mmread", "mmwrite",
]

# scipy.sparse construction functions (beyond the standard).
from ._scipy_functions import (
    coo_array,
    csr_array,
    csc_array,
    eye_array,
    identity,
    diags_array,
    random_array,
    hstack,
    vstack,
    block_array,
    block_diag,
    kron,
    kronsum,
    find,
    issparse,
)

__all__ += [
    "coo_array", "csr_array", "csc_array",
    "eye_array", "identity", "diags_array", "random_array", "hstack", "vstack", "block_array", "block_diag",
    "kron", "kronsum", "find", "issparse",
]

# Settings (beyond the standard): the limit on implicit densification, the 64-bit downcast opt-in.
from ._dtypes import (
    downcast_64bit,
    set_downcast_64bit,
)
from ._limits import (
    get_max_dense_bytes,
    set_max_dense_bytes,
)

__all__ += [
    "downcast_64bit", "get_max_dense_bytes", "set_downcast_64bit", "set_max_dense_bytes",
]


def __getattr__(name: str):
    """``bcoo_array.sharded``, imported on first use (it sits above the namespace)."""
    if name == "sharded":
        import importlib

        return importlib.import_module(".sharded", __name__)
    raise AttributeError(f"module 'bcoo_array' has no attribute {name!r}")
