"""Sparse-aware ``grad``, ``value_and_grad``, ``jacfwd`` and ``jacrev``: BCOOArrays as inputs and as outputs.

``jax.grad`` and ``jax.jacfwd``/``jax.jacrev`` see a BCOOArray as the pytree
``(data, indices)``. As an *input* that works with ``allow_int=True`` (the
gradient is a BCOOArray on the same pattern). As an *output* it cannot: JAX
differentiates every leaf, and the integer ``indices`` leaf has no derivative
(``jacrev`` refuses integer outputs, ``jacfwd`` builds a ``float0`` leaf that
no longer holds the pattern), and ``grad`` refuses a 0-d BCOOArray because it
is not a JAX scalar. The functions here, like ``jax.experimental.sparse``'s
(which serve sparse inputs only), take the same arguments as JAX's and

* differentiate a BCOOArray argument with respect to its stored values, in
  the subspace of its pattern: the derivative is a BCOOArray on that pattern;
* give the Jacobian of a BCOOArray *output* as a BCOOArray on the output's
  pattern, the input dimensions appended as dense dimensions (an unstored
  output position holds the fill value, a constant, so its derivative is 0);
* read a 0-d BCOOArray output as the scalar it holds (``.todense()``), so
  ``grad(lambda d: xp.sum(f(d)))`` works.

The Jacobian of an output of shape ``O`` with respect to an input of shape
``I`` has shape ``O + I``, as in JAX; ``J.todense()`` equals JAX's Jacobian of
the densified function. The pattern of each output is read from the traced
function (the indices do not depend on the values being differentiated).

Source: the input handling follows ``jax.experimental.sparse.ad``
(``flatten_fun_for_sparse_ad``); the output handling is this library's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ._array_object import BCOOArray

__all__ = ["grad", "jacfwd", "jacrev", "value_and_grad"]


def _is_sparse(x) -> bool:
    return isinstance(x, BCOOArray)


def _argnums_tuple(argnums, nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    out = []
    for a in nums:
        if not isinstance(a, int) or isinstance(a, bool):
            raise TypeError(f"argnums must be an int or a sequence of ints; got {argnums!r}")
        if not -nargs <= a < nargs:
            raise ValueError(f"argnums={argnums!r} is out of range for {nargs} positional arguments")
        out.append(a % nargs)
    return tuple(out)


class _Inputs:
    """The differentiated arguments flattened to JAX arrays: a BCOOArray contributes its ``data``."""

    def __init__(self, args: tuple, argnums):
        self.args = list(args)
        self.given = argnums
        self.argnums = _argnums_tuple(argnums, len(args))
        self.leaves, self.trees = [], []
        for a in self.argnums:
            leaves, tree = jax.tree_util.tree_flatten(args[a], is_leaf=_is_sparse)
            self.leaves.append(leaves)
            self.trees.append(tree)
        self.flat_leaves = [leaf for leaves in self.leaves for leaf in leaves]
        self.flat = [leaf.data if _is_sparse(leaf) else leaf for leaf in self.flat_leaves]

    def rebuild(self, flat) -> list:
        """The positional arguments with the differentiated leaves' values taken from ``flat``."""
        args = list(self.args)
        it = iter(flat)
        for a, leaves, tree in zip(self.argnums, self.leaves, self.trees):
            args[a] = jax.tree_util.tree_unflatten(
                tree, [leaf.with_data(next(it)) if _is_sparse(leaf) else next(it) for leaf in leaves])
        return args

    def regroup(self, per_leaf):
        """One result per flat input leaf, back in the arguments' structure (a tuple for a sequence argnums)."""
        it = iter(per_leaf)
        out = tuple(jax.tree_util.tree_unflatten(tree, [next(it) for _ in leaves])
                    for leaves, tree in zip(self.leaves, self.trees))
        return out[0] if isinstance(self.given, int) else out


def _split_aux(out, has_aux: bool, name: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"{name}(..., has_aux=True) needs a function returning a pair (output, aux)")
    return out


def _as_output_leaf(y):
    """An output leaf for JAX: a 0-d BCOOArray is its value; another BCOOArray gives its ``data``."""
    if _is_sparse(y):
        return y.todense() if y.ndim == 0 else y.data
    return y


class _Pattern(NamedTuple):
    """A BCOOArray output's static layout (its indices travel separately, as JAX aux output)."""

    shape: tuple
    n_batch: int
    n_dense: int
    indices_sorted: bool
    unique_indices: bool

    @property
    def data_ndim(self) -> int:
        return self.n_batch + 1 + self.n_dense


def _jacobian_block(J, out: tuple | None, in_leaf):
    """The Jacobian of one output leaf with respect to one input leaf, as an array of shape ``O + I``.

    ``J`` is JAX's Jacobian of the flattened function (``out_part + in_part``, where a BCOOArray
    contributes its ``data`` shape). ``out`` is ``(pattern, indices)`` for a BCOOArray output, else None.
    """
    if out is None and not _is_sparse(in_leaf):
        return J
    if out is None:  # dense output of shape O, sparse input X: X's pattern, O as leading batch dimensions
        X = in_leaf
        O = tuple(J.shape[:J.ndim - X.data.ndim])
        indices = jnp.broadcast_to(X.indices, O + tuple(X.indices.shape))
        return BCOOArray._from_buffers(J, indices, O + X.shape, n_batch=len(O) + X.n_batch, n_dense=X.n_dense,
                                      fill_value=0, indices_sorted=X.indices_sorted, unique_indices=X.unique_indices)
    Y, yidx = out
    if not _is_sparse(in_leaf):  # sparse output Y, dense input of shape I: Y's pattern, I as dense dimensions
        I = tuple(J.shape[Y.data_ndim:])
        return BCOOArray._from_buffers(J, yidx, Y.shape + I, n_batch=Y.n_batch, n_dense=Y.n_dense + len(I),
                                      fill_value=0, indices_sorted=Y.indices_sorted, unique_indices=Y.unique_indices)
    X = in_leaf
    if Y.n_dense or X.n_batch:
        raise NotImplementedError(
            f"the Jacobian of a BCOOArray output with n_dense={Y.n_dense} with respect to a BCOOArray input with "
            f"n_batch={X.n_batch} has no BCOO layout (its dimensions would not run batch, sparse, dense). "
            "Differentiate with respect to the input's stored values instead: "
            "jacfwd(lambda d: f(X.with_data(d)))(X.data)")
    # Both sparse: every pair of an output entry and an input entry (the Kronecker product of the patterns).
    nb = Y.n_batch
    bo = tuple(J.shape[:nb])
    nse_o, nse_i = J.shape[nb], X.data.shape[0]
    data = J.reshape(bo + (nse_o * nse_i,) + tuple(X.data.shape[1:]))
    yb = jnp.broadcast_to(yidx, bo + tuple(yidx.shape[-2:]))
    idt = jnp.promote_types(yb.dtype, X.indices.dtype)
    yi = jnp.broadcast_to(yb[..., :, None, :].astype(idt), bo + (nse_o, nse_i, yb.shape[-1]))
    xi = jnp.broadcast_to(X.indices.astype(idt), bo + (nse_o, nse_i, X.indices.shape[-1]))
    indices = jnp.concatenate([yi, xi], axis=-1).reshape(bo + (nse_o * nse_i, yi.shape[-1] + xi.shape[-1]))
    return BCOOArray._from_buffers(data, indices, Y.shape + X.shape, n_batch=nb, n_dense=X.n_dense, fill_value=0,
                                  indices_sorted=Y.indices_sorted and X.indices_sorted,
                     unique_indices=Y.unique_indices and X.unique_indices)


def _scalar_function(fun, inputs: _Inputs, has_aux: bool, fkwargs: dict, name: str):
    """``fun`` of the flat input values, returning ``(scalar, aux)``: the function JAX differentiates."""
    def scalar_fun(*flat):
        out, aux = _split_aux(fun(*inputs.rebuild(flat), **fkwargs), has_aux, name)
        leaves = jax.tree_util.tree_leaves(out, is_leaf=_is_sparse)
        value = _as_output_leaf(leaves[0]) if len(leaves) == 1 else None
        if value is None or jnp.ndim(value) != 0:
            got = leaves[0] if len(leaves) == 1 else out
            raise TypeError(
                f"{name} needs a function with one scalar output (a 0-d array; a 0-d BCOOArray counts); got "
                f"{type(got).__name__} of shape {getattr(got, 'shape', None)}. Reduce it to a scalar, or take "
                "its Jacobian with bcoo_array.autodiff.jacrev or jacfwd")
        return value, aux

    return scalar_fun


def _gradients(inputs: _Inputs, grads):
    return inputs.regroup([leaf.with_data(g) if _is_sparse(leaf) else g
                           for g, leaf in zip(grads, inputs.flat_leaves)])


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   **kwargs) -> Callable[..., tuple[Any, Any]]:
    """Sparse-aware ``jax.value_and_grad``: BCOOArray arguments, and a 0-d BCOOArray as the scalar output.

    Parameters
    ----------
    fun : callable
        Returns one scalar: a 0-d ``jax.Array``, or a 0-d BCOOArray (read as its value); with
        ``has_aux=True`` a pair ``(scalar, aux)``.
    argnums : int or sequence of int
        The positional arguments to differentiate. A BCOOArray argument (also inside a pytree) is
        differentiated with respect to its stored values.
    has_aux : bool
        As in ``jax.value_and_grad``.
    **kwargs
        Passed to ``jax.value_and_grad`` (``holomorphic``, ``allow_int``).

    Returns
    -------
    callable
        Returns ``(value, gradient)`` (``((value, aux), gradient)`` with ``has_aux``): ``value`` a 0-d
        ``jax.Array``; the gradient has the structure of the differentiated arguments (a tuple for a
        sequence ``argnums``), a BCOOArray on the argument's pattern for each BCOOArray argument.

    Raises
    ------
    TypeError
        If the output is not one scalar (the message names ``jacrev``), or ``argnums`` is not integers.
    ValueError
        If ``argnums`` is out of range.
    """
    return _value_and_grad(fun, argnums, has_aux, kwargs, "value_and_grad")


def _value_and_grad(fun: Callable, argnums, has_aux: bool, kwargs: dict, name: str) -> Callable:
    @wraps(fun)
    def value_and_grad_fun(*args, **fkwargs):
        inputs = _Inputs(args, argnums)
        scalar_fun = _scalar_function(fun, inputs, has_aux, fkwargs, name)
        (value, aux), grads = jax.value_and_grad(scalar_fun, argnums=tuple(range(len(inputs.flat))),
                                                 has_aux=True, **kwargs)(*inputs.flat)
        return ((value, aux) if has_aux else value), _gradients(inputs, grads)

    return value_and_grad_fun


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, **kwargs) -> Callable:
    """Sparse-aware ``jax.grad``: BCOOArray arguments, and a 0-d BCOOArray as the scalar output.

    ``grad(lambda A: xp.sum(A * A))(A)`` is ``2 * A`` on ``A``'s pattern; ``jax.grad`` refuses that
    function (a 0-d BCOOArray is not a JAX scalar: end in ``.todense()`` to use it).

    Parameters
    ----------
    fun, argnums, has_aux, **kwargs
        As in [`value_and_grad`][bcoo_array.autodiff.value_and_grad].

    Returns
    -------
    callable
        Returns the gradient (``(gradient, aux)`` with ``has_aux``), structured as the differentiated
        arguments; a BCOOArray on the argument's pattern for each BCOOArray argument.

    Raises
    ------
    TypeError
        If the output is not one scalar, or ``argnums`` is not integers.
    ValueError
        If ``argnums`` is out of range.
    """
    vg = _value_and_grad(fun, argnums, has_aux, kwargs, "grad")

    @wraps(fun)
    def grad_fun(*args, **fkwargs):
        value, g = vg(*args, **fkwargs)
        return (g, value[1]) if has_aux else g

    return grad_fun


def _jacobian(jax_transform: Callable, name: str, fun: Callable, argnums, has_aux: bool, kwargs: dict) -> Callable:
    @wraps(fun)
    def jacobian_fun(*args, **fkwargs):
        inputs = _Inputs(args, argnums)
        static: list = []

        def flat_fun(*flat):
            out, aux = _split_aux(fun(*inputs.rebuild(flat), **fkwargs), has_aux, name)
            leaves, tree = jax.tree_util.tree_flatten(out, is_leaf=_is_sparse)
            patterns = [_Pattern(y.shape, y.n_batch, y.n_dense, y.indices_sorted, y.unique_indices)
                        if _is_sparse(y) and y.ndim > 0 else None for y in leaves]
            static[:] = [tree, patterns]
            # the output indices leave as aux (JAX returns them as values; they take no derivative)
            indices = [y.indices if p is not None else None for y, p in zip(leaves, patterns)]
            return [_as_output_leaf(y) for y in leaves], (indices, aux)

        jac, (indices, aux) = jax_transform(flat_fun, argnums=tuple(range(len(inputs.flat))), has_aux=True,
                                            **kwargs)(*inputs.flat)
        tree, patterns = static
        blocks = []
        for J_row, pattern, idx in zip(jac, patterns, indices):
            out = None if pattern is None else (pattern, idx)
            blocks.append(inputs.regroup([_jacobian_block(J, out, leaf)
                                          for J, leaf in zip(J_row, inputs.flat_leaves)]))
        result = jax.tree_util.tree_unflatten(tree, blocks)
        return (result, aux) if has_aux else result

    return jacobian_fun


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, **kwargs) -> Callable:
    """Sparse-aware ``jax.jacfwd``: BCOOArray arguments and BCOOArray outputs (forward mode).

    The Jacobian of an output of shape ``O`` with respect to an argument of shape ``I`` has shape
    ``O + I``, as JAX's; its blocks are

    * dense output, dense argument: a ``jax.Array`` (JAX's own);
    * dense output, BCOOArray argument ``X``: a BCOOArray on ``X``'s pattern, ``O`` as leading batch
      dimensions (the derivative with respect to the stored values, as ``jax.experimental.sparse``);
    * BCOOArray output ``Y``, dense argument: a BCOOArray on ``Y``'s pattern with ``I`` appended as dense
      dimensions (an unstored position holds the fill value, whose derivative is 0);
    * BCOOArray output and argument: every pair of an output entry and an argument entry
      (``Y.nse * X.nse`` entries), for ``Y.n_dense == 0`` and ``X.n_batch == 0``.

    A 0-d BCOOArray output is read as its value. ``J.todense()`` equals ``jax.jacfwd`` of the densified
    function (with respect to the stored values, scattered to their positions, for a BCOOArray argument).

    Parameters
    ----------
    fun : callable
        Returns a pytree of ``jax.Array``s and BCOOArrays (with ``has_aux=True``, a pair ``(output, aux)``).
    argnums : int or sequence of int
        The positional arguments to differentiate; a BCOOArray one with respect to its stored values.
    has_aux : bool
        As in ``jax.jacfwd``.
    **kwargs
        Passed to ``jax.jacfwd`` (``holomorphic``).

    Returns
    -------
    callable
        Returns the Jacobian: the output's structure, each leaf holding the arguments' structure of blocks
        (``(jacobian, aux)`` with ``has_aux``).

    Raises
    ------
    NotImplementedError
        For a BCOOArray output with dense dimensions and a BCOOArray argument with batch dimensions (the
        block has no BCOO layout); the message names the ``with_data`` route.
    TypeError, ValueError
        For ``argnums`` that are not integers or out of range.
    """
    return _jacobian(jax.jacfwd, "jacfwd", fun, argnums, has_aux, kwargs)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, **kwargs) -> Callable:
    """Sparse-aware ``jax.jacrev`` (reverse mode): the same arguments and results as
    [`jacfwd`][bcoo_array.autodiff.jacfwd].

    Parameters
    ----------
    fun, argnums, has_aux, **kwargs
        As in [`jacfwd`][bcoo_array.autodiff.jacfwd] (``kwargs`` go to ``jax.jacrev``:
        ``holomorphic``, ``allow_int``).

    Returns
    -------
    callable
        Returns the Jacobian, structured as ``jacfwd``'s.

    Raises
    ------
    NotImplementedError, TypeError, ValueError
        As ``jacfwd``.
    """
    return _jacobian(jax.jacrev, "jacrev", fun, argnums, has_aux, kwargs)
