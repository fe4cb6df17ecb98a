"""The scipy.sparse drop-in surface of BCOOArray (methods scipy user code calls),
kept apart from the array API operators of :mod:`._array_object`."""


class ScipyMethodsMixin:
    """Methods with scipy.sparse names and meanings, mixed into BCOOArray."""

    __slots__ = ()
