"""Set-up for the differential suite (conformance/test_differential.py).

JAX's 64-bit mode is turned on at import, as in tests/conftest.py: the
oracle (array-api-strict, i.e. NumPy) has int64/float64 defaults, and the
standard's default dtypes are compared exactly. The array strategy of the
core tests (tests/_oracle.py: messy layouts with duplicates, padding and
fill values) is reused, so tests/ is put on ``sys.path``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

_tests = str(Path(__file__).resolve().parents[1] / "tests")
if _tests not in sys.path:
    sys.path.insert(0, _tests)
