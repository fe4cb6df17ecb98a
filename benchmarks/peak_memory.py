"""Peak memory of SpMV and ``A + B``: bcoo_array beside scipy.sparse, each operation in a fresh process.

    python benchmarks/peak_memory.py                    # random 1e6 x 1e6 with 1e7 entries (float64)
    python benchmarks/peak_memory.py --n 100000 --nnz 1000000
    python benchmarks/peak_memory.py cage11             # a SuiteSparse matrix (BCOO_ARRAY_MATRICES or ../shared)

For each library and operation a child process builds the operands (the
matrix ``A``, a second matrix ``B`` with a different pattern, a dense ``x``;
scipy CSR for scipy, BCOOArrays made by ``bcoo_array.from_scipy`` for
bcoo_array), resets the process's peak resident set size (Linux: writing
``5`` to ``/proc/self/clear_refs``), and reads the peak (``VmHWM``) after
the first call, whose result is kept, minus the resident size before it
(``VmRSS``). The reported figure is that increase: the memory the operation needed at its peak (its
result included), not the operands'. For bcoo_array it includes what a first
call leaves behind (the CSR plan cached on the index buffer, the compiled
kernel); a warm-up call first would hide the operation's own temporaries,
since the allocator reuses the pages the warm-up freed. JAX's CPU buffers are
process memory, so they count like NumPy's.

The issue's target: within 1.2x of scipy's peak for SpMV and ``A + B``.
Prints a table (MiB and ratio to scipy).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, os, sys
import numpy as np, scipy.sparse as sp
lib, op, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if lib == "bcoo_array":
    import jax
    jax.config.update("jax_enable_x64", True)
    import bcoo_array as xp
if spec["kind"] == "random":
    n, nnz = spec["n"], spec["nnz"]
    rng = np.random.default_rng(0)
    def rand(seed):
        r = np.random.default_rng(seed)
        A = sp.coo_array((r.standard_normal(nnz), (r.integers(0, n, nnz), r.integers(0, n, nnz))), shape=(n, n))
        return A.tocsr()
    A, B = rand(1), rand(2)
else:
    import scipy.io
    A = scipy.io.mmread(spec["path"]).tocsr().astype(np.float64)
    B = A.T.tocsr()
x = np.random.default_rng(3).standard_normal(A.shape[1])
if lib == "bcoo_array":
    a, b, xv = xp.from_scipy(A), xp.from_scipy(B), jax.numpy.asarray(x)
    run = {"SpMV": lambda: jax.block_until_ready(a @ xv), "A + B": lambda: jax.block_until_ready((a + b).data)}[op]
else:
    run = {"SpMV": lambda: A @ x, "A + B": lambda: A + B}[op]
def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])  # kB
import gc; gc.collect()
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # reset the peak (VmHWM) to the current resident size
before = status("VmRSS")
keep = run()
after = status("VmHWM")
print(json.dumps({"kib": after - before, "base_kib": before}))
"""


def _matrix_path(name: str) -> str:
    from bcoo_array.cli.data import find_matrix  # the lookup `bcoo-array demo` uses

    return str(find_matrix(name))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("matrix", nargs="?", help="a SuiteSparse matrix name or .mtx path (default: random)")
    ap.add_argument("--n", type=float, default=1e6)
    ap.add_argument("--nnz", type=float, default=1e7)
    args = ap.parse_args()
    if args.matrix:
        spec = {"kind": "file", "path": _matrix_path(args.matrix)}
        label = args.matrix
    else:
        spec = {"kind": "random", "n": int(args.n), "nnz": int(args.nnz)}
        label = f"random {int(args.n):.0e} x {int(args.n):.0e}, {int(args.nnz):.0e} entries"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    print(f"peak memory increase of one call ({label}, float64), MiB")
    print(f"{'operation':<10} {'scipy':>10} {'bcoo_array':>12} {'ratio':>8}")
    for op in ("SpMV", "A + B"):
        got = {}
        for lib in ("scipy", "bcoo_array"):
            out = subprocess.run([sys.executable, "-c", CHILD, lib, op, json.dumps(spec)], env=env,
                                 capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(f"{lib} {op} failed:\n{out.stderr[-2000:]}")
            got[lib] = json.loads(out.stdout.strip().splitlines()[-1])["kib"] / 1024
        ratio = got["bcoo_array"] / got["scipy"] if got["scipy"] > 0 else float("nan")
        print(f"{op:<10} {got['scipy']:>10.1f} {got['bcoo_array']:>12.1f} {ratio:>7.2f}x")


if __name__ == "__main__":
    main()
