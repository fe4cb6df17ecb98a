"""What every array type of this package shares: metadata and the operator protocol.

``ArrayBase`` is mixed into [`BCOOArray`][bcoo_array.BCOOArray] and
[`ShardedBCOOArray`][bcoo_array.sharded.ShardedBCOOArray]. It reads only the attributes
both hold (``data``, ``indices``, ``shape``, ``_fill``) and implements the
Python operators by calling the namespace function of the same meaning
(found at call time through ``._namespace``); the namespace routes a
sharded operand to its own implementation (``._routing``).
"""

from __future__ import annotations

import jax
import numpy as np

from ._foreign import foreign_kind
from ._shapes import prod
from ._namespace import namespace
from ._routing import is_routed_type
from ._version import API_VERSION, SUPPORTED_API_VERSIONS

_SCALARS_AND_ARRAYS = (bool, int, float, complex, np.ndarray, np.generic, jax.Array)


def _is_operand(x) -> bool:
    """Whether an operator should handle ``x`` (else it returns NotImplemented)."""
    return (isinstance(x, (ArrayBase, *_SCALARS_AND_ARRAYS)) or is_routed_type(type(x))
            or foreign_kind(x) is not None)


def _sequence_operand(x):
    """A list or tuple operand of a Python operator as an array (``bcoo_array.asarray``: NumPy's reading of
    nested sequences, Python numbers' default dtypes), as NumPy's operators take them; anything else as is.
    (Returning NotImplemented for a list would let Python fall back to the list's own ``*``, a repetition
    through ``__index__``, or to ``==``'s identity test: silent wrong answers.)"""
    return namespace().asarray(x) if isinstance(x, (list, tuple)) else x


def _binary(name: str, x1, x2):
    """``x1 <op> x2`` through the namespace function ``name``; NotImplemented for unknown operands."""
    x1, x2 = _sequence_operand(x1), _sequence_operand(x2)
    if not (_is_operand(x1) and _is_operand(x2)):
        return NotImplemented
    return getattr(namespace(), name)(x1, x2)


class ArrayBase:
    """Metadata properties and Python operators shared by the package's array types."""

    __slots__ = ()
    __array_priority__ = 100

    # -- metadata ----------------------------------------------------------------------

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the stored data and of the fill value."""
        return np.dtype(self.data.dtype)

    @property
    def fill_value(self) -> np.generic:
        """The value of every unstored entry, a NumPy scalar of [`dtype`][bcoo_array.BCOOArray.dtype]."""
        return self._fill

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements (stored or not)."""
        return prod(self.shape)

    @property
    def nse(self) -> int:
        """Number of stored entries per batch element (per block when sharded), padding included."""
        return int(self.indices.shape[-2])

    @property
    def n_sparse(self) -> int:
        """Number of sparse dimensions."""
        return int(self.indices.shape[-1])

    @property
    def T(self):
        """Transpose of a 2-D array (the standard restricts ``T`` to 2-D)."""
        if self.ndim != 2:
            raise ValueError(f".T needs a 2-D array, this one is {self.ndim}-D; use permute_dims or .mT")
        return namespace().permute_dims(self, (1, 0))

    @property
    def mT(self):
        """Transpose of the last two dimensions."""
        return namespace().matrix_transpose(self)

    def __contains__(self, value) -> bool:
        """``value in A``: whether an element of ``A`` equals ``value`` (NumPy's ``(A == value).any()``; unstored
        elements hold the fill value). Raises under ``jax.jit``, where the answer is traced."""
        return bool(namespace().any(self == value))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __array_namespace__(self, *, api_version: str | None = None):
        """The ``bcoo_array`` module (array API ``__array_namespace__``).

        Raises
        ------
        ValueError
            For an ``api_version`` this namespace does not implement.
        """
        if api_version is not None and api_version not in SUPPORTED_API_VERSIONS:
            raise ValueError(f"api_version={api_version!r} is not supported; use {API_VERSION!r}")
        return namespace()

    def astype(self, dtype, /, *, copy: bool = True, device=None):
        """Cast to ``dtype`` (same as [`bcoo_array.astype`][])."""
        return namespace().astype(self, dtype, copy=copy, device=device)

    # -- operators: each calls the namespace function of the same meaning ------------------

    def __abs__(self):
        return namespace().abs(self)

    def __neg__(self):
        return namespace().negative(self)

    def __pos__(self):
        return namespace().positive(self)

    def __invert__(self):
        return namespace().bitwise_invert(self)

    def __add__(self, other):
        return _binary("add", self, other)

    def __radd__(self, other):
        return _binary("add", other, self)

    def __sub__(self, other):
        return _binary("subtract", self, other)

    def __rsub__(self, other):
        return _binary("subtract", other, self)

    def __mul__(self, other):
        return _binary("multiply", self, other)

    def __rmul__(self, other):
        return _binary("multiply", other, self)

    def __truediv__(self, other):
        return _binary("divide", self, other)

    def __rtruediv__(self, other):
        return _binary("divide", other, self)

    def __floordiv__(self, other):
        return _binary("floor_divide", self, other)

    def __rfloordiv__(self, other):
        return _binary("floor_divide", other, self)

    def __mod__(self, other):
        return _binary("remainder", self, other)

    def __rmod__(self, other):
        return _binary("remainder", other, self)

    def __divmod__(self, other):
        """``(self // other, self % other)``: Python's ``divmod``, as NumPy arrays and ``jax.Array`` answer it
        (``floor_divide`` and ``remainder``, with their fill values)."""
        quotient = self.__floordiv__(other)
        if quotient is NotImplemented:
            return NotImplemented
        return quotient, self.__mod__(other)

    def __rdivmod__(self, other):
        """``(other // self, other % self)``: Python's ``divmod`` with this array second."""
        quotient = self.__rfloordiv__(other)
        if quotient is NotImplemented:
            return NotImplemented
        return quotient, self.__rmod__(other)

    def __pow__(self, other):
        return _binary("pow", self, other)

    def __rpow__(self, other):
        return _binary("pow", other, self)

    def __matmul__(self, other):
        return _binary("matmul", self, other)

    def __rmatmul__(self, other):
        return _binary("matmul", other, self)

    def __and__(self, other):
        return _binary("bitwise_and", self, other)

    def __rand__(self, other):
        return _binary("bitwise_and", other, self)

    def __or__(self, other):
        return _binary("bitwise_or", self, other)

    def __ror__(self, other):
        return _binary("bitwise_or", other, self)

    def __xor__(self, other):
        return _binary("bitwise_xor", self, other)

    def __rxor__(self, other):
        return _binary("bitwise_xor", other, self)

    def __lshift__(self, other):
        return _binary("bitwise_left_shift", self, other)

    def __rlshift__(self, other):
        return _binary("bitwise_left_shift", other, self)

    def __rshift__(self, other):
        return _binary("bitwise_right_shift", self, other)

    def __rrshift__(self, other):
        return _binary("bitwise_right_shift", other, self)

    def __eq__(self, other):
        return _binary("equal", self, other)

    def __ne__(self, other):
        return _binary("not_equal", self, other)

    def __lt__(self, other):
        return _binary("less", self, other)

    def __le__(self, other):
        return _binary("less_equal", self, other)

    def __gt__(self, other):
        return _binary("greater", self, other)

    def __ge__(self, other):
        return _binary("greater_equal", self, other)

    __hash__ = None  # arrays compare elementwise, like NumPy arrays
