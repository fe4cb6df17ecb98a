"""Set-up for the interop suite: JAX's 64-bit mode (results are compared with
scipy's float64 results to 1e-10 relative) and the real matrices."""

from __future__ import annotations

from pathlib import Path

import jax
import pytest

jax.config.update("jax_enable_x64", True)

MATRICES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "matrices"


@pytest.fixture(scope="session")
def load_matrix():
    """``load_matrix(name)`` -> scipy ``csr_array`` of ``shared/data/matrices/name``; skips when the folder is absent."""
    import scipy.io

    cache = {}

    def load(name):
        if not MATRICES.is_dir():
            pytest.skip("shared/data/matrices is not available")
        if name not in cache:
            cache[name] = scipy.io.mmread(MATRICES / name, spmatrix=False).tocsr()
        return cache[name]

    return load
