"""The version of tamesu (a leaf: importing it loads nothing else)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
