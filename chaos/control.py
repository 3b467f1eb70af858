"""chaostoolkit control: undo every fault still pending when an experiment ends, whatever ended it.

chaostoolkit's default rollback strategy skips rollbacks when a run failed or was interrupted; the
experiments name this control so that a fault is never left behind (Ctrl-C, SIGTERM, a failed probe).
"""

from __future__ import annotations

import logging
from typing import Any

from gpuobs.chaos.incident import current

__all__ = ["after_experiment_control", "before_experiment_control"]

logger = logging.getLogger("chaostoolkit")

LOG_KEYS = ("serve_log", "kernel_log", "exporter_log")


def before_experiment_control(
    context: dict[str, Any], configuration: dict[str, Any] | None = None, secrets: Any = None, **kwargs: Any
) -> None:
    """Start each experiment with a clean incident record, watching the configured log files."""
    current().reset()
    config = configuration or {}
    current().watch([str(config[k]) for k in LOG_KEYS if config.get(k)])


def after_experiment_control(
    context: dict[str, Any],
    state: Any = None,
    configuration: dict[str, Any] | None = None,
    secrets: Any = None,
    **kwargs: Any,
) -> None:
    """Run the undos that rollbacks did not (failed run, interrupted run, rollbacks skipped)."""
    done = current().undo_all()
    if done:
        logger.warning("gpuobs control undid faults left behind: %s", ", ".join(done))
