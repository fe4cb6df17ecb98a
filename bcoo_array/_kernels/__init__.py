"""Buffer-level kernels: they take and return ``data``/``indices`` buffers and
know nothing of the BCOOArray class. Each module holds one family of
operations; structural work (sorting, grouping, pattern union) is planned with
NumPy when the indices are concrete and with sort-based XLA code when tracing.
"""
