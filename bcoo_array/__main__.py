"""``python -m bcoo_array``: the ``bcoo-array`` command line."""

from .cli import main

main()
