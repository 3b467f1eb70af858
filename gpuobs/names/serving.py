"""Metric names of the serving domain (see gpuobs.names.spec.MetricSpec)."""

from __future__ import annotations

from gpuobs.names.spec import MetricKind, MetricSpec, register

__all__: list[str] = []

_ = (MetricKind, MetricSpec, register)
