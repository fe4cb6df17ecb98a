"""Single source of the package version and of the array API version it implements."""

__version__ = "0.1.0"

#: The version of the Python array API standard this namespace implements.
API_VERSION = "2025.12"
