"""The package version, in one place (the package, its HTML report and its command line read it)."""

__version__ = "0.1.0"
