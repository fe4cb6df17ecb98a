"""The ``bcoo-array`` command line: ``demo`` (the main job) and ``bench``."""

from __future__ import annotations

import click


@click.group()
@click.version_option(package_name="bcoo-array")
def main() -> None:
    """bcoo_array: sparse arrays in JAX's BCOO layout, with the array API."""


@main.command()
@click.argument("matrix", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--repeat", default=5, show_default=True, help="Timed repetitions per operation (median reported).")
def demo(matrix: str | None, repeat: int) -> None:
    """Run a short workload on MATRIX (.mtx or .mtx.gz) beside scipy.sparse.

    Without MATRIX, the embedded 2-D Poisson matrix (64 x 64 grid) is used.
    """
    import jax

    jax.config.update("jax_enable_x64", True)
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from ._demo import run

    console = Console(width=None if Console().is_terminal else 130)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("starting", total=None)
        name, shape, rows = run(matrix, repeat=repeat,
                                progress=lambda s: progress.update(task, description=f"{s}"))
    table = Table(title=f"bcoo_array demo: {name} {shape[0]} x {shape[1]}")
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


if __name__ == "__main__":
    main()
