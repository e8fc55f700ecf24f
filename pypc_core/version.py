"""The version of pypc (the package metadata says the same: pyproject.toml)."""

__version__ = "0.1.0"
