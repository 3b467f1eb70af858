"""gpuobs.rca: inputs -> Evidence -> signature catalog -> ranked root causes, as one call.

    from gpuobs.rca import DiagnoseInputs, TimeWindow, diagnose

    report = diagnose(DiagnoseInputs(logs=["dmesg.txt"], prometheus="http://127.0.0.1:9090",
                                     window=TimeWindow.last(3600)))
    print(report.verdict, report.to_dict())

Layout: `readers/` turn each kind of input (files, Prometheus, the exporter's history, Kubernetes,
bundles, the live node) into Evidence; `parsers/` are the pure text -> Evidence functions they use (one
module per log family or document format); `collect` runs the readers, `engine` ranks the causes
(`entities`, `ranking`, `findings`), `pipeline.diagnose` is the one entry point.
"""

from gpuobs.rca.catalog import Catalog, catalog_with_overrides, load_catalog
from gpuobs.rca.collect import CollectResult, collect
from gpuobs.rca.inputs import DiagnoseInputs, TimeWindow
from gpuobs.rca.pipeline import diagnose
from gpuobs.rca.report import Cause, Report

__all__ = [
    "Catalog",
    "Cause",
    "CollectResult",
    "DiagnoseInputs",
    "Report",
    "TimeWindow",
    "catalog_with_overrides",
    "collect",
    "diagnose",
    "load_catalog",
]
