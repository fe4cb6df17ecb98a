"""Session set-up for the core tests.

JAX's 64-bit mode is turned on at import, before any array is made: most
dtype tests need int64/float64, and the library refuses (with a ValueError)
64-bit dtypes while it is off. The behaviour with x64 off is tested in
subprocesses (see test_dtypes.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

from hypothesis import HealthCheck, settings  # noqa: E402

# Lean defaults for 2 shared cores: few examples, no deadline (the first call
# of each shape compiles with XLA, which Hypothesis would flag as slow).
# The default run is derandomized (the same examples every run, so CI is
# reproducible); BCOO_HYPOTHESIS_RANDOM=1 draws fresh examples for exploration.
settings.register_profile(
    "bcoo",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("BCOO_HYPOTHESIS_RANDOM", "0") != "1",
)
settings.load_profile("bcoo")

# Make ``tests/_oracle.py`` importable as ``_oracle`` whatever the rootdir.
_here = str(Path(__file__).resolve().parent)
if _here not in sys.path:
    sys.path.insert(0, _here)
