"""Sharded SpMV on 1, 2, 4 and 8 simulated CPU devices beside the unsharded BCOOArray.

    python benchmarks/sharded_spmv.py [MATRIX] [--repeat 20] [--devices 1,2,4,8]

MATRIX defaults to ../shared/data/matrices/cage11.mtx.gz. The script starts
JAX with ``--xla_force_host_platform_device_count`` set to the largest device
count (it must run in a fresh process), row-partitions the matrix with
``bcoo_array.sharded.shard`` over the first N devices, and times the jitted
operator ``A(x)`` (``A @ x`` gathered to a replicated vector), median of
``--repeat`` calls after a warm-up. It also prints the bytes of ``data`` +
``indices`` each device stores and the largest relative difference from the
unsharded result.

Simulated devices share the host's cores, so the times show the overhead of
the partitioned program, not a multi-device speed-up.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "matrices" / "cage11.mtx.gz"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("matrix", nargs="?", default=str(DEFAULT))
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--devices", default="1,2,4,8")
    args = p.parse_args(argv)
    counts = [int(c) for c in args.devices.split(",")]
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + f" --xla_force_host_platform_device_count={max(counts)}").strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np
    import scipy.io
    import scipy.sparse as sp
    from jax.sharding import PartitionSpec as P

    import bcoo_array as xp
    from bcoo_array.sharded import shard

    if len(jax.devices()) < max(counts):
        sys.exit(f"JAX started with {len(jax.devices())} devices; run this script in a fresh process")
    S = sp.csr_array(scipy.io.mmread(args.matrix)).astype(np.float64)
    m, n = S.shape
    x = jnp.asarray(np.cos(np.arange(n, dtype=np.float64)))

    def median_ms(fn):
        jax.block_until_ready(fn())
        ts = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            jax.block_until_ready(fn())
            ts.append(time.perf_counter() - t0)
        return 1e3 * statistics.median(ts)

    A1 = xp.from_scipy(S)
    spmv1 = jax.jit(lambda a, v: a @ v)  # sparse @ dense vector is a dense jax.Array (the mixed-type rule)
    ref = np.asarray(spmv1(A1, x))
    t1 = median_ms(lambda: spmv1(A1, x))
    whole = A1.data.nbytes + A1.indices.nbytes
    name = Path(args.matrix).name
    print(f"{name}: {m} x {n}, nnz {S.nnz}; unsharded BCOOArray SpMV {t1:.3f} ms, {whole} bytes stored")
    print(f"{'devices':>7} {'sharded ms':>11} {'unsharded ms':>13} {'nse/block':>10} "
          f"{'bytes/device (max)':>19} {'fraction of whole':>18} {'rel. diff':>10}")
    for k in counts:
        mesh = jax.make_mesh((k,), ("x",), devices=jax.devices()[:k])
        A = shard(A1, mesh, P("x", None))
        spmv = jax.jit(lambda a, v: a(v))
        y = np.asarray(spmv(A, x))
        diff = np.abs(y - ref).max() / np.abs(ref).max()
        tk = median_ms(lambda: spmv(A, x))
        per = max(A.stored_bytes_per_device().values())
        print(f"{k:>7} {tk:>11.3f} {t1:>13.3f} {A.nse:>10} {per:>19} {per / whole:>18.3f} {diff:>10.1e}")


if __name__ == "__main__":
    main()
