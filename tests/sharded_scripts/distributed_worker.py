"""One process of the two-process distributed test (run by tests/test_sharded.py).

Usage: distributed_worker.py PORT PROCESS_ID NUM_PROCESSES LOCAL_DEVICES MATRIX OUT.npz

Joins a loopback CPU cluster with jax.distributed, shards the matrix by row
blocks over every device of every process, and saves (on each process) the
distributed SpMV, the distributed CG solution, the distributed eigsh (ARPACK on
every process, products on the mesh) and the same computations done on this
process alone with an unsharded BCOOArray.
"""

import sys

port, pid, nproc, ndev, matrix, out = sys.argv[1:7]

from bcoo_array.sharded import initialize_cpu_cluster  # noqa: E402  (sets XLA_FLAGS before the backend starts)

initialize_cpu_cluster(f"127.0.0.1:{port}", int(nproc), int(pid), local_device_count=int(ndev), timeout_s=60)

import jax  # noqa: E402
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
from jax.scipy.sparse.linalg import cg  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

import bcoo_array as xp  # noqa: E402
from bcoo_array.sharded import process_local_result, shard  # noqa: E402

jax.config.update("jax_enable_x64", True)
assert jax.process_count() == int(nproc), jax.process_count()
M = scipy.io.mmread(matrix).tocsr().astype(np.float64)
n = M.shape[0]
mesh = jax.make_mesh((len(jax.devices()),), ("x",))
A = shard(xp.from_scipy(M), mesh, P("x", None))
x_np = np.cos(np.arange(n, dtype=np.float64))
rep = NamedSharding(mesh, P())
x = jax.make_array_from_callback((n,), rep, lambda idx: x_np[idx])
y = jax.jit(lambda A, v: A(v), in_shardings=(A.sharding, rep), out_shardings=rep)(A, x)
sol, _ = jax.jit(lambda A, b: cg(A, b, tol=1e-10, maxiter=200), in_shardings=(A.sharding, rep),
                 out_shardings=rep)(A, x)
local_bytes = sum(v for v in A.stored_bytes_per_device().values())
# ARPACK on every process with the products on the mesh: the processes must start from one vector.
evals, evecs = xp.linalg.eigsh(A, k=3, which="LM", tol=1e-10)

# The same on this process alone (one device, unsharded BCOOArray).
dev = jax.local_devices()[0]
A1 = xp.from_scipy(M).to_device(dev)
x1 = jax.device_put(x_np, dev)
y1 = A1 @ x1  # a jax.Array (the mixed-type rule)
sol1, _ = jax.jit(lambda b: cg(lambda v: A1 @ v, b, tol=1e-10, maxiter=200))(x1)
np.savez(out, y=process_local_result(y), sol=process_local_result(sol), y1=np.asarray(y1), sol1=np.asarray(sol1),
         evals=np.asarray(evals), evecs=np.asarray(evecs), n_devices=len(jax.devices()), n_local=len(jax.local_devices()), local_bytes=local_bytes)
jax.distributed.shutdown()
