"""The package's version, importable without importing the package (no cycle)."""

__version__ = "0.1.0"
