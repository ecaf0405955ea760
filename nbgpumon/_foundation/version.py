"""The package's version, in one place below every layer that writes it down."""

__version__ = "0.1.0"
