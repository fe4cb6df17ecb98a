"""First eager ``A @ v`` on an accelerator by the ``panels`` kernel's tile-loop unroll, each in a fresh process.

    python benchmarks/accelerator_first_call.py [--unrolls 1,2,4,8] [--tiles mixed,uniform]

A first eager product compiles its program; for the ``panels`` layout (the
Pallas TPU kernel) that compile grows with the number of tiles one loop
iteration processes (``panels.TILE_UNROLL``). For each unroll this runs
``benchmarks/accelerator.py``'s first-call program in a fresh process: a
2000 x 2000 float32 matrix with 20,000 entries placed on the default
device, its first ``A @ v``, then ``A @ v`` of a matrix with another
``nse``. On a TPU v5e the first call took 553, 680, 793 and 1,174 ms for
1, 2, 4 and 8 (dense ``jax.numpy``'s first call: 334 ms), which is why eager
products run ``panels.EAGER_TILE_UNROLL`` = 4 (once up to
``panels.EAGER_SMALL_TILES`` tiles, where dispatch dominates a call:
``panels.eager_tile_unroll``; the sweep here forces the unroll on every
matrix) and prepared operators 8.
``--tiles mixed,uniform`` forces the layout's tiles: unrolled 4 times, the
first call took 1,221 ms with mixed tiles and 691 ms with uniform ones,
which is why eager products take uniform tiles. Off a TPU the eager hook
does not apply and the times say nothing about a chip.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from accelerator import _FIRST_CALL


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--unrolls", default="1,2,4,8", help="tile-loop unrolls to time, one fresh process each")
    p.add_argument("--tiles", default="", help="'mixed,uniform': force the panels tiles (default: the cost "
                                                "model's choice)")
    args = p.parse_args(argv)
    for tiles in args.tiles.split(","):
        for u in (int(v) for v in args.unrolls.split(",") if v):
            which = f"sparse-unroll:{u}" + (f":{tiles}" if tiles else "")
            label = f"unroll {u}" + (f", {tiles} tiles" if tiles else "")
            out = subprocess.run([sys.executable, "-c", _FIRST_CALL, which, "matmul"], capture_output=True, text=True)
            if out.returncode:
                print(f"{label}: failed: {out.stderr[-600:]}", flush=True)
                continue
            res = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{label}: first eager A @ v {res['first'] * 1e3:.0f} ms, next with a new nse "
                  f"{res['new_nse'] * 1e3:.1f} ms, warm {res['warm'] * 1e3:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
