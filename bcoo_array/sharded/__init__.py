"""Sharded sparse arrays: one BCOOArray over the devices of a jax.sharding.Mesh.

    >>> import jax, bcoo_array as xp
    >>> from jax.sharding import PartitionSpec as P
    >>> from bcoo_array.sharded import shard, unshard
    >>> mesh = jax.make_mesh((len(jax.devices()),), ("x",))
    >>> A = shard(xp.eye(6), mesh, P("x", None))   # row blocks
    >>> float(xp.sum(A))
    6.0

Every function of the ``bcoo_array`` namespace that supports sharded arrays
(elementwise functions, ``astype``, ``where``, reductions, ``matmul``,
``matrix_transpose``, ``permute_dims``) takes them directly; the others raise
a TypeError asking to gather first. ``bcoo_array.linalg.cg`` (``bicgstab``,
``gmres``) runs JAX's solver with the sharded product, and scipy's solvers
take a sharded array through its LinearOperator methods (``matvec``, ...);
scipy.sparse's other methods and indexing raise a TypeError naming
``unshard()``. See docs/sharded.md for the partitions and what each device
stores.
"""

from .. import from_scipy as _fs
from ._array import ShardedBCOOArray, shard, unshard
from ._distributed import initialize_cpu_cluster, process_local_result


def from_scipy(mat, mesh, spec, **kw) -> ShardedBCOOArray:
    """Convert a scipy.sparse matrix and partition it: ``shard(from_scipy(mat, **kw), mesh, spec)``.

    Parameters and errors as in [`bcoo_array.from_scipy`][] and [`shard`][bcoo_array.sharded.shard].
    """
    return shard(_fs(mat, **kw), mesh, spec)


__all__ = ["ShardedBCOOArray", "from_scipy", "initialize_cpu_cluster", "process_local_result", "shard",
           "unshard"]
