"""gpuobs: observability and reliability toolkit for GPU inference fleets."""

__all__ = ["__version__"]

__version__ = "0.1.0"
