"""The settings every generated artefact shares: scrape job names, thresholds, windows, links, Grafana ids.

One frozen record, so that the dashboards, the Prometheus rules, the Grafana-managed rules and the
Kubernetes manifests are generated from the same values (a threshold changed here changes the alert,
the panel's threshold line and the runbook link together).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuobs.errors import InputError
from gpuobs.user_input import require_http_url, require_namespace

__all__ = ["DEFAULT_RUNBOOK_BASE_URL", "Options", "SloOptions"]

DEFAULT_RUNBOOK_BASE_URL = "https://github.com/gpuobs/gpuobs/blob/main/docs/runbooks"
"""Where `runbook_url` annotations point by default: a placeholder like the image names in deploy/."""

_DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
_JOB = re.compile(r"^[A-Za-z0-9_.:/-]+$")
_GRAFANA_UID = re.compile(r"[A-Za-z0-9_-]{1,40}")


@dataclass(frozen=True)
class SloOptions:
    """Serving SLOs: `latency_objective` of requests finish within `latency_threshold_s` (the P99 SLO when
    0.99), and at most `1 - error_objective` of requests fail. The threshold must be a bucket boundary of
    vLLM's e2e latency histogram, since the slow fraction is read from the `le` bucket."""

    latency_threshold_s: float = 10.0
    latency_objective: float = 0.99
    error_objective: float = 0.999


@dataclass(frozen=True)
class Options:
    """What a deployment may change. `for_override` and `event_window` exist for tests and demos that
    cannot wait minutes: they shorten every alert's `for` and the look-back of event alerts."""

    exporter_job: str = "gpuobs-exporter"
    serving_job: str = "gpuobs-serve"
    runbook_base_url: str = DEFAULT_RUNBOOK_BASE_URL
    grafana_datasource_uid: str = "prometheus"
    grafana_folder: str = "gpuobs"
    alertmanager_url: str = "http://alertmanager:9093"
    namespace: str = "gpuobs"
    event_window: str = "10m"
    for_override: str | None = None
    gpu_memory_full_ratio: float = 0.98  # engines reserve up to ~95% for the KV cache on purpose
    kv_cache_full_ratio: float = 0.95
    queue_waiting_requests: int = 8
    preemptions_per_5m: int = 50
    slo: SloOptions = field(default_factory=SloOptions)

    def __post_init__(self) -> None:
        for name in ("exporter_job", "serving_job"):
            value = getattr(self, name)
            if not _JOB.match(value):
                raise InputError(f"--{name.replace('_', '-')} must be a Prometheus job name, got {value!r}")
        for name in ("event_window", "for_override"):
            value = getattr(self, name)
            if value is not None and not _DURATION.match(value):
                raise InputError(f"{name.replace('_', '-')} must be a duration like 10m, got {value!r}")
        # Links, a contact point, a data source and manifests that would be written and then fail in Grafana,
        # Alertmanager or kubectl: refused here, in the user's words.
        require_http_url("--runbook-base-url", self.runbook_base_url, DEFAULT_RUNBOOK_BASE_URL)
        require_http_url("--alertmanager-url", self.alertmanager_url, "http://alertmanager:9093")
        if not _GRAFANA_UID.fullmatch(self.grafana_datasource_uid):
            raise InputError(
                "--grafana-datasource-uid must be 1 to 40 letters, digits, '-' or '_' (Grafana's rule for a "
                f"UID), got {self.grafana_datasource_uid!r}"
            )
        require_namespace("--namespace", self.namespace)
        for name in ("gpu_memory_full_ratio", "kv_cache_full_ratio"):
            if not 0 < getattr(self, name) <= 1:
                raise InputError(f"{name.replace('_', '-')} must be in (0, 1], got {getattr(self, name)}")
        for name in ("latency_objective", "error_objective"):
            value = getattr(self.slo, name)
            if not 0 < value < 1:
                raise InputError(f"SLO {name.replace('_', ' ')} must be in (0, 1), got {value}")

    def runbook_url(self, alert: str) -> str:
        """The runbook link of an alert: docs/runbooks/<alert>.md under the base URL."""
        return f"{self.runbook_base_url.rstrip('/')}/{alert}.md"
