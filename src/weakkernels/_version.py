"""The package version, a leaf module: the model file writer records it."""

__version__ = "0.1.0"
