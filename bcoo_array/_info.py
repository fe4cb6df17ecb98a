"""The inspection utilities of the array API standard (``__array_namespace_info__``), and
``native_kernel_info`` (beyond the standard: the state of the optional native kernels)."""

from __future__ import annotations

import jax

from . import _dtypes
from ._kernels import native


class __array_namespace_info__:
    """Capabilities, devices and dtypes of the ``bcoo_array`` namespace.

    Default dtypes follow JAX's x64 setting at the time of the call.
    """

    def capabilities(self) -> dict:
        """Optional features: boolean indexing (eager only) and data-dependent shapes (eager only) are
        supported; ``max dimensions`` is None (no limit)."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self):
        """The default JAX device."""
        return jax.devices()[0]

    def devices(self) -> tuple:
        """All JAX devices of this process (a tuple, as the 2025.12 test suite expects)."""
        return tuple(jax.devices())

    def default_dtypes(self, *, device=None) -> dict:
        """The default dtypes: float64/complex128/int64 with x64 on, else 32-bit ones."""
        return {
            "real floating": _dtypes.default_float(),
            "complex floating": _dtypes.default_complex(),
            "integral": _dtypes.default_int(),
            "indexing": _dtypes.default_int(),
        }

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The supported dtypes of the standard by name, optionally only those of ``kind`` (a kind
        name or tuple). float16, which bcoo_array also holds, is not a dtype of the standard and is
        not listed."""
        out = {}
        for dt in _dtypes.supported_dtypes():
            if dt == _dtypes.float16:
                continue
            if kind is None or _dtypes.isdtype_kind(dt, kind):
                out["bool" if dt == _dtypes.bool_ else dt.name] = dt
        return out


def native_kernel_info() -> dict:
    """The state of the optional native CPU kernels (C++ through ``jax.ffi``), for reports and bug reports.

    The native kernels are built with the package when a compiler is
    available; without them (or with the environment variable
    ``BCOO_ARRAY_NATIVE=0``, or on a GPU/TPU backend) the XLA kernels run
    instead. ``bcoo-array info`` prints this state.

    Returns
    -------
    dict
        ``"built"`` (bool): the extension imports; ``"error"`` (str or None):
        why it does not; ``"disabled"`` (bool): ``BCOO_ARRAY_NATIVE=0`` is
        set; ``"backend"`` (str): JAX's default backend; ``"in_use"``
        (bool): the native kernels run here (built, not disabled, on the CPU
        backend).

    Examples
    --------
    >>> import bcoo_array as xp
    >>> sorted(xp.native_kernel_info())
    ['backend', 'built', 'disabled', 'error', 'in_use']
    """
    return dict(native.describe())
