"""Sparse products on an accelerator: bcoo_array's prepared layouts beside jax.experimental.sparse and dense.

    python benchmarks/accelerator.py [MATRIX ...] [--poisson 512,1024] [--random 1e6:1e7]
        [--repeat 20] [--spmm 16,128] [--cg 512] [--first-call] [--out FILE.md]

Run it on the machine with the accelerator (a TPU through the ``device`` tool;
it runs on a CPU too, where it compares the same code paths). In one process,
float32, every product jitted with the matrix an *argument* (no constant
folding), it times, for each matrix:

* ``bcoo_array``: ``accelerator.prepare(A, device=dev)``, then ``op @ x``;
  the layout chosen (``op.description``) is printed;
* ``scipy CSR (host CPU)``: ``S @ x`` with NumPy ``x`` on the machine's CPU;
* ``bcoo_array jit(A)``: a ``BCOOArray`` passed to ``jax.jit`` (traced
  indices: the COO fallback every traced matrix takes);
* ``jax BCOO`` and ``jax BCSR``: ``jax.experimental.sparse`` from scipy;
* ``dense``: ``jnp.matmul`` of the dense matrix (only when it fits in 1 GiB),
  at ``Precision.HIGHEST`` (float32 on a TPU's matrix unit);

and reports the median time (ms), the CSR bytes per product over that time
(``nnz * (4 + 4) + (m + k) * 4`` bytes: GB/s), that as a percentage of the
streamed bandwidth measured in the same run (a jitted ``v * 2`` over 256 MiB,
read + write), each library's speed-up over ``jax BCOO``, and the largest
error relative to ``max |y|`` of scipy's float64 product. Rows: SpMV
(``A @ x``), SpMM with ``--spmm`` columns, ``A.T @ x``, and CG (``--cg N``:
200 iterations on Poisson N^2, ``accelerator.cg`` against
``jax.scipy.sparse.linalg.cg`` with the jax BCOO matvec). ``--first-call``
times, in fresh processes, the first eager ``A @ v``, ``A @ V`` (128
columns), ``A * v`` and ``A * v[:, None]`` on an array placed on the device, against dense ``jax.numpy``'s first call of the
same operation on the same shape.

MATRIX: a Matrix Market path or a name found in ``$BCOO_ARRAY_MATRICES``
(default: the shared SuiteSparse matrices cage11, bcsstk16, delaunay_n16,
nh2010, bcsstk13, bayer10). The SuiteSparse Matrix Collection is CC-BY 4.0
(cite Davis & Hu, ACM TOMS 38(1), 2011; see README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

DEFAULT_MATRICES = ("cage11", "bcsstk16", "delaunay_n16", "nh2010", "bcsstk13", "bayer10")


def _find(name: str) -> Path:
    p = Path(name)
    if p.is_file():
        return p
    dirs = [Path(d) for d in os.environ.get("BCOO_ARRAY_MATRICES", "").split(os.pathsep) if d]
    here = Path(__file__).resolve().parents[1]
    dirs += [here.parent / "shared" / "data" / "matrices", here / "shared" / "data" / "matrices"]
    for d in dirs:
        for suffix in (".mtx.gz", ".mtx", ""):
            c = d / f"{name}{suffix}"
            if c.is_file():
                return c
    raise FileNotFoundError(f"matrix {name!r} not found in {[str(d) for d in dirs]}; set BCOO_ARRAY_MATRICES")


def _poisson(k: int):
    import numpy as np
    import scipy.sparse as sp

    t = sp.diags_array([-np.ones(k - 1), 2 * np.ones(k), -np.ones(k - 1)], offsets=[-1, 0, 1])
    eye = sp.eye_array(k)
    A = sp.csr_array(sp.kron(eye, t) + sp.kron(t, eye))
    A.sum_duplicates()
    return A


def _random(n: int, nnz: int, seed: int = 0):
    import numpy as np
    import scipy.sparse as sp

    from bcoo_array._kernels.host import unique_ints  # NumPy 2.x's np.unique is slow on 10^7 keys

    rng = np.random.default_rng(seed)
    keys = unique_ints(rng.integers(0, n * n, size=int(nnz * 1.02), dtype=np.int64))[:nnz]
    A = sp.csr_array((rng.standard_normal(len(keys)), (keys // n, keys % n)), shape=(n, n))
    A.sum_duplicates()
    return A


def _time(fn, *args, repeat: int) -> float:
    import jax

    jax.block_until_ready(fn(*args))
    jax.block_until_ready(fn(*args))
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _loop_time(fn, M, x, c: float, single: float) -> float | None:
    """Seconds per product when ``n`` products run in one compiled loop (``u = c * (M @ u) + x``).

    What an iterative solver pays per product: no per-call dispatch (0.6 ms
    per jitted call on the TPU v5e host measured, whatever the program).
    ``c`` keeps ``u`` bounded (``c * ||M|| <= 1/2``); ``n`` makes the loop
    about 50 ms from the single call's time ``single``. None where ``M @ x``
    has not ``x``'s shape.
    """
    import jax

    if fn(M, x).shape != x.shape:
        return None
    n = int(min(100, max(3, 0.05 // max(single, 1e-6))))
    loop = jax.jit(lambda M, x: jax.lax.fori_loop(0, n, lambda i, u: c * fn(M, u) + x, x))
    return _time(loop, M, x, repeat=3) / n


def streamed_bandwidth(repeat: int = 10) -> float:
    """GB/s of a jitted ``v * 2`` over 256 MiB of float32 (bytes read + written over time)."""
    import jax
    import jax.numpy as jnp

    v = jnp.ones((1 << 26,), jnp.float32)
    f = jax.jit(lambda v: v * 2)
    t = _time(f, v, repeat=repeat)
    return 2 * v.nbytes / t / 1e9


def _err(y, ref) -> float:
    import numpy as np

    y = np.asarray(y, np.float64)
    scale = max(float(np.abs(ref).max()), 1e-30)
    return float(np.abs(y - ref).max() / scale)


_DEFAULT_UNROLL: int | None = None


def _set_unroll(lib: str) -> None:
    """``panels.TILE_UNROLL`` for a ``bcoo_array[panels:U]`` row (the module's own value otherwise); caches
    cleared on a change (the kernel reads it when traced)."""
    import jax

    from bcoo_array._kernels import panels

    global _DEFAULT_UNROLL
    if _DEFAULT_UNROLL is None:
        _DEFAULT_UNROLL = panels.TILE_UNROLL
    u = int(lib[:-1].split(":")[1]) if lib.startswith("bcoo_array[panels") and ":" in lib else _DEFAULT_UNROLL
    if u != panels.TILE_UNROLL:
        panels.TILE_UNROLL = u
        jax.clear_caches()


def _prepare_forced(S, dev, spec: str):
    """The operator of a forced layout ``spec``: ``kind[-mixed|-uniform][+rcm][+nomxu][:U]`` (panels tiles
    mixed or uniform, ``layouts.PANELS_MIXED``; the RCM reordering forced; no dense MXU blocks,
    ``prepare(mxu_blocks=False)``; ``U`` read by ``_set_unroll``). ``kind`` ``auto``: the automatic choice."""
    import bcoo_array as xp
    from bcoo_array import accelerator
    from bcoo_array._kernels import layouts

    kind, *flags = spec.split(":")[0].split("+")
    unknown = set(flags) - {"rcm", "nomxu"}
    if unknown:
        raise ValueError(f"layout spec {spec!r}: unknown flags {sorted(unknown)} (+rcm, +nomxu)")
    mixed = {"-mixed": True, "-uniform": False}.get(kind[kind.rfind("-"):]) if "-" in kind else None
    kind = kind.split("-")[0]
    saved, layouts.PANELS_MIXED = layouts.PANELS_MIXED, mixed
    try:
        return accelerator.prepare(xp.from_scipy(S), device=dev, layout=None if kind == "auto" else kind,
                                   reorder=True if "rcm" in flags else None, mxu_blocks="nomxu" not in flags)
    finally:
        layouts.PANELS_MIXED = saved


def bench_matrix(name: str, S, dev, repeat: int, spmm_cols, bw: float, rows: list, forced=(), libs=None) -> None:
    """Time SpMV, SpMM and A.T @ x of scipy matrix ``S`` for every library; append result rows.

    ``forced`` names layouts timed beside the chosen one (``bcoo_array[kind]``
    rows; ``panels:U`` runs the panels kernel with its tile loop unrolled
    ``U`` times, ``panels.TILE_UNROLL``); a layout that refuses the matrix is
    reported and skipped.
    """
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import sparse as jsparse

    import bcoo_array as xp
    from bcoo_array import accelerator

    S = S.astype(np.float32)
    S.sum_duplicates()
    m, k = S.shape
    nnz = S.nnz
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    op = accelerator.prepare(xp.from_scipy(S), device=dev)
    jax.block_until_ready(op.values)
    prep = time.perf_counter() - t0
    print(f"\n## {name}: {m} x {k}, nnz {nnz}; layout: {op.description} (prepared in {prep * 1e3:.0f} ms, "
          f"{op.nbytes / 2**20:.1f} MiB)", flush=True)
    extra = {}
    for kind in forced:
        try:
            t0 = time.perf_counter()
            extra[kind] = _prepare_forced(S, dev, kind)
            jax.block_until_ready(extra[kind].values)
            print(f"  forced layout {extra[kind].description} (prepared in {(time.perf_counter() - t0) * 1e3:.0f} ms, "
                  f"{extra[kind].nbytes / 2**20:.1f} MiB)", flush=True)
        except ValueError as e:
            print(f"  forced layout {kind}: {e}", flush=True)
    A = jax.device_put(xp.from_scipy(S), dev)
    jb = jax.device_put(jsparse.BCOO.from_scipy_sparse(S), dev)
    jr = jax.device_put(jsparse.BCSR.from_scipy_sparse(S), dev)
    dense = jax.device_put(jnp.asarray(S.toarray()), dev) if m * k * 4 <= (1 << 30) else None
    hi = jax.lax.Precision.HIGHEST
    mm = jax.jit(lambda M, v: M @ v)
    mm_dense = jax.jit(lambda M, v: jnp.matmul(M, v, precision=hi))
    mmT = jax.jit(lambda M, v: M.T @ v)
    mmT_dense = jax.jit(lambda M, v: jnp.matmul(M.T, v, precision=hi))
    bytes_spmv = nnz * 8 + (m + k) * 4
    c = 0.5 / max(float(abs(S).sum(axis=1).max()), float(abs(S).sum(axis=0).max()), 1e-30)  # c * ||A|| <= 1/2
    for label, cols in [("A @ x", None)] + [(f"A @ X ({c} cols)", c) for c in spmm_cols] + [("A.T @ x", "T")]:
        if cols == "T":
            x = rng.standard_normal(m).astype(np.float32)
            ref = S.T.astype(np.float64) @ x.astype(np.float64)
            nbytes = bytes_spmv
        elif cols is None:
            x = rng.standard_normal(k).astype(np.float32)
            ref = S.astype(np.float64) @ x.astype(np.float64)
            nbytes = bytes_spmv
        else:
            x = rng.standard_normal((k, cols)).astype(np.float32)
            ref = S.astype(np.float64) @ x.astype(np.float64)
            nbytes = nnz * 8 + (m + k) * 4 * cols
        xd = jax.device_put(jnp.asarray(x), dev)
        f = mmT if cols == "T" else mm
        cases = {"bcoo_array": (f, op), "bcoo_array jit(A)": (f, A), "jax BCOO": (f, jb), "jax BCSR": (f, jr)}
        cases.update({f"bcoo_array[{kind}]": (f, o) for kind, o in extra.items()})
        if dense is not None:
            cases["dense"] = (mmT_dense if cols == "T" else mm_dense, dense)
        if libs is not None:
            cases = {lib: c for lib, c in cases.items() if lib in libs or lib.startswith("bcoo_array[")}
        times, errs, loops = {}, {}, {}
        for lib, (fn, M) in cases.items():
            if lib == "jax BCSR" and cols == "T":
                continue  # jax's BCSR has no transpose
            try:
                _set_unroll(lib)
                times[lib] = _time(fn, M, xd, repeat=repeat)
                errs[lib] = _err(fn(M, xd), ref)
                if lib in ("bcoo_array", "jax BCOO", "dense") or lib.startswith("bcoo_array["):
                    loops[lib] = _loop_time(fn, M, xd, c, times[lib])
            except Exception as e:  # a library that cannot run this case: reported, not fatal
                print(f"  {lib}: {type(e).__name__}: {str(e)[:200]}", flush=True)
            finally:
                _set_unroll("")
        # scipy.sparse on the host's CPU, NumPy operands: what a user of scipy runs without the accelerator
        if libs is None or "scipy" in libs:
            S_host = S.T.tocsr() if cols == "T" else S.tocsr()
            times["scipy CSR (host CPU)"] = _time(lambda M, v: M @ v, S_host, x, repeat=repeat)
            errs["scipy CSR (host CPU)"] = _err(S_host @ x, ref)
        base = times.get("jax BCOO")
        base_loop = loops.get("jax BCOO")
        for lib, t in times.items():
            gbs = nbytes / t / 1e9
            tl = loops.get(lib)
            row = {"matrix": name, "op": label, "lib": lib, "ms": t * 1e3, "GB/s": gbs, "pct_bw": 100 * gbs / bw,
                   "vs_jax_bcoo": (base / t) if base else None, "err": errs[lib],
                   "loop_ms": None if tl is None else tl * 1e3,
                   "loop_pct_bw": None if tl is None else 100 * nbytes / tl / 1e9 / bw,
                   "loop_vs_jax_bcoo": (base_loop / tl) if (tl and base_loop) else None,
                   "layout": op.description if lib == "bcoo_array" else (
                       extra[lib[11:-1]].description if lib.startswith("bcoo_array[") else "")}
            rows.append(row)
            in_loop = "" if tl is None else (f"  | in a loop {tl * 1e3:8.3f} ms {row['loop_pct_bw']:6.2f}% bw "
                                             f"x{row['loop_vs_jax_bcoo'] or 0:7.1f}")
            print(f"  {label:22s} {lib:18s} {t * 1e3:9.3f} ms {gbs:8.2f} GB/s {row['pct_bw']:6.2f}% bw  "
                  f"x{row['vs_jax_bcoo'] or 0:7.1f} vs jax BCOO  err {errs[lib]:.1e}{in_loop}", flush=True)


def bench_cg(n: int, dev, iters: int, bw: float, rows: list) -> None:
    """CG, ``iters`` iterations (tol 0), on Poisson ``n^2``: accelerator.cg against jax's cg with jax BCOO."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import sparse as jsparse
    from jax.scipy.sparse.linalg import cg as jcg

    import bcoo_array as xp
    from bcoo_array import accelerator

    S = _poisson(n).astype(np.float32)
    b = jax.device_put(jnp.asarray(np.random.default_rng(1).standard_normal(S.shape[0]).astype(np.float32)), dev)
    op = accelerator.prepare(xp.from_scipy(S), device=dev)
    jb = jax.device_put(jsparse.BCOO.from_scipy_sparse(S), dev)
    ours = jax.jit(lambda op, b: accelerator.cg(op, b, tol=0.0, maxiter=iters)[0])
    theirs = jax.jit(lambda M, b: jcg(lambda v: M @ v, b, tol=0.0, maxiter=iters)[0])
    t_ours = _time(ours, op, b, repeat=3)
    t_theirs = _time(theirs, jb, b, repeat=3)
    x1, x2 = np.asarray(ours(op, b)), np.asarray(theirs(jb, b))
    err = float(np.abs(x1 - x2).max() / max(np.abs(x2).max(), 1e-30))
    label = f"CG {iters} it, poisson {n}^2"
    for lib, t in (("bcoo_array", t_ours), ("jax BCOO", t_theirs)):
        rows.append({"matrix": f"poisson {n}^2", "op": label, "lib": lib, "ms": t * 1e3, "GB/s": None,
                     "pct_bw": None, "vs_jax_bcoo": t_theirs / t, "err": err if lib == "bcoo_array" else 0.0,
                     "layout": op.description if lib == "bcoo_array" else ""})
    print(f"\n## {label}: bcoo_array {t_ours * 1e3:.1f} ms ({op.description}), jax BCOO {t_theirs * 1e3:.1f} ms: "
          f"x{t_theirs / t_ours:.1f}; solutions differ by {err:.1e} (relative)", flush=True)


_FIRST_CALL = r"""
import json, sys, time
import numpy as np, scipy.sparse as sp
import jax, jax.numpy as jnp
import bcoo_array as xp
which, op = sys.argv[1], sys.argv[2]
if which == "sparse-no-panels":  # the first call without the Pallas layout: what compiling its kernel adds
    from bcoo_array._kernels import layouts
    layouts.AUTO_KINDS = tuple(k for k in layouts.AUTO_KINDS if k != "panels")
    which = "sparse"
elif which.startswith("sparse-kind:"):  # one layout forced on the eager product (the COO fallback beside it)
    from bcoo_array._kernels import layouts
    kind = which.split(":", 1)[1]
    layouts.AUTO_KINDS = tuple(dict.fromkeys((kind, "coo")))
    which = "sparse"
elif which.startswith("sparse-unroll:"):  # the Pallas kernel's tile loop unrolled U times (its compile)
    from bcoo_array._kernels import layouts, panels
    _, unroll, *tiles = which.split(":")  # sparse-unroll:U[:mixed|:uniform]
    panels.TILE_UNROLL = panels.EAGER_TILE_UNROLL = int(unroll)
    panels.EAGER_SMALL_TILES = 0  # (every matrix takes EAGER_TILE_UNROLL: panels.eager_tile_unroll)
    if tiles:
        layouts.PANELS_MIXED = tiles[0] == "mixed"
    which = "sparse"
n = 2000
S = sp.random(n, n, density=0.005, random_state=0, format="csr", dtype=np.float32)
v = np.random.default_rng(0).standard_normal(n).astype(np.float32)
dev = jax.devices()[0]
if which == "sparse":
    A = xp.from_scipy(S).to_device(dev)
else:
    A = jax.device_put(jnp.asarray(S.toarray()), dev)
vd = jax.device_put(jnp.asarray(v), dev)
Vd = jax.device_put(jnp.asarray(np.random.default_rng(1).standard_normal((n, 128)).astype(np.float32)), dev)
jax.block_until_ready((vd, Vd))


def call(A):
    t0 = time.perf_counter()
    out = (A @ vd if op == "matmul" else A @ Vd if op == "matmat" else A * vd if op == "multiply"
           else A * vd[:, None])
    out = out.data if hasattr(out, "nse") else out
    jax.block_until_ready(out)
    return time.perf_counter() - t0


first = call(A)
# the same shape with another number of stored entries: a second program only if nse is not bucketed
S2 = sp.random(n, n, density=0.0051, random_state=1, format="csr", dtype=np.float32)
A2 = xp.from_scipy(S2).to_device(dev) if which == "sparse" else jax.device_put(jnp.asarray(S2.toarray()), dev)
res = {"first": first, "new_nse": call(A2), "warm": min(call(A2) for _ in range(5))}
if "layouts" in globals() and jax.default_backend() != "cpu":  # the layout the eager product took (untimed)
    C = S.tocoo()
    res["layout"] = layouts.choose(np.stack([C.row, C.col], 1), S.shape, 4, jax.default_backend(),
                                   mixed_tiles=False, dtype=np.float32).kind
print(json.dumps(res))
"""


def first_calls(rows: list) -> None:
    """First eager ``A @ v`` / ``A @ V`` (128 columns) / ``A * v`` / ``A * v[:, None]`` on a device-placed array
    vs dense jax.numpy, each in a fresh process."""
    print("\n## first eager call (fresh process, 2000 x 2000, 20,000 entries)", flush=True)
    for op in ("matmul", "matmat", "multiply", "multiply_rows"):
        res = {}
        for which in ("sparse", "dense") + (("sparse-no-panels",) if op == "matmul" else ()):
            out = subprocess.run([sys.executable, "-c", _FIRST_CALL, which, op], capture_output=True, text=True)
            if out.returncode:
                print(f"  {op} {which}: failed: {out.stderr[-400:]}", flush=True)
                continue
            res[which] = json.loads(out.stdout.strip().splitlines()[-1])
        if "sparse" in res and "dense" in res:
            sym = {"matmul": "@ v", "matmat": "@ V (128 cols)", "multiply": "* v", "multiply_rows": "* v[:, None]"}[op]
            for which, lib in (("sparse", "bcoo_array"), ("sparse-no-panels", "bcoo_array, panels excluded")):
                if which not in res:
                    continue
                for when, label in (("first", "first"), ("new_nse", "next, new nse"), ("warm", "warm")):
                    t_s, t_d = res[which][when], res["dense"][when]
                    print(f"  A {sym} ({label}): {lib} {t_s * 1e3:.1f} ms, dense jax.numpy {t_d * 1e3:.1f} ms: "
                          f"{t_s / t_d:.2f}x", flush=True)
                    rows.append({"matrix": "random 2000^2", "op": f"eager A {sym}, {label} call", "lib": lib,
                                 "ms": t_s * 1e3, "GB/s": None, "pct_bw": None, "vs_jax_bcoo": None, "err": None,
                                 "layout": f"{t_s / t_d:.2f}x dense jax.numpy's ({t_d * 1e3:.1f} ms)"})


def markdown(rows: list, bw: float, device: str) -> str:
    """The result rows as a markdown table."""
    lines = [f"Device: {device}; streamed bandwidth (jitted `v * 2`): {bw:.0f} GB/s.", "",
             "Per call: one jitted call, dispatch included. In a loop: per product of a compiled loop "
             "(what a solver pays).", "",
             "| matrix | operation | library | ms per call | GB/s | % of streamed | x jax BCOO | ms in a loop | "
             "% of streamed (loop) | x jax BCOO (loop) | rel. error | layout |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        def f(v, fmt):
            return "-" if v is None else format(v, fmt)
        lines.append(f"| {r['matrix']} | {r['op']} | {r['lib']} | {f(r['ms'], '.3f')} | {f(r['GB/s'], '.2f')} | "
                     f"{f(r['pct_bw'], '.2f')} | {f(r['vs_jax_bcoo'], '.1f')} | {f(r.get('loop_ms'), '.3f')} | "
                     f"{f(r.get('loop_pct_bw'), '.2f')} | {f(r.get('loop_vs_jax_bcoo'), '.1f')} | "
                     f"{f(r['err'], '.1e')} | {r['layout']} |")
    return "\n".join(lines) + "\n"


def choose_only(args, backend: str) -> None:
    """Time ``layouts.choose`` (what ``prepare`` runs on the host) for each case; print the chosen layout."""
    import numpy as np
    import scipy.io
    import scipy.sparse as sp

    from bcoo_array._kernels import layouts

    cases = [(_find(n).name.split(".")[0], lambda n=n: sp.csr_array(scipy.io.mmread(_find(n)))) for n in args.matrices]
    cases += [(f"poisson {kk}^2", lambda kk=kk: _poisson(kk)) for kk in [int(c) for c in args.poisson.split(",") if c]]
    if args.random:
        n, nnz = (int(float(v)) for v in args.random.split(":"))
        cases.append((f"random {n:.0e}, nnz {nnz:.0e}", lambda: _random(n, nnz)))
    print(f"| matrix | nnz | layout for {backend} | choose (s) |\n|---|---|---|---|")
    for name, load in cases:
        S = sp.coo_array(load())
        idx = np.stack([S.row, S.col], 1)
        t0 = time.perf_counter()
        lay = layouts.choose(idx, S.shape, 4, backend)
        print(f"| {name} | {S.nnz} | {lay.describe()} | {time.perf_counter() - t0:.2f} |", flush=True)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("matrices", nargs="*", default=list(DEFAULT_MATRICES))
    p.add_argument("--poisson", default="512,1024", help="grid sizes K of Poisson K^2 matrices ('' for none)")
    p.add_argument("--random", default="1e6:1e7", help="N:NNZ of a random N x N matrix ('' for none)")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--spmm", default="16,128", help="SpMM column counts ('' for none)")
    p.add_argument("--cg", default="512", help="Poisson grid size K for the CG row ('' for none)")
    p.add_argument("--cg-iters", type=int, default=200)
    p.add_argument("--layouts", default="",
                   help="layouts timed beside the chosen one, e.g. 'panels,ell' ('panels:4': tile loop "
                        "unrolled 4x; 'panels-mixed', 'panels-uniform': its tiles; '+rcm': reordered; "
                        "'+nomxu': without dense MXU blocks; 'auto': the automatic choice, e.g. 'auto+nomxu')")
    p.add_argument("--libs", default="", help="only these rows, e.g. 'bcoo_array,jax BCOO,scipy' (default: all)")
    p.add_argument("--first-call", action="store_true")
    p.add_argument("--no-shared", action="store_true",
                   help="time only the generated matrices (--poisson, --random), none of the shared ones")
    p.add_argument("--choose-only", default=None, metavar="BACKEND",
                   help="only time the host-side layout choice (layouts.choose) for BACKEND (e.g. tpu), on any machine")
    p.add_argument("--out", default=None, help="write the markdown table here")
    p.add_argument("--json", default=None, help="write the rows as JSON here")
    args = p.parse_args(argv)

    import jax
    import scipy.io
    import scipy.sparse as sp

    if args.choose_only:
        choose_only(args, args.choose_only)
        return
    rows: list = []
    if args.first_call:
        # fresh processes, run before this one takes the device (an accelerator is held by one process)
        first_calls(rows)
    dev = jax.devices()[0]
    bw = streamed_bandwidth()
    print(f"device {dev.device_kind} ({dev.platform}); streamed bandwidth {bw:.0f} GB/s", flush=True)
    spmm_cols = [int(c) for c in args.spmm.split(",") if c]
    cases = []
    for name in [] if args.no_shared else args.matrices:
        path = _find(name)
        cases.append((path.name.split(".")[0], lambda path=path: sp.csr_array(scipy.io.mmread(path))))
    for kk in [int(c) for c in args.poisson.split(",") if c]:
        cases.append((f"poisson {kk}^2", lambda kk=kk: _poisson(kk)))
    if args.random:
        n, nnz = (int(float(v)) for v in args.random.split(":"))
        cases.append((f"random {n:.0e}, nnz {nnz:.0e}", lambda: _random(n, nnz)))

    def save() -> str:  # after every case: a run cut short keeps what it measured
        table = markdown(rows, bw, f"{dev.device_kind} ({dev.platform})")
        if args.out:
            Path(args.out).write_text(table)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        return table

    for name, load in cases:
        try:
            bench_matrix(name, load(), dev, args.repeat, spmm_cols, bw, rows,
                         forced=[v for v in args.layouts.split(",") if v],
                         libs={v.strip() for v in args.libs.split(",")} if args.libs else None)
        except Exception:  # one case failing must not lose the others' rows
            traceback.print_exc()
        save()
    if args.cg:
        try:
            bench_cg(int(args.cg), dev, args.cg_iters, bw, rows)
        except Exception:
            traceback.print_exc()
    print("\n" + save())


if __name__ == "__main__":
    main()
