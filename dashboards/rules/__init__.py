"""Prometheus recording and alert rules, and the same alerts as Grafana-managed rules."""

__all__: list[str] = []
