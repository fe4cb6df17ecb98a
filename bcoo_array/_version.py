"""Single source of the package version and of the array API version it implements."""

__version__ = "0.1.0"

#: The version of the Python array API standard this namespace implements.
API_VERSION = "2025.12"

#: Versions ``__array_namespace__(api_version=...)`` accepts (this namespace meets each of them).
SUPPORTED_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", API_VERSION)
