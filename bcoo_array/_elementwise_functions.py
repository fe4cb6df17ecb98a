"""Element-wise functions of the array API standard, generated from one table.

Each function applies the JAX function of the same meaning under the
fill-value rule (``._fill_rule``): a sparse input stays sparse, its fill
value becomes ``f(fill)`` (``exp`` of a zero-filled array has fill value 1).
Special cases for NaN, infinities and signed zeros are those of the JAX
(XLA) implementations, which follow IEEE 754 as the standard asks.

Spec: https://data-apis.org/array-api/2025.12/API_specification/elementwise_functions.html
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax.numpy as jnp
import numpy as np

from . import _fill_rule
from ._fill import Twin, exact_zero
from ._array_object import BCOOArray
from ._shapes import is_tracer
from ._operands import (
    PY_SCALARS,
    as_operand,
    binary_operands,
    cast,
    check_category,
    scalar_dtype,
    scalar_to_array,
)
from ._relayout import dense_layout, drop_fill_entries
from ._routing import public, routed


class Spec(NamedTuple):
    fn: Callable
    nargs: int
    category: str
    summary: str
    linear: bool = False
    annihilator: object = None


def _reciprocal(x):
    return jnp.asarray(1, x.dtype) / x


def _sign(x):
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        mag = jnp.abs(x)
        return jnp.where(mag == 0, jnp.zeros((), x.dtype), x / jnp.where(mag == 0, 1, mag).astype(x.dtype))
    if jnp.issubdtype(x.dtype, jnp.floating):
        # The standard: sign(-0) is +0 (jnp.sign keeps the sign bit).
        return jnp.where(x == 0, jnp.zeros((), x.dtype), jnp.sign(x))
    return jnp.sign(x)


def _complex_fix(fn, cases):
    """``fn`` with the standard's special cases for complex ``x`` that XLA misses.

    ``cases`` lists ``(predicate(re, im), value)``; where a predicate holds the
    result is ``value`` (a Python complex). Real input is passed through.
    """
    def wrapped(x):
        out = fn(x)
        if not jnp.issubdtype(jnp.result_type(x), jnp.complexfloating):
            return out
        re, im = jnp.real(x), jnp.imag(x)
        for pred, value in cases:
            out = jnp.where(pred(re, im), jnp.asarray(value, out.dtype), out)
        return out

    # Eagerly these run primitive by primitive on complex input: fused into one XLA program, the
    # bit tests of ``exact_zero`` take a subnormal for zero on the CPU (flush-to-zero), as under jit.
    wrapped.fuse_complex = False
    return wrapped


def _neg_inf(v):
    return jnp.isinf(v) & (v < 0)


def _pos_inf(v):
    return jnp.isinf(v) & (v > 0)


_INF, _NAN = float("inf"), float("nan")
# Special cases of the standard's exp / expm1 / sqrt pages for an infinite real
# part with an infinite or NaN imaginary part (XLA returns NaN + NaN j there).
_exp = _complex_fix(jnp.exp, [
    (lambda re, im: _neg_inf(re) & ~jnp.isfinite(im), 0j),
    (lambda re, im: _pos_inf(re) & ~jnp.isfinite(im), complex(_INF, _NAN)),
])
_expm1 = _complex_fix(jnp.expm1, [
    (lambda re, im: _neg_inf(re) & ~jnp.isfinite(im), complex(-1.0, 0.0)),
    (lambda re, im: _pos_inf(re) & ~jnp.isfinite(im), complex(_INF, _NAN)),
])
_sqrt = _complex_fix(jnp.sqrt, [
    (lambda re, im: _neg_inf(re) & jnp.isnan(im), complex(_NAN, _INF)),
    (lambda re, im: _pos_inf(re) & jnp.isnan(im), complex(_INF, _NAN)),
])

_PI_2 = float(np.pi / 2)


def _zero(v, negative: bool):
    return exact_zero(v) & (jnp.signbit(v) == negative)


# More special cases of the standard's complex pages (finite/infinite/NaN
# combinations where XLA returns NaN + NaN j or another value).
_cosh = _complex_fix(jnp.cosh, [
    (lambda re, im: exact_zero(re) & ~jnp.isfinite(im), complex(_NAN, 0.0)),
    (lambda re, im: jnp.isinf(re) & ~jnp.isfinite(im), complex(_INF, _NAN)),
])
_sinh = _complex_fix(jnp.sinh, [
    (lambda re, im: _zero(re, False) & ~jnp.isfinite(im), complex(0.0, _NAN)),
    (lambda re, im: _zero(re, True) & ~jnp.isfinite(im), complex(-0.0, _NAN)),
    (lambda re, im: _pos_inf(re) & ~jnp.isfinite(im), complex(_INF, _NAN)),
    (lambda re, im: _neg_inf(re) & ~jnp.isfinite(im), complex(-_INF, _NAN)),
])
_tanh = _complex_fix(jnp.tanh, [
    (lambda re, im: _pos_inf(re) & jnp.isfinite(im) & (im > 0), complex(1.0, 0.0)),
    (lambda re, im: _pos_inf(re) & jnp.isfinite(im) & (im < 0), complex(1.0, -0.0)),
    (lambda re, im: _neg_inf(re) & jnp.isfinite(im) & (im > 0), complex(-1.0, 0.0)),
    (lambda re, im: _neg_inf(re) & jnp.isfinite(im) & (im < 0), complex(-1.0, -0.0)),
    (lambda re, im: _zero(re, False) & ~jnp.isfinite(im), complex(0.0, _NAN)),
    (lambda re, im: _zero(re, True) & ~jnp.isfinite(im), complex(-0.0, _NAN)),
])
_log = _complex_fix(jnp.log, [
    (lambda re, im: (jnp.isinf(re) & jnp.isnan(im)) | (jnp.isnan(re) & jnp.isinf(im)), complex(_INF, _NAN)),
])
_log1p = _complex_fix(jnp.log1p, [
    (lambda re, im: (jnp.isinf(re) & jnp.isnan(im)) | (jnp.isnan(re) & jnp.isinf(im)), complex(_INF, _NAN)),
])
_asinh = _complex_fix(jnp.arcsinh, [
    (lambda re, im: jnp.isnan(re) & _zero(im, False), complex(_NAN, 0.0)),
    (lambda re, im: jnp.isnan(re) & _zero(im, True), complex(_NAN, -0.0)),
    (lambda re, im: jnp.isnan(re) & jnp.isfinite(im) & ~exact_zero(im), complex(_NAN, _NAN)),
])
_acosh = _complex_fix(jnp.arccosh, [
    (lambda re, im: exact_zero(re) & jnp.isnan(im), complex(_NAN, _PI_2)),
    (lambda re, im: jnp.isfinite(re) & ~exact_zero(re) & jnp.isnan(im), complex(_NAN, _NAN)),
    (lambda re, im: jnp.isnan(re) & jnp.isfinite(im), complex(_NAN, _NAN)),
])
_acos = _complex_fix(jnp.arccos, [
    (lambda re, im: exact_zero(re) & jnp.isnan(im), complex(_PI_2, _NAN)),
    (lambda re, im: jnp.isfinite(re) & ~exact_zero(re) & jnp.isnan(im), complex(_NAN, _NAN)),
    (lambda re, im: jnp.isnan(re) & jnp.isfinite(im), complex(_NAN, _NAN)),
])
_atanh = _complex_fix(jnp.arctanh, [
    (lambda re, im: jnp.isnan(re) & ~jnp.isinf(im), complex(_NAN, _NAN)),
    (lambda re, im: jnp.isfinite(re) & ~exact_zero(re) & jnp.isnan(im), complex(_NAN, _NAN)),
    (lambda re, im: _zero(re, False) & jnp.isnan(im), complex(0.0, _NAN)),
    (lambda re, im: _zero(re, True) & jnp.isnan(im), complex(-0.0, _NAN)),
    (lambda re, im: _pos_inf(re) & jnp.isnan(im), complex(0.0, _NAN)),
    (lambda re, im: _neg_inf(re) & jnp.isnan(im), complex(-0.0, _NAN)),
])


def _floor_divide(x1, x2):
    """jnp.floor_divide, with the standard's special cases for floats.

    XLA's floor division (remainder based) gives NaN for infinite x1 and -1
    for a negative finite x1 over +infinity; the standard asks for the
    true quotient there (a signed infinity or zero), and for signed zeros
    from a zero x1: where x1 is zero or either operand infinite, the result
    is ``x1 / x2``. An integer divided by zero gives 0, NumPy's answer and
    the host kernels' (XLA gives -1, -2 or the dtype's largest value; the
    standard leaves it unspecified, but one input gets one answer eagerly
    and under ``jit``).
    """
    q = jnp.floor_divide(x1, x2)
    if not jnp.issubdtype(q.dtype, jnp.floating):
        return jnp.where(x2 == 0, jnp.zeros((), q.dtype), q)
    # A zero quotient of a nonzero finite x1 is the floor of a positive fraction: +0 (XLA gives -0 for two
    # negative operands, NumPy and the host kernels +0); a zero x1 keeps its signed zero below.
    q = jnp.where(q == 0, jnp.zeros((), q.dtype), q)
    special = (x1 == 0) | jnp.isinf(x1) | jnp.isinf(x2)
    return jnp.where(special, jnp.true_divide(x1, x2), q)


def _remainder(x1, x2):
    """jnp.remainder, with the standard's signed zeros for floats: a zero
    result takes the sign of x2 (``remainder(-0, 1)`` is +0)."""
    r = jnp.remainder(x1, x2)
    if not jnp.issubdtype(r.dtype, jnp.floating):
        return r
    return jnp.where(r == 0, jnp.copysign(jnp.zeros((), r.dtype), x2), r)


def _pow(x1, x2):
    """jnp.power, with two of the standard's complex special cases that XLA misses.

    The standard defines complex ``pow`` through ``exp(x2 * log(x1))``:
    ``0 ** z`` is 0 for a finite ``z`` of positive real part (``log(0) =
    -inf``; XLA gives NaN + NaN j), and a NaN in ``z`` gives NaN + NaN j even
    for a base of 1 (XLA gives 1). NumPy's and C99's ``cpow`` agree.
    """
    out = jnp.power(x1, x2)
    if not jnp.issubdtype(out.dtype, jnp.complexfloating):
        return out
    zero_base = (x1 == 0) & (jnp.real(x2) > 0) & jnp.isfinite(x2)
    out = jnp.where(zero_base, jnp.zeros((), out.dtype), out)
    # A NaN in the exponent makes exp(x2 * log(x1)) NaN + NaN j, a base of 1 included (XLA gives 1).
    nan_exponent = jnp.isnan(jnp.real(x2)) | jnp.isnan(jnp.imag(x2))
    return jnp.where(nan_exponent, jnp.asarray(complex(_NAN, _NAN), out.dtype), out)


def _check_integer_exponent(x2) -> None:
    """Refuse a concrete negative integer scalar exponent, as ``jax.numpy.power`` does (NumPy too).

    (``pow``'s values run in a compiled program that sees the exponent as a traced value and would
    wrap around; the standard leaves negative integer exponents unspecified.)
    """
    if np.ndim(x2) != 0 or np.dtype(x2.dtype).kind not in "iu":
        return
    if isinstance(x2, BCOOArray):
        x2 = x2._host_scalar()  # None: traced, or several stored entries to sum
    if x2 is None or is_tracer(x2):
        return
    if int(np.asarray(x2)) < 0:
        raise TypeError("pow(): integers cannot be raised to negative integer powers; "
                        "cast the base to a floating dtype first, e.g. xp.astype(x, xp.float32)")


def _real(x):
    return jnp.real(x)


def _imag(x):
    return jnp.imag(x) if jnp.issubdtype(x.dtype, jnp.complexfloating) else jnp.zeros_like(x)


def _divide(x1, x2):
    return jnp.true_divide(x1, x2)


#: name -> Spec. The category is the one the standard's function page names.
TABLE: dict[str, Spec] = {
    "abs": Spec(jnp.abs, 1, "numeric", "absolute value"),
    "acos": Spec(_acos, 1, "floating-point", "inverse cosine"),
    "acosh": Spec(_acosh, 1, "floating-point", "inverse hyperbolic cosine"),
    "asin": Spec(jnp.arcsin, 1, "floating-point", "inverse sine"),
    "asinh": Spec(_asinh, 1, "floating-point", "inverse hyperbolic sine"),
    "atan": Spec(jnp.arctan, 1, "floating-point", "inverse tangent"),
    "atanh": Spec(_atanh, 1, "floating-point", "inverse hyperbolic tangent"),
    "bitwise_invert": Spec(jnp.invert, 1, "integer or boolean", "bitwise inversion"),
    "ceil": Spec(jnp.ceil, 1, "real numeric", "rounding towards +infinity"),
    "conj": Spec(jnp.conj, 1, "numeric", "complex conjugate", linear=True),
    "cos": Spec(jnp.cos, 1, "floating-point", "cosine"),
    "cosh": Spec(_cosh, 1, "floating-point", "hyperbolic cosine"),
    "exp": Spec(_exp, 1, "floating-point", "exponential"),
    "expm1": Spec(_expm1, 1, "floating-point", "exp(x) - 1"),
    "floor": Spec(jnp.floor, 1, "real numeric", "rounding towards -infinity"),
    # The standard: imag returns a floating dtype of x's precision, so integer input has no answer.
    "imag": Spec(_imag, 1, "floating-point", "imaginary part", linear=True),
    "isfinite": Spec(jnp.isfinite, 1, "numeric", "test for finiteness"),
    "isinf": Spec(jnp.isinf, 1, "numeric", "test for infinity"),
    "isnan": Spec(jnp.isnan, 1, "numeric", "test for NaN"),
    "log": Spec(_log, 1, "floating-point", "natural logarithm"),
    "log1p": Spec(_log1p, 1, "floating-point", "log(1 + x)"),
    "log2": Spec(jnp.log2, 1, "floating-point", "base-2 logarithm"),
    "log10": Spec(jnp.log10, 1, "floating-point", "base-10 logarithm"),
    "logical_not": Spec(jnp.logical_not, 1, "bool", "logical not"),
    "negative": Spec(jnp.negative, 1, "numeric", "numerical negative", linear=True),
    "positive": Spec(jnp.positive, 1, "numeric", "numerical positive", linear=True),
    "real": Spec(_real, 1, "numeric", "real part", linear=True),
    "reciprocal": Spec(_reciprocal, 1, "floating-point", "1 / x"),
    "round": Spec(jnp.round, 1, "numeric", "rounding to the nearest integer (ties to even)"),
    "sign": Spec(_sign, 1, "numeric", "sign (x / |x| for complex)"),
    "signbit": Spec(jnp.signbit, 1, "real floating-point", "test of the sign bit"),
    "sin": Spec(jnp.sin, 1, "floating-point", "sine"),
    "sinh": Spec(_sinh, 1, "floating-point", "hyperbolic sine"),
    "square": Spec(jnp.square, 1, "numeric", "square"),
    "sqrt": Spec(_sqrt, 1, "floating-point", "square root"),
    "tan": Spec(jnp.tan, 1, "floating-point", "tangent"),
    "tanh": Spec(_tanh, 1, "floating-point", "hyperbolic tangent"),
    "trunc": Spec(jnp.trunc, 1, "real numeric", "rounding towards zero"),
    "add": Spec(jnp.add, 2, "numeric", "sum"),
    "atan2": Spec(jnp.arctan2, 2, "real floating-point", "quadrant-aware inverse tangent of x1 / x2"),
    "bitwise_and": Spec(jnp.bitwise_and, 2, "integer or boolean", "bitwise and", annihilator=0),
    "bitwise_left_shift": Spec(jnp.left_shift, 2, "integer", "left shift"),
    "bitwise_or": Spec(jnp.bitwise_or, 2, "integer or boolean", "bitwise or"),
    "bitwise_right_shift": Spec(jnp.right_shift, 2, "integer", "right shift"),
    "bitwise_xor": Spec(jnp.bitwise_xor, 2, "integer or boolean", "bitwise xor"),
    "copysign": Spec(jnp.copysign, 2, "real floating-point", "magnitude of x1 with the sign of x2"),
    "divide": Spec(_divide, 2, "numeric", "true division"),
    "equal": Spec(jnp.equal, 2, "all", "equality test"),
    "floor_divide": Spec(_floor_divide, 2, "real numeric", "floor division"),
    "greater": Spec(jnp.greater, 2, "real numeric", "x1 > x2"),
    "greater_equal": Spec(jnp.greater_equal, 2, "real numeric", "x1 >= x2"),
    "hypot": Spec(jnp.hypot, 2, "real floating-point", "sqrt(x1**2 + x2**2)"),
    "less": Spec(jnp.less, 2, "real numeric", "x1 < x2"),
    "less_equal": Spec(jnp.less_equal, 2, "real numeric", "x1 <= x2"),
    "logaddexp": Spec(jnp.logaddexp, 2, "real floating-point", "log(exp(x1) + exp(x2))"),
    "logical_and": Spec(jnp.logical_and, 2, "bool", "logical and", annihilator=False),
    "logical_or": Spec(jnp.logical_or, 2, "bool", "logical or"),
    "logical_xor": Spec(jnp.logical_xor, 2, "bool", "logical xor"),
    "maximum": Spec(jnp.maximum, 2, "real numeric", "elementwise maximum (NaN propagates)"),
    "minimum": Spec(jnp.minimum, 2, "real numeric", "elementwise minimum (NaN propagates)"),
    "multiply": Spec(jnp.multiply, 2, "numeric", "product", annihilator=0),
    "nextafter": Spec(jnp.nextafter, 2, "real floating-point", "next representable value after x1 towards x2"),
    "not_equal": Spec(jnp.not_equal, 2, "all", "inequality test"),
    "pow": Spec(_pow, 2, "numeric", "x1 raised to x2"),
    "remainder": Spec(_remainder, 2, "real numeric", "remainder with the sign of x2"),
    "subtract": Spec(jnp.subtract, 2, "numeric", "difference"),
}
_fill_rule.PUBLIC_NAMES.update({spec.fn: name for name, spec in TABLE.items()})



# -- NumPy twins (the host engine, ``._engine``) -------------------------------------------
# The same meaning as the JAX functions above, special cases included; the result dtype is JAX's
# (``_fill.host_apply`` casts). Complex operands of the functions outside ``_COMPLEX_OK`` take the
# JAX implementation: their special cases (``_complex_fix``) are written for XLA.

def _sign_np(x):
    if x.dtype.kind == "f":
        return np.where(x == 0, np.zeros((), x.dtype), np.sign(x))  # sign(-0.0) is +0.0
    return np.sign(x)


def _floor_divide_np(x1, x2):
    # (An integer divided by zero gives NumPy's 0, which NumPy's own floor_divide through
    # __array_ufunc__ must give; the XLA twin, _floor_divide, gives it too.)
    q = np.floor_divide(x1, x2)
    if q.dtype.kind != "f":
        return q
    special = (x1 == 0) | np.isinf(x1) | np.isinf(x2)
    return np.where(special, np.true_divide(x1, x2), q)


def _remainder_np(x1, x2):
    r = np.remainder(x1, x2)
    if r.dtype.kind != "f":
        return r
    return np.where(r == 0, np.copysign(np.zeros((), r.dtype), x2), r)


def _pow_np(x1, x2):
    return np.power(x1, x2)


def _signed_zero_extreme(np_fn, take_negative: bool):
    """NumPy's ``maximum``/``minimum`` with signed zeros ordered as IEEE 754-2019 and XLA order them
    (``-0 < +0``: ``maximum(+0, -0)`` is +0 and ``minimum`` -0 whatever the argument order; NumPy's SIMD
    loops return either operand), so that the host kernels agree with ``jit``."""
    def fn(x1, x2):
        r = np_fn(x1, x2)
        if r.dtype.kind != "f" or not np.any(r == 0):  # (one pass: only a zero result can have two zeros)
            return r
        both = (x1 == 0) & (x2 == 0)
        # of two zeros, the negative one for minimum, the positive one for maximum
        zero = np.where(np.signbit(x1) == take_negative, x1, x2)
        return np.where(both, zero, r).astype(r.dtype, copy=False)
    fn.__name__ = np_fn.__name__
    return fn


#: name -> the NumPy twin of ``TABLE[name].fn``.
_NUMPY: dict[str, Callable] = {
    "abs": np.abs, "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
    "atan": np.arctan, "atanh": np.arctanh, "bitwise_invert": np.invert, "ceil": np.ceil, "conj": np.conj,
    "cos": np.cos, "cosh": np.cosh, "exp": np.exp, "expm1": np.expm1, "floor": np.floor, "imag": np.imag,
    "isfinite": np.isfinite, "isinf": np.isinf, "isnan": np.isnan, "log": np.log, "log1p": np.log1p,
    "log2": np.log2, "log10": np.log10, "logical_not": np.logical_not, "negative": np.negative,
    "positive": np.positive, "real": np.real, "reciprocal": np.reciprocal, "round": np.round, "sign": _sign_np,
    "signbit": np.signbit, "sin": np.sin, "sinh": np.sinh, "square": np.square, "sqrt": np.sqrt, "tan": np.tan,
    "tanh": np.tanh, "trunc": np.trunc, "add": np.add, "atan2": np.arctan2, "bitwise_and": np.bitwise_and,
    "bitwise_left_shift": np.left_shift, "bitwise_or": np.bitwise_or, "bitwise_right_shift": np.right_shift,
    "bitwise_xor": np.bitwise_xor, "copysign": np.copysign, "divide": np.true_divide, "equal": np.equal,
    "floor_divide": _floor_divide_np, "greater": np.greater, "greater_equal": np.greater_equal,
    "hypot": np.hypot, "less": np.less, "less_equal": np.less_equal, "logaddexp": np.logaddexp,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "maximum": _signed_zero_extreme(np.maximum, False), "minimum": _signed_zero_extreme(np.minimum, True),
    "multiply": np.multiply, "nextafter": np.nextafter,
    "not_equal": np.not_equal, "pow": _pow_np, "remainder": _remainder_np, "subtract": np.subtract,
}

#: Functions whose NumPy twin also gives JAX's (and the standard's) results on complex operands.
_COMPLEX_OK = frozenset({
    "abs", "conj", "imag", "real", "negative", "positive", "isfinite", "isinf", "isnan", "add", "subtract",
    "multiply", "equal", "not_equal", "square",
})

for _name, _spec in list(TABLE.items()):  # (in place: the docs' static reader evaluates the literal table)
    TABLE[_name] = _spec._replace(fn=Twin(_spec.fn, _NUMPY.get(_name), complex_ok=_name in _COMPLEX_OK))
del _name, _spec

_DOC_UNARY = """{summary} of each element (array API ``{name}``).

Parameters
----------
x : BCOOArray or array
    Input of a {category} dtype, any shape.

Returns
-------
BCOOArray
    Same shape; stored entries are ``{name}`` of the stored entries and the
    fill value is ``{name}(x.fill_value)`` (the fill-value rule of
    pydata-sparse). Dtype as the standard specifies.

Raises
------
TypeError
    If ``x``'s dtype is not {category}.
"""

_DOC_BINARY = """{summary}, element-wise with broadcasting (array API ``{name}``).

Parameters
----------
x1, x2 : BCOOArray, array or Python scalar
    Operands of {category} dtypes (at most one a Python scalar), promoted by
    the standard's type-promotion rules.

Returns
-------
BCOOArray
    The broadcast shape. Two sparse operands give stored entries on the union
    of their patterns and fill value ``{name}(x1.fill_value, x2.fill_value)``.
    A sparse operand with a dense one stays sparse when ``{name}(fill, d)`` is
    the same for every dense entry ``d``; otherwise every entry is stored.

Raises
------
TypeError
    If a dtype is not {category} or both operands are Python scalars.
ValueError
    If the shapes do not broadcast.
"""


def _unary(name: str):
    """The namespace function ``name`` of one argument, built from its ``TABLE`` entry."""
    spec = TABLE[name]

    def fn(x, /):
        x = as_operand(x, "x")
        check_category(np.dtype(x.dtype), spec.category, name)
        if isinstance(x, BCOOArray):
            return _fill_rule.unary(spec.fn, x, linear=spec.linear)
        return dense_layout(spec.fn(x))

    fn.__doc__ = _DOC_UNARY.format(summary=spec.summary.capitalize(), name=name, category=spec.category)
    return public(fn, name, "bcoo_array")


#: Comparisons store only the entries that differ from the result's fill value
#: (scipy stores only True), so that ``.nnz`` counts what scipy counts.
_COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})


def _binary(name: str):
    """The namespace function ``name`` of two arguments, built from its ``TABLE`` entry."""
    spec = TABLE[name]

    prune = name in _COMPARISONS

    def fn(x1, x2, /):
        a, b, _ = binary_operands(x1, x2, name, spec.category)
        if name == "pow":
            _check_integer_exponent(b)
        out = _fill_rule.binary(spec.fn, a, b, annihilator=spec.annihilator)
        return drop_fill_entries(out) if prune else out

    fn.__doc__ = _DOC_BINARY.format(summary=spec.summary.capitalize(), name=name, category=spec.category)
    fn.__doc__ += _NOTES.get(name, "")
    return public(fn, name, "bcoo_array")


#: Notes appended to the docstring of some generated functions.
_NOTES = {
    "multiply": """
Notes
-----
Fill values are static (pytree aux data), so under ``jax.jit`` a traced dense
operand cannot enter the result's fill value. ``A * s`` with a zero-filled
``A`` and a traced ``s`` keeps fill 0 and multiplies the stored entries only:
for ``s = inf`` the unstored entries stay 0 where NumPy gives ``0 * inf =
nan`` (``jax.experimental.sparse`` also treats ``s`` as finite). Eagerly, or
with a Python or NumPy scalar (static under ``jit``), the fill is exact: fill
``nan``. No run-time check is possible without a host callback; multiply
outside ``jit``, pass a static scalar, or use ``A.todense() * s`` where ``s``
may be non-finite. See "Non-finite values" in ``docs/design.md``.
""",
}


# The functions of the table, bound to static names (so that docs, IDEs and
# type checkers see them); tests/test_namespace.py checks that these
# names and TABLE agree.
abs = _unary("abs")
acos = _unary("acos")
acosh = _unary("acosh")
asin = _unary("asin")
asinh = _unary("asinh")
atan = _unary("atan")
atanh = _unary("atanh")
bitwise_invert = _unary("bitwise_invert")
ceil = _unary("ceil")
conj = _unary("conj")
cos = _unary("cos")
cosh = _unary("cosh")
exp = _unary("exp")
expm1 = _unary("expm1")
floor = _unary("floor")
imag = _unary("imag")
isfinite = _unary("isfinite")
isinf = _unary("isinf")
isnan = _unary("isnan")
log = _unary("log")
log1p = _unary("log1p")
log2 = _unary("log2")
log10 = _unary("log10")
logical_not = _unary("logical_not")
negative = _unary("negative")
positive = _unary("positive")
real = _unary("real")
reciprocal = _unary("reciprocal")
round = _unary("round")
sign = _unary("sign")
signbit = _unary("signbit")
sin = _unary("sin")
sinh = _unary("sinh")
square = _unary("square")
sqrt = _unary("sqrt")
tan = _unary("tan")
tanh = _unary("tanh")
trunc = _unary("trunc")
add = _binary("add")
atan2 = _binary("atan2")
bitwise_and = _binary("bitwise_and")
bitwise_left_shift = _binary("bitwise_left_shift")
bitwise_or = _binary("bitwise_or")
bitwise_right_shift = _binary("bitwise_right_shift")
bitwise_xor = _binary("bitwise_xor")
copysign = _binary("copysign")
divide = _binary("divide")
equal = _binary("equal")
floor_divide = _binary("floor_divide")
greater = _binary("greater")
greater_equal = _binary("greater_equal")
hypot = _binary("hypot")
less = _binary("less")
less_equal = _binary("less_equal")
logaddexp = _binary("logaddexp")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
logical_xor = _binary("logical_xor")
maximum = _binary("maximum")
minimum = _binary("minimum")
multiply = _binary("multiply")
nextafter = _binary("nextafter")
not_equal = _binary("not_equal")
pow = _binary("pow")
remainder = _binary("remainder")
subtract = _binary("subtract")


@routed
def clip(x, /, min=None, max=None):
    """Clamp each element to ``[min, max]`` (array API ``clip``).

    Parameters
    ----------
    x : BCOOArray or array
        Real numeric input.
    min, max : scalar, array or None
        Bounds, broadcast against ``x``; None leaves that side open. Python
        scalars take ``x``'s dtype.

    Returns
    -------
    BCOOArray
        The broadcast shape of ``x``, ``min`` and ``max``, ``x``'s dtype; the fill value is clipped too. NaN in ``x``
        propagates.

    Raises
    ------
    TypeError
        If ``x`` is not real numeric or a bound has another dtype kind.
    """
    x = as_operand(x, "x")
    dt = np.dtype(x.dtype)
    check_category(dt, "real numeric", "clip")
    out = x
    for bound, op, argname in ((min, maximum, "min"), (max, minimum, "max")):
        if bound is None:
            continue
        if isinstance(bound, PY_SCALARS):
            if dt.kind in "iu" and isinstance(bound, float):
                raise TypeError(f"clip(): {argname}={bound!r} is a float but x is {dt}")
            if dt.kind in "iu":
                info = np.iinfo(dt)
                bound = int(np.clip(bound, info.min, info.max))
            b = scalar_to_array(bound, scalar_dtype(bound, dt))
        else:
            b = as_operand(bound, argname)
        if np.dtype(b.dtype) != dt:
            b = cast(b, dt)
        out = op(out, b)
    if not isinstance(out, BCOOArray):
        out = dense_layout(out)
    return out._replace() if out is x else out  # clip(x) is a new array, as any other result


__all__ = [
    "abs",
    "acos",
    "acosh",
    "add",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "ceil",
    "clip",
    "conj",
    "copysign",
    "cos",
    "cosh",
    "divide",
    "equal",
    "exp",
    "expm1",
    "floor",
    "floor_divide",
    "greater",
    "greater_equal",
    "hypot",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log10",
    "log1p",
    "log2",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nextafter",
    "not_equal",
    "positive",
    "pow",
    "real",
    "reciprocal",
    "remainder",
    "round",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "trunc",
]
