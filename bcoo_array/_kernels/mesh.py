"""Gathers from dense operands laid out on meshes with Explicit axes.

``jax.make_mesh`` gives ``Explicit`` axes by default (JAX 0.10): the sharding
of an array is then part of its type, and a gather whose output sharding JAX
cannot infer (``x.at[idx].get()`` with ``x`` split over the mesh and ``idx``
replicated) raises ``ShardingTypeError``. ``replicated_on_mesh`` runs
such a gather with the Explicit axes turned to ``Auto`` (XLA's partitioner
chooses the collectives) and returns its outputs replicated over the mesh, as
the same gather returns them on an ``Auto`` mesh. Arrays without a mesh, or
whose spec names no Explicit axis, run the function unchanged.
"""

from __future__ import annotations

import jax
from jax.sharding import AxisType, NamedSharding, PartitionSpec

from .._shapes import is_tracer


def _spec_axes(spec) -> set[str]:
    names: set[str] = set()
    for entry in spec:
        if entry is None:
            continue
        names.update(entry if isinstance(entry, tuple) else (entry,))
    return names


def explicit_mesh(x):
    """Mesh of ``x`` when its spec names an Explicit mesh axis, else None.

    The mesh is the concrete ``jax.sharding.Mesh`` of a concrete array and
    the abstract mesh of its type while tracing.
    """
    if not isinstance(x, jax.Array):
        return None
    sharding = jax.typeof(x).sharding
    mesh = getattr(sharding, "mesh", None)
    if mesh is None or getattr(mesh, "empty", True):
        return None
    explicit = {a for a, t in zip(mesh.axis_names, mesh.axis_types) if t == AxisType.Explicit}
    if not explicit & _spec_axes(sharding.spec):
        return None
    if not is_tracer(x) and isinstance(x.sharding, NamedSharding):
        return x.sharding.mesh
    return mesh


def replicated_on_mesh(fn, x, *args):
    """``fn(x, *args)``, run with ``x``'s Explicit mesh axes made Auto.

    Parameters
    ----------
    fn : callable
        A jnp function of arrays (a gather), returning an array or a tuple of arrays.
    x : jax.Array or array_like
        The dense operand whose sharding decides the mesh.
    *args
        Further arrays (indices), replicated or uncommitted.

    Returns
    -------
    The result of ``fn``; replicated over ``x``'s mesh (``PartitionSpec()``)
    when ``x`` is split over Explicit axes, otherwise as ``fn`` returns it.
    """
    mesh = explicit_mesh(x)
    if mesh is None:
        return fn(x, *args)
    explicit = tuple(a for a, t in zip(mesh.axis_names, mesh.axis_types) if t == AxisType.Explicit)
    replicated = NamedSharding(mesh, PartitionSpec())  # a prefix of any output tree
    return jax.sharding.auto_axes(fn, axes=explicit, out_sharding=replicated)(x, *args)
