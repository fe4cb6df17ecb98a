"""The ``bcoo-array`` command line: ``demo`` (the main job), ``bench`` and ``info``.

The command line sits above the public namespace: it uses ``bcoo_array``'s
public names only, and it is the only part of the package that imports
click and rich (``import bcoo_array`` imports neither). The workloads live in
``bcoo_array.cli.demo`` and ``bcoo_array.cli.bench``; the command
functions are named ``demo_command`` and ``bench_command`` so that they do not
clash with those submodules in this package's namespace.
"""

from __future__ import annotations

import click

import bcoo_array as xp

from .data import MATRICES_ENV, default_matrices, matrix_dirs


@click.group()
@click.version_option(version=xp.__version__, prog_name="bcoo-array")
def main() -> None:
    """bcoo_array: sparse arrays in JAX's BCOO layout, with the array API."""


_DEVICES_ENV = "BCOO_ARRAY_DEMO_DEVICES"


def _ensure_devices(n: int, args: list) -> None:
    """Make JAX see ``n`` devices: re-run this command in a child process with the XLA flag set.

    JAX reads ``XLA_FLAGS`` once, when its CPU backend starts, and importing
    bcoo_array already imports JAX; so the flag is set for a fresh child
    process (marked by an environment variable so it does not loop) and this
    process exits with the child's status. On GPU/TPU hosts with at least
    ``n`` real devices nothing needs to change and the flag only affects CPU.
    """
    import os
    import subprocess
    import sys

    if os.environ.get(_DEVICES_ENV) == str(n):
        return
    env = dict(os.environ)
    env[_DEVICES_ENV] = str(n)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={n}").strip()
    code = "import sys; from bcoo_array.cli import main; sys.exit(main())"
    sys.exit(subprocess.call([sys.executable, "-c", code] + list(args) + ["--devices", str(n)], env=env))


@main.command("demo")
@click.argument("matrix", required=False)
@click.option("--repeat", default=5, show_default=True, help="Timed repetitions per operation (median reported).")
@click.option("--devices", default=1, show_default=True, type=click.IntRange(min=1),
              help="Shard the matrix by row blocks over N devices (bcoo_array.sharded); on CPU, N simulated "
                   "devices (the demo re-runs itself with XLA_FLAGS=--xla_force_host_platform_device_count=N).")
def demo_command(matrix: str | None, repeat: int, devices: int) -> None:
    """Run a short workload on MATRIX (.mtx or .mtx.gz) beside scipy.sparse.

    MATRIX is a path or the name of a file in a matrix folder ($BCOO_ARRAY_MATRICES,
    or shared/data/matrices in this directory or a parent). Without MATRIX, the
    embedded 2-D Poisson matrix (64 x 64 grid) is used.
    """
    if devices > 1:
        _ensure_devices(devices, ["demo"] + ([matrix] if matrix else []) + ["--repeat", str(repeat)])
    import jax

    jax.config.update("jax_enable_x64", True)
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from .demo import run

    console = Console(width=None if Console().is_terminal else 130)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("starting", total=None)
        try:
            name, shape, rows = run(matrix, repeat=repeat, devices=devices,
                                    progress=lambda s: progress.update(task, description=f"{s}"))
        except (ValueError, FileNotFoundError) as exc:
            raise click.ClickException(str(exc)) from exc
    where = f", sharded over {devices} devices" if devices > 1 else ""
    table = Table(title=f"bcoo_array demo: {name} {shape[0]} x {shape[1]}{where}")
    table.add_column("operation")
    table.add_column("max rel. diff vs scipy", justify="right")
    table.add_column("bcoo_array ms", justify="right")
    table.add_column("scipy ms", justify="right")
    table.add_column("ratio", justify="right")
    table.add_column("note")
    for r in rows:
        table.add_row(r.operation, f"{r.difference:.2e}", f"{r.bcoo_ms:.3f}", f"{r.scipy_ms:.3f}",
                      f"{r.bcoo_ms / r.scipy_ms:.2f}x" if r.scipy_ms else "-", r.note)
    console.print(table)


@main.command("info")
def info_command() -> None:
    """Print versions, JAX's set-up (x64, devices) and whether the native kernels are in use.

    Paste its output into bug reports.
    """
    import importlib.metadata as md
    import platform

    import jax

    def version(dist: str) -> str:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return "not installed"

    rows = [
        ("bcoo_array", f"{xp.__version__} (array API {xp.__array_api_version__})"),
        ("python", platform.python_version()),
    ]
    rows += [(d, version(d)) for d in ("jax", "jaxlib", "numpy", "scipy")]
    extras = {"sparse": "pydata", "matplotlib": "bench", "scikit-learn": "test", "array-api-strict": "test"}
    rows += [(d, version(d) + ("" if version(d) != "not installed" else f" (extra: bcoo-array[{e}])"))
             for d, e in extras.items()]
    x64 = bool(jax.config.jax_enable_x64)
    rows.append(("JAX 64-bit mode", "on" if x64 else
                 "off (64-bit dtypes refused; JAX_ENABLE_X64=1 or jax.config.update('jax_enable_x64', True))"))
    defaults = xp.__array_namespace_info__().default_dtypes()
    rows.append(("default dtypes", ", ".join(f"{k}: {v}" for k, v in defaults.items())))
    devices = jax.devices()
    rows.append(("JAX backend", f"{jax.default_backend()}, {len(devices)} device(s): "
                                + ", ".join(str(d) for d in devices[:8]) + (" ..." if len(devices) > 8 else "")))
    state = xp.native_kernel_info()
    if state["in_use"]:
        kernels = "in use (C++ via jax.ffi)"
    elif not state["built"]:
        kernels = f"not built, XLA path in use ({state['error']})"
    elif state["disabled"]:
        kernels = "built, disabled by BCOO_ARRAY_NATIVE=0; XLA path in use"
    else:
        kernels = f"built, not used on the {state['backend']} backend; XLA path in use"
    rows.append(("native kernels", kernels))
    dirs = matrix_dirs()
    rows.append(("matrix folders", ", ".join(str(d) for d in dirs) if dirs else f"none (set {MATRICES_ENV})"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        click.echo(f"{k:<{width}}  {v}")


@main.command("bench")
@click.argument("matrices", nargs=-1)
@click.option("--random", "random_specs", multiple=True, default=("1e4:1e5",), show_default=True,
              help="Random square matrices N:NNZ to add (repeatable; pass --random '' for none).")
@click.option("--large", is_flag=True,
              help="Also run a random 1e6 x 1e6 matrix with 1e7 entries (minutes, several GB; add "
                   "--libraries bcoo_array,scipy --skip 'A @ A.T' on small machines: jax BCOO's SpMM "
                   "builds nse x k temporaries).")
@click.option("--repeat", default=20, show_default=True, help="Timed calls per operation (median reported).")
@click.option("--libraries", default="bcoo_array,scipy,pydata-sparse,jax BCOO", show_default=True,
              help="Comma-separated libraries to time (scipy is the reference and always runs).")
@click.option("--plot", "plot_path", default="bench.png", show_default=True, type=click.Path(dir_okay=False),
              help="Where to write the PNG plot of the ratios.")
@click.option("--markdown", "md_path", default=None, type=click.Path(dir_okay=False),
              help="Also write the table as Markdown to this file.")
@click.option("--skip", multiple=True, metavar="TEXT",
              help="Skip operations whose name contains TEXT (repeatable), e.g. --skip 'A @ A.T'.")
@click.option("--tune-malloc", is_flag=True,
              help="Opt in to glibc malloc settings that keep freed memory mapped (see docs/performance.md).")
def bench_command(matrices, random_specs, large, repeat, libraries, plot_path, md_path, skip, tune_malloc) -> None:
    """Time bcoo_array beside scipy.sparse, pydata-sparse and jax.experimental.sparse.

    MATRICES are .mtx/.mtx.gz files, names in a matrix folder, poisson:K (the
    2-D Poisson matrix of a K x K grid) or random:N:NNZ (default: poisson:64,
    then cage11 and bcsstk16 when present). Prints the ratios of median
    times to scipy.sparse CSR (lower is better) and writes a PNG plot.
    """
    import jax

    jax.config.update("jax_enable_x64", True)
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from . import bench as _bench

    console = Console(width=max(Console().width, 150))
    try:
        _bench.import_pyplot()
    except ImportError as exc:  # fail before the (long) run, not when plotting
        raise click.ClickException(str(exc)) from exc
    if tune_malloc and not _bench.tune_malloc():
        console.print("[yellow]--tune-malloc: glibc mallopt is not available here; running with defaults[/]")
    libs = [lib.strip() for lib in libraries.split(",") if lib.strip()]
    unknown = [lib for lib in libs if lib not in _bench.LIBRARIES]
    if unknown:
        raise click.BadParameter(f"unknown libraries {unknown}; choose from {list(_bench.LIBRARIES)}",
                                 param_hint="--libraries")
    if "scipy" not in libs:
        libs.append("scipy")
    operations = tuple(op for op in _bench.OPERATIONS if not any(t in op for t in skip))
    specs = list(matrices)
    if not specs:
        specs = ["poisson:64"] + [str(p) for p in default_matrices()]
    specs += [f"random:{r}" for r in random_specs if r]
    if large:
        specs.append("random:1e6:1e7")
    cases = {}
    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        total = len(specs) * len(libs) * len(operations)
        task = progress.add_task("loading", total=total)

        def step(msg: str) -> None:
            progress.update(task, description=msg, advance=1)

        for spec in specs:
            try:
                case = _bench.load_case(spec)
            except (FileNotFoundError, ValueError) as e:
                raise click.BadParameter(str(e), param_hint="MATRICES") from None
            cases[case.name] = case
            progress.update(task, description=f"{case.name}: starting")
            if not console.is_terminal:  # the progress bar shows on terminals only: say what runs
                console.print(f"{case.name} ({case.shape[0]} x {case.shape[1]}): timing {len(operations)} "
                              f"operations with {', '.join(libs)}")
            results += _bench.run_case(case, repeat=repeat, libraries=libs, operations=operations, progress=step)
        progress.update(task, description="measuring copy bandwidth")
        bw = _bench.copy_bandwidth()
    table = Table(title=f"median time / scipy.sparse CSR median (lower is better); copy bandwidth {bw / 1e9:.1f} GB/s")
    others = [lib for lib in _bench.LIBRARIES if lib != "scipy" and lib in libs]
    for col in ("matrix", "operation", "scipy ms", *others, "target"):
        table.add_column(col, justify="left" if col in ("matrix", "operation") else "right")
    for r in results:
        cells = []
        for lib in others:
            v = r.ratio(lib)
            txt = _bench.format_ratio(v, r.operation)
            bwf = _bench.bandwidth_fraction(r, cases[r.case], lib, bw)
            if bwf is not None:
                txt += f" ({bwf:.0%} bw)"
            tgt = _bench.target(r.operation, cases[r.case])
            if lib == "bcoo_array" and v is not None and tgt is not None:
                txt = f"[green]{txt}[/]" if v <= tgt else f"[red]{txt}[/]"
            cells.append(txt)
        sc = r.times.get("scipy")
        sc_txt = "-" if sc is None or r.operation.startswith("compile") else f"{sc * 1e3:.3f}"
        if sc is not None and r.operation.startswith("SpMV"):
            sc_txt += f" ({_bench.bandwidth_fraction(r, cases[r.case], 'scipy', bw):.0%} bw)"
        tgt_txt = _bench.format_target(_bench.target(r.operation, cases[r.case]), r.operation)
        table.add_row(r.case, r.operation, sc_txt, *cells, tgt_txt)
    console.print(table)
    for r in results:
        for lib, err in r.errors.items():
            console.print(f"[dim]{r.case} / {r.operation} / {lib}: {err}[/]")
    path = _bench.plot(results, plot_path, cases)
    console.print(f"plot written to {path}")
    if md_path:
        from pathlib import Path

        Path(md_path).write_text(_bench.markdown_table(results, cases, bw, libraries=libs) + "\n")
        console.print(f"table written to {md_path}")


if __name__ == "__main__":
    main()
