"""Multi-process helpers (jax.distributed on CPU hosts).

JAX runs one process per host (or per group of devices); each process sees
the global device list, and a mesh over ``jax.devices()`` spans all of them.
[`bcoo_array.sharded.shard`][] places each block on its device from the
host copy that every process holds, so the whole matrix never travels.
Cross-process collectives on CPU use gloo
(``jax_cpu_collectives_implementation``, JAX's default since 0.4.36).
"""

from __future__ import annotations

import os

import jax
import numpy as np


def initialize_cpu_cluster(coordinator_address: str, num_processes: int, process_id: int, *,
                           local_device_count: int | None = None, timeout_s: int = 60) -> None:
    """Join a CPU cluster with ``jax.distributed.initialize``.

    Parameters
    ----------
    coordinator_address : str
        ``"host:port"`` of process 0 (``"127.0.0.1:PORT"`` for a loopback test).
    num_processes, process_id : int
        Size of the cluster and this process's rank.
    local_device_count : int, optional
        Number of CPU devices this process simulates; sets
        ``--xla_force_host_platform_device_count``, which only takes effect
        before JAX starts its backend (call this before any array is made).
    timeout_s : int
        Seconds to wait for the other processes.

    Raises
    ------
    RuntimeError
        If the JAX backend already started with a different device count.
    """
    if local_device_count is not None:
        flag = f"--xla_force_host_platform_device_count={int(local_device_count)}"
        flags = os.environ.get("XLA_FLAGS", "")
        if flag not in flags:
            os.environ["XLA_FLAGS"] = (flags + " " + flag).strip()
    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator_address, num_processes=int(num_processes),
                               process_id=int(process_id), initialization_timeout=int(timeout_s))
    if local_device_count is not None and len(jax.local_devices()) != int(local_device_count):
        raise RuntimeError(
            f"this process has {len(jax.local_devices())} local devices, not {local_device_count}: set "
            "XLA_FLAGS=--xla_force_host_platform_device_count=N before JAX starts its backend")


def process_local_result(x) -> np.ndarray:
    """The value of a replicated (e.g. reduced or gathered) ``jax.Array``, on this process, as NumPy."""
    if getattr(x, "is_fully_addressable", True):
        return np.asarray(x)
    return np.asarray(x.addressable_data(0))
