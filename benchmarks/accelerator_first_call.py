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
which is why eager products take uniform tiles.

    python benchmarks/accelerator_first_call.py --layouts dense,blocks,ell,panels,sell,coo --unrolls '' [--ops matmul,matmat]

forces each layout on the eager product instead (``layouts.AUTO_KINDS``
set to it and ``coo``; a layout the cost model does not price for the
matrix gives way to ``coo``, and the line names the layout taken), beside
dense ``jax.numpy``'s first call of the same operation. ``matmat`` is
``A @ V`` with 128 columns. Off a TPU the eager hook does not apply and
the times say nothing about a chip.
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
    p.add_argument("--layouts", default="", help="layouts to force on the eager product, one fresh process each "
                                                  "(before the unroll sweep; --unrolls '' skips that)")
    p.add_argument("--ops", default="matmul", help="with --layouts: 'matmul' (A @ v), 'matmat' (A @ V, 128 columns)")
    args = p.parse_args(argv)
    if args.layouts:
        for op in args.ops.split(","):
            for which in ("dense",) + tuple(f"sparse-kind:{k}" for k in args.layouts.split(",") if k):
                _report(which, op, which.split(":")[-1] if which != "dense" else "dense jax.numpy")
    for tiles in args.tiles.split(","):
        for u in (int(v) for v in args.unrolls.split(",") if v):
            which = f"sparse-unroll:{u}" + (f":{tiles}" if tiles else "")
            _report(which, "matmul", f"unroll {u}" + (f", {tiles} tiles" if tiles else ""))


def _report(which: str, op: str, label: str) -> None:
    """Run ``_FIRST_CALL`` for ``which`` and ``op`` in a fresh process and print its three times."""
    out = subprocess.run([sys.executable, "-c", _FIRST_CALL, which, op], capture_output=True, text=True)
    if out.returncode:
        print(f"{label}: failed: {out.stderr[-600:]}", flush=True)
        return
    res = json.loads(out.stdout.strip().splitlines()[-1])
    took = f" (took {res['layout']})" if "layout" in res else ""
    sym = "A @ v" if op == "matmul" else "A @ V (128 columns)" if op == "matmat" else op
    print(f"{label}{took}: first eager {sym} {res['first'] * 1e3:.0f} ms, next with a new nse "
          f"{res['new_nse'] * 1e3:.1f} ms, warm {res['warm'] * 1e3:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
