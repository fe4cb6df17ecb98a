"""Build of the optional native extension ``bcoo_array._native._ffi``.

All package metadata lives in ``pyproject.toml``; this file only adds the
C++ extension (the jax.ffi SpMV/SpMM kernel, ``bcoo_array/_native``). Its
include directory comes from ``jax.ffi.include_dir()`` of the jax/jaxlib
installed in the build environment (``[build-system] requires``).

The extension is optional: without a C++17 compiler (or without jax at
build time) the build warns and the package installs without it;
``bcoo_array._kernels.native.available()`` is then False and the XLA
kernels run instead. ``BCOO_ARRAY_BUILD_NATIVE=0`` skips it on purpose.
"""

from __future__ import annotations

import os
import sys
import warnings

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _jax_ffi_include() -> str | None:
    try:
        import jax.ffi

        return jax.ffi.include_dir()
    except Exception as err:  # jax missing or too old: build without the extension
        warnings.warn(f"bcoo_array: jax.ffi include directory not found ({err!r})", stacklevel=1)
        return None


class OptionalBuildExt(build_ext):
    """``build_ext`` that warns instead of failing when the native extension cannot be built."""

    def run(self):
        if os.environ.get("BCOO_ARRAY_BUILD_NATIVE", "1") == "0":
            self._skip("BCOO_ARRAY_BUILD_NATIVE=0")
            return
        inc = _jax_ffi_include()
        if inc is None:
            self._skip("no jax.ffi headers")
            return
        for ext in self.extensions:
            ext.include_dirs.append(inc)
        try:
            super().run()
        except Exception as err:  # no compiler at all (distutils raises before build_extension)
            self._skip(repr(err))

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as err:  # CompileError, LinkError, DistutilsExecError, ...
            self._skip(f"{ext.name}: {err!r}")

    def get_outputs(self):
        # Only what was built, so an editable/wheel install does not look for a missing file.
        return [p for p in super().get_outputs() if os.path.exists(p)]

    @staticmethod
    def _skip(why: str) -> None:
        msg = (f"bcoo_array: the native kernel extension was not built ({why}); "
               "the package works without it (XLA kernels)")
        warnings.warn(msg, stacklevel=1)
        print("WARNING: " + msg, file=sys.stderr)


_CFLAGS = ["-std=c++17", "-O3", "-fvisibility=hidden", "-fno-math-errno"]

setup(
    ext_modules=[
        Extension(
            "bcoo_array._native._ffi",
            sources=["bcoo_array/_native/module.cc", "bcoo_array/_native/coo_matmul.cc",
                     "bcoo_array/_native/coo_matmul_avx2.cc", "bcoo_array/_native/csr_select.cc",
                     "bcoo_array/_native/coo_union.cc"],
            depends=["bcoo_array/_native/kernels.h", "bcoo_array/_native/config.h"],
            language="c++",
            extra_compile_args=_CFLAGS,
            optional=True,
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
