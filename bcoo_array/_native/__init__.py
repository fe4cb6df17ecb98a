"""C++ sources of the optional native kernels (built by ``setup.py`` into ``_ffi``).

See ``bcoo_array._kernels.native`` for the Python side.
"""
