"""The installed version of loopsim."""

__version__ = "0.1.0"
