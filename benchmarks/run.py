"""Run the benchmark suite without the CLI: ``python benchmarks/run.py [MATRIX ...] [--large]``.

The same runner as ``bcoo-array bench`` (:mod:`bcoo_array.cli.bench`): every
library is timed in this one process on the same values, and the table gives
each median time as a ratio to scipy.sparse CSR's median. Writes
``benchmarks/results/latest.md`` and ``benchmarks/results/latest.png``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bcoo_array.cli import main  # noqa: E402

if __name__ == "__main__":
    out = Path(__file__).resolve().parent / "results"
    args = ["bench", *sys.argv[1:]]
    defaults = []
    if not any(a.startswith("--plot") for a in args):
        defaults += ["--plot", str(out / "latest.png")]
    if not any(a.startswith("--markdown") for a in args):
        defaults += ["--markdown", str(out / "latest.md")]
    if defaults:  # results/ is made only when written to (not with both --plot and --markdown given)
        out.mkdir(exist_ok=True)
    main(args + defaults)
