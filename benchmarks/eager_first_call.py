"""First and warm eager calls of namespace functions on a new shape, each in a fresh process.

    python benchmarks/eager_first_call.py                      # every probe, x64 on
    python benchmarks/eager_first_call.py exp sum0 --repeat 20
    python benchmarks/eager_first_call.py --engine xla         # force the XLA engine (BCOO_ARRAY_HOST=0)
    python benchmarks/eager_first_call.py outer --n 8000       # the outer broadcast at n = 8,000
    python benchmarks/eager_first_call.py --shape 4000 640     # bandwidth rather than per-call cost

Each probe builds a 400 x 64 (``--shape``) float64 array ``D = normal * (uniform < 0.1)``
in a fresh Python process (``JAX_ENABLE_X64=1``). That is the issue's data:
10% non-zero values, and ``-0.0`` wherever a negative normal met a zero,
which ``asarray`` stores (it compares bit-exactly), so about 55% of the
positions are stored (the "stored" column). It times the first call of one
operation (the process has run no other bcoo_array operation), then the best
of ``--repeat`` warm calls, and NumPy's best time for the same operation on
the dense values. A second fresh process first runs the call on a 300 x 48 (three quarters of ``--shape``)
array, then times the first call on the 400 x 64 one ("first on a new
shape"): the cost of a new shape without the process's first run of the
code. It prints a Markdown table: first call, first / warm, first on a new
shape / warm, warm / NumPy, warm / scipy.sparse and scipy.sparse / NumPy (the
same call written for a ``scipy.sparse.csr_array`` storing A's entries, ``S.multiply(S > 0.5)``
for ``where``: what a sparse library's per-call bookkeeping costs beside
NumPy's one dense loop; ``-`` where scipy has no twin; its ``exp`` twin is
``expm1``, the pattern-keeping one), stored fraction. The targets of the eager-engine
issue are first <= 3x warm and warm <= 5x NumPy.

``outer`` is the broadcast ``(n, 1) + (1, n)`` of two sparse vectors with
10% stored entries (``--n``, default 2,000); its NumPy reference is the dense
broadcast.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

#: name -> (label, the timed call on A (BCOOArray), its NumPy twin on D (dense NumPy), its scipy.sparse twin on S
#: (CSR array; None where scipy has none))
PROBES = {
    "exp": ("xp.exp(A)", "xp.exp(A)", "np.exp(D)", "S.expm1()"),
    "mul_row": ("A * xp.asarray(v)", "A * xp.asarray(v)", "D * v", "S.multiply(v)"),
    "sum0": ("xp.sum(A, axis=0)", "xp.sum(A, axis=0)", "np.sum(D, axis=0)", "S.sum(axis=0)"),
    "where": ("xp.where(A > 0.5, A, 0.0)", "xp.where(A > 0.5, A, 0.0)", "np.where(D > 0.5, D, 0.0)",
              "S.multiply(S > 0.5)"),
    "astype": ("xp.astype(A, xp.float32)", "xp.astype(A, xp.float32)", "D.astype(np.float32)", "S.astype(np.float32)"),
    "concat": ("xp.concat([A, A])", "xp.concat([A, A])", "np.concatenate([D, D])", "sps.vstack([S, S])"),
    "sort": ("xp.sort(A, axis=1)", "xp.sort(A, axis=1)", "np.sort(D, axis=1)", None),
    "mean1": ("xp.mean(A, axis=1)", "xp.mean(A, axis=1)", "np.mean(D, axis=1)", "S.mean(axis=1)"),
    "matvec": ("A @ v (NumPy v)", "A @ v", "D @ v", "S @ v"),
    "outer": ("(n, 1) + (1, n), sparse", "a + b", "Da + Db", None),  # scipy.sparse does not broadcast a + b
}

_CHILD = r'''
import json, sys, time
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import bcoo_array as xp

name, call, ref, scipy_ref = sys.argv[1:5]
repeat, n, warmup = int(sys.argv[5]), int(sys.argv[6]), sys.argv[7] == "1"
rows, cols = int(sys.argv[8]), int(sys.argv[9])
rng = np.random.default_rng(0)
if name == "outer":
    Da = rng.standard_normal((n, 1)) * (rng.random((n, 1)) < 0.1)
    Db = rng.standard_normal((1, n)) * (rng.random((1, n)) < 0.1)
    a, b = xp.asarray(Da), xp.asarray(Db)
else:
    D = rng.standard_normal((rows, cols)) * (rng.random((rows, cols)) < 0.1)
    v = rng.standard_normal(cols)
    A = xp.asarray(D)
    # The same call on another shape first ("new shape" column): what remains is the cost of a new shape,
    # not the process's first run of the code (Python's and NumPy's own warm-up).
    D2 = rng.standard_normal((rows * 3 // 4, cols * 3 // 4)) * (rng.random((rows * 3 // 4, cols * 3 // 4)) < 0.1)
    v2 = rng.standard_normal(cols * 3 // 4)
jax.devices()  # JAX's start-up (backend discovery) is once per process, not per operation: paid here

def force(r):
    # Wait for the result without moving it: a BCOOArray from the host engine holds NumPy buffers
    # (computed already); one holding JAX buffers is waited for. Reading r.data would time the
    # hand-off to JAX, which a chain of eager calls never makes.
    if isinstance(r, xp.BCOOArray):
        r = [b for b in (r._data, r._indices) if b is not None]
    return jax.block_until_ready(r)

code = compile(call, "<call>", "eval")
if warmup:
    if name == "outer":
        a, b = xp.asarray(Da[: n // 2]), xp.asarray(Db[:, : n // 2])
        force(eval(code))
        a, b = xp.asarray(Da), xp.asarray(Db)
    else:
        A, v = xp.asarray(D2), v2
        force(eval(code))
        A, v = xp.asarray(D), rng.standard_normal(cols)
t = time.perf_counter(); force(eval(code)); first = time.perf_counter() - t
warm = []
for _ in range(repeat):
    t = time.perf_counter(); force(eval(code)); warm.append(time.perf_counter() - t)
code = compile(ref, "<ref>", "eval")
numpy_t = []
for _ in range(repeat):
    t = time.perf_counter(); eval(code); numpy_t.append(time.perf_counter() - t)
stored = (a.nse + b.nse) / (a.size + b.size) if name == "outer" else A.nse / A.size
scipy_t = [float("nan")]
if scipy_ref != "None":
    import scipy.sparse as sps
    # the same stored entries as A (asarray stores -0.0; csr_array(D) would drop it): explicit entries
    stored_at = (D != 0) | np.signbit(D)
    S = sps.csr_array((D[stored_at], np.nonzero(stored_at)), shape=D.shape)
    code = compile(scipy_ref, "<scipy>", "eval")
    scipy_t = []
    for _ in range(repeat):
        t = time.perf_counter(); eval(code); scipy_t.append(time.perf_counter() - t)
print(json.dumps({"first": first, "warm": min(warm), "numpy": min(numpy_t), "scipy": min(scipy_t),
                  "stored": stored}))
'''


def _run(name: str, repeat: int, n: int, env, warmup: bool, shape=(400, 64)) -> dict:
    label, call, ref, scipy_ref = PROBES[name]
    proc = subprocess.run([sys.executable, "-c", _CHILD, name, call, ref, str(scipy_ref), str(repeat), str(n),
                           str(int(warmup)), str(shape[0]), str(shape[1])],
                          capture_output=True, text=True, env=env)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{name} failed:\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


def _ratio(a: float, b: float) -> str:
    return "-" if a != a or b != b else f"{a / b:,.1f}x"  # NaN where scipy has no twin


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.3f} ms" if seconds < 0.01 else f"{seconds * 1e3:,.1f} ms"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"probes (default: all of {', '.join(PROBES)})")
    parser.add_argument("--repeat", type=int, default=10, help="warm calls and NumPy calls (best is kept)")
    parser.add_argument("--n", type=int, default=2000, help="length of the outer broadcast's vectors")
    parser.add_argument("--shape", type=int, nargs=2, default=(400, 64), metavar=("M", "N"),
                        help="shape of D (default: the issue's 400 x 64); e.g. 4000 640 for bandwidth")
    parser.add_argument("--engine", choices=("default", "xla"), default="default",
                        help="'xla' sets BCOO_ARRAY_HOST=0 (the XLA engine on the CPU)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in PROBES]
    if unknown:
        parser.error(f"unknown probe(s) {', '.join(unknown)}; choose from {', '.join(PROBES)}")
    env = {**os.environ, "JAX_ENABLE_X64": "1"}
    if args.engine == "xla":
        env["BCOO_ARRAY_HOST"] = "0"
    print(f"engine: {args.engine}; {args.shape[0]} x {args.shape[1]} float64 (D = normal * (uniform < 0.1), the "
          f"issue's data at 400 x 64); outer n = "
          f"{args.n}; each probe in a fresh process\n")
    print("| call | first call | warm call | first / warm | first on a new shape / warm | warm / NumPy | "
          "warm / scipy.sparse | scipy.sparse / NumPy | stored |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.names or list(PROBES):
        r = _run(name, args.repeat, args.n, env, warmup=False, shape=args.shape)
        r2 = _run(name, args.repeat, args.n, env, warmup=True, shape=args.shape)
        label = PROBES[name][0] + (f" at n = {args.n:,}" if name == "outer" else "")
        print(f"| `{label}` | {_ms(r['first'])} | {_ms(r['warm'])} | {r['first'] / r['warm']:,.1f}x | "
              f"{r2['first'] / r2['warm']:,.1f}x | {r['warm'] / r['numpy']:,.1f}x | {_ratio(r['warm'], r['scipy'])} | "
              f"{_ratio(r['scipy'], r['numpy'])} | {r['stored']:.0%} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
