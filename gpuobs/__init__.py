"""gpuobs: observability and reliability toolkit for GPU inference fleets."""

from typing import Any

__all__ = ["__version__", "discover"]

__version__ = "0.1.0"


def discover(discover_system: bool = True) -> dict[str, Any]:
    """`chaos discover gpuobs` imports the distribution's top-level package: its chaos activities."""
    from gpuobs.chaos import discover as discover_chaos

    return discover_chaos(discover_system)
