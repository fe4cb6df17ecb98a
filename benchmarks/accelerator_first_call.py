"""First eager ``A @ v`` on an accelerator by the ``panels`` kernel's tile-loop unroll, each in a fresh process.

    python benchmarks/accelerator_first_call.py [--unrolls 1,2,4,8]

A first eager product compiles its program; for the ``panels`` layout (the
Pallas TPU kernel) that compile grows with the number of tiles one loop
iteration processes (``panels.TILE_UNROLL``). For each unroll this runs one
fresh process that places a 2000 x 2000 float32 matrix with 20,000 entries
(the matrix of ``benchmarks/accelerator.py --first-call``) on the default
device and times its first ``A @ v``, then the host-side layout choice. On
a TPU v5e: 553, 680, 793 and 1,174 ms for 1, 2, 4 and 8 (dense
``jax.numpy``'s first call: 334 ms), which is why eager products run
``panels.EAGER_TILE_UNROLL`` = 4 and prepared operators 8. Off a TPU the
kernel runs in interpret mode and the times say nothing about a chip.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

_CODE = r"""
import sys, time
import numpy as np, scipy.sparse as sp, jax, jax.numpy as jnp
import bcoo_array as xp
from bcoo_array._kernels import layouts, panels
u = int(sys.argv[1])
panels.TILE_UNROLL = panels.EAGER_TILE_UNROLL = u
n = 2000
S = sp.random(n, n, density=0.005, random_state=0, format="csr", dtype=np.float32)
dev = jax.devices()[0]
A = xp.from_scipy(S).to_device(dev)
v = jax.device_put(jnp.ones(n, jnp.float32), dev)
jax.block_until_ready(v)
t0 = time.perf_counter()
jax.block_until_ready(A @ v)
first = time.perf_counter() - t0
t0 = time.perf_counter()
lay = layouts.choose(np.stack(S.tocoo().coords, 1), S.shape, 4, dev.platform)
choose = time.perf_counter() - t0
print(f"unroll {u}: first eager A @ v {first * 1e3:.0f} ms on {dev.device_kind} ({lay.describe()}); "
      f"layout choice {choose * 1e3:.0f} ms")
"""


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--unrolls", default="1,2,4,8", help="tile-loop unrolls to time, one fresh process each")
    args = p.parse_args(argv)
    for u in (int(v) for v in args.unrolls.split(",") if v):
        out = subprocess.run([sys.executable, "-c", _CODE, str(u)], capture_output=True, text=True)
        print(out.stdout.strip() if out.returncode == 0 else f"unroll {u}: failed: {out.stderr[-600:]}", flush=True)


if __name__ == "__main__":
    main()
