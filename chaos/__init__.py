"""gpuobs.chaos: a chaostoolkit extension (actions, probes, experiments) and the game-day runner.

Activities live in `gpuobs.chaos.<target>.{actions,probes}` (targets: serving, node, k8s, prometheus,
rca); `discover()` lists them for `chaos discover gpuobs`. Experiments are in `chaos/experiments/`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ACTIVITY_MODULES", "discover"]

ACTIVITY_MODULES = (
    "gpuobs.chaos.serving.actions",
    "gpuobs.chaos.serving.probes",
    "gpuobs.chaos.node.actions",
    "gpuobs.chaos.node.probes",
    "gpuobs.chaos.k8s.actions",
    "gpuobs.chaos.k8s.probes",
    "gpuobs.chaos.prometheus.probes",
    "gpuobs.chaos.rca.probes",
)


def discover(discover_system: bool = True) -> dict[str, Any]:
    """What `chaos discover gpuobs` prints: every action and probe named in a module's `__all__`."""
    from chaoslib.discovery.discover import discover_actions, discover_probes, initialize_discovery_result

    from gpuobs import __version__

    result: dict[str, Any] = initialize_discovery_result("gpuobs", __version__, "gpuobs")
    for module in ACTIVITY_MODULES:
        found = discover_actions(module) if module.endswith(".actions") else discover_probes(module)
        result["activities"].extend(found)
    return result
