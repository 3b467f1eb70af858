"""gpuobs.dashboards: Grafana dashboards and Prometheus rules generated from code."""

__all__: list[str] = []
