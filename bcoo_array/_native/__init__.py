"""C++ sources of the optional native kernels (built by ``setup.py`` into ``_ffi``).

See :mod:`bcoo_array._kernels.native` for the Python side.
"""
