"""Prometheus collector of a kernel launcher's launch and CUDA error counters and launch durations."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from gpuobs.exporters.inprocess.launcher import KernelLauncher
from gpuobs.names import kernel as names

__all__ = ["LauncherCollector"]


class LauncherCollector:
    """prometheus_client collector of a launcher's counters and its histogram of sampled launch durations
    (fresh families on every scrape)."""

    def __init__(self, launcher: KernelLauncher | Callable[[], KernelLauncher]) -> None:
        self._launcher = launcher

    def _get(self) -> KernelLauncher:
        launcher = self._launcher
        return launcher if isinstance(launcher, KernelLauncher) else launcher()

    def describe(self) -> list[Any]:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        return [
            CounterMetricFamily(names.KERNEL_LAUNCHES.native, names.KERNEL_LAUNCHES.help,
                                labels=list(names.KERNEL_LAUNCHES.labels)),
            HistogramMetricFamily(names.KERNEL_DURATION.native, names.KERNEL_DURATION.help,
                                  labels=list(names.KERNEL_DURATION.labels)),
            CounterMetricFamily(names.CUDA_ERRORS.native, names.CUDA_ERRORS.help,
                                labels=list(names.CUDA_ERRORS.labels)),
        ]

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
        from prometheus_client.utils import floatToGoString

        launcher = self._get()
        launches = CounterMetricFamily(names.KERNEL_LAUNCHES.native, names.KERNEL_LAUNCHES.help,
                                       labels=list(names.KERNEL_LAUNCHES.labels))
        for (kernel, backend), count in sorted(launcher.launch_counts_by_backend().items()):
            launches.add_metric([kernel, backend], count)
        yield launches
        durations = HistogramMetricFamily(names.KERNEL_DURATION.native, names.KERNEL_DURATION.help,
                                          labels=list(names.KERNEL_DURATION.labels))
        for (kernel, backend), (buckets, total) in sorted(launcher.duration_histograms().items()):
            durations.add_metric([kernel, backend], [(floatToGoString(le), n) for le, n in buckets], total)
        yield durations
        errors = CounterMetricFamily(names.CUDA_ERRORS.native, names.CUDA_ERRORS.help,
                                     labels=list(names.CUDA_ERRORS.labels))
        for (code, name, kernel), count in sorted(launcher.error_counts().items()):
            errors.add_metric([code, name, kernel], count)
        yield errors
