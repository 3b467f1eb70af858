"""Core data model, settings resolution and the error classes."""

from __future__ import annotations

import json
import logging

import pytest

from gpuobs.config import Setting, default_map, drop_service_links, resolve
from gpuobs.errors import (
    ChaosError,
    DashboardError,
    ExporterError,
    GpuobsError,
    InputError,
    KernelError,
    MissingExtraError,
    RcaError,
    ServingError,
)
from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.jsonlog import JsonFormatter


def test_evidence_round_trips_through_dict() -> None:
    entity = Entity(host="n1", gpu_index=3)
    ev = Evidence(EvidenceKind.LOG, "xid", 79.0, "dmesg", 1.5, entity, "raw", {"a": 1})
    again = Evidence.from_dict(json.loads(json.dumps(ev.to_dict())))
    assert again == ev and again.attrs == {"a": 1}


def test_entity_overlap_ignores_unknown_fields() -> None:
    assert Entity(host="a", gpu_index=1).overlaps(Entity(gpu_index=1, pod="p"))
    assert not Entity(host="a").overlaps(Entity(host="b"))
    assert Entity(host="a").merged(Entity(host="b", pod="p")) == Entity(host="a", pod="p")


def test_library_setting_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    """resolve() serves the settings no verb owns: argument > GPUOBS_<NAME> > [section] of the file."""
    cfg = {"kernels": {"kernel-span-sample": 0.5}}
    monkeypatch.delenv("GPUOBS_KERNEL_SPAN_SAMPLE", raising=False)
    assert resolve("kernels", "kernel_span_sample", None, 0.01, float, cfg) == 0.5
    monkeypatch.setenv("GPUOBS_KERNEL_SPAN_SAMPLE", "0.25")
    assert resolve("kernels", "kernel_span_sample", None, 0.01, float, cfg) == 0.25
    assert resolve("kernels", "kernel_span_sample", 1.0, 0.01, float, cfg) == 1.0
    monkeypatch.setenv("GPUOBS_KERNEL_SPAN_SAMPLE", "nope")
    with pytest.raises(InputError, match="GPUOBS_KERNEL_SPAN_SAMPLE"):
        resolve("kernels", "kernel_span_sample", None, 0.01, float, cfg)


def test_default_map_takes_verb_tables_and_refuses_unknown_keys() -> None:
    config = {"export": {"pod-resources-socket": "none", "port": 9500}, "kernels": {"anything": 1}}
    verbs = {"export": ["port", "pod_resources_socket"], "serve": ["port"]}
    assert default_map(config, verbs, others=["kernels"]) == {
        "export": {"port": 9500, "pod_resources_socket": "none"}
    }
    unknown = r"unknown setting 'prot' in \[export\].*known: pod-resources-socket, port"
    with pytest.raises(InputError, match=unknown):
        default_map({"export": {"prot": 1}}, verbs)
    with pytest.raises(InputError, match=r"\[serve\].*must be a table"):
        default_map({"serve": 8000}, verbs)
    # A table nobody reads and a setting outside any table were ignored: a typo left the default in place.
    with pytest.raises(InputError, match=r"unknown table \[kernels\] .*\(known: export, serve\)"):
        default_map(config, verbs)
    with pytest.raises(InputError, match=r"port = 9500 in .* is outside any table.*\[export\], \[serve\]"):
        default_map({"port": 9500}, verbs)


def test_default_map_takes_an_option_by_its_flag_and_a_lone_string_for_a_list() -> None:
    """`--json` is the parameter `json_out`: the config file may say either (it used to know only the
    parameter, and listed it as the known name); a lone string where the option takes several is a list."""
    verbs = {"diagnose": [Setting("as_json", "json"), Setting("logs", "logs", many=True), Setting("paths")]}
    table = {"json": True, "logs": "kern.log", "paths": ["a.log"]}
    assert default_map({"diagnose": table}, verbs) == {
        "diagnose": {"as_json": True, "logs": ["kern.log"], "paths": ["a.log"]}
    }
    assert default_map({"diagnose": {"as-json": False}}, verbs) == {"diagnose": {"as_json": False}}
    with pytest.raises(InputError, match=r"known: json, logs, paths\)"):
        default_map({"diagnose": {"jsn": True}}, verbs)
    with pytest.raises(InputError, match="sets json twice"):
        default_map({"diagnose": {"json": True, "as_json": False}}, verbs)


def test_kubernetes_service_links_are_dropped_and_settings_kept() -> None:
    env = {
        "GPUOBS_PORT": "tcp://10.0.0.1:9400",  # Service `gpuobs`
        "GPUOBS_SERVE_PORT": "tcp://10.96.3.7:8000",  # Service `gpuobs-serve`
        "GPUOBS_SERVE_GRPC_PORT": "tcp://[fd00::12]:50051",  # Service `gpuobs-serve-grpc`, IPv6 cluster
        "GPUOBS_SERVE_SERVICE_HOST": "10.96.3.7",
        "GPUOBS_EXPORT_PORT": "9500",
        "GPUOBS_EXPORT_OTLP_ENDPOINT": "tcp://10.0.0.9:4318",  # not a *_PORT variable: left alone
        "OTHER_PORT": "tcp://10.0.0.2:80",
    }
    dropped = drop_service_links(env)
    assert dropped == {
        "GPUOBS_PORT": "tcp://10.0.0.1:9400",
        "GPUOBS_SERVE_PORT": "tcp://10.96.3.7:8000",
        "GPUOBS_SERVE_GRPC_PORT": "tcp://[fd00::12]:50051",
    }
    assert env == {
        "GPUOBS_SERVE_SERVICE_HOST": "10.96.3.7",
        "GPUOBS_EXPORT_PORT": "9500",
        "GPUOBS_EXPORT_OTLP_ENDPOINT": "tcp://10.0.0.9:4318",
        "OTHER_PORT": "tcp://10.0.0.2:80",
    }


def test_errors_share_one_base_per_component() -> None:
    from gpuobs.exporters.inprocess.launcher import LaunchError
    from gpuobs.exporters.sidecar.backend import BackendError
    from gpuobs.exporters.sidecar.podresources import PodResourcesError
    from gpuobs.exporters.sidecar.sim import SimFaultError
    from gpuobs.rca.signature import SignatureError

    for cls in (LaunchError, BackendError, PodResourcesError, SimFaultError):
        assert issubclass(cls, ExporterError), cls
    assert issubclass(SignatureError, RcaError)
    assert issubclass(SimFaultError, ValueError), "the fault route answers ValueErrors with 400"
    assert issubclass(SignatureError, ValueError), "the catalog loader catches ValueErrors"
    for base in (ExporterError, RcaError, ServingError, KernelError, ChaosError, DashboardError):
        assert issubclass(base, GpuobsError) and base.exit_code == 1, "a failure, not a usage error"
    assert InputError.exit_code == MissingExtraError.exit_code == 2


def test_json_log_line_carries_entity_fields() -> None:
    record = logging.LogRecord("gpuobs.x", logging.WARNING, __file__, 1, "xid %d", (79,), None)
    record.gpu = 3
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "xid 79" and line["level"] == "warning" and line["gpu"] == 3 and "ts" in line


def test_node_name_prefers_downward_api(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuobs.telemetry import node_name, resource_attributes

    monkeypatch.setenv("NODE_NAME", "gpu-node-7")
    assert node_name() == "gpu-node-7"
    assert resource_attributes("x")["host.name"] == "gpu-node-7"
    monkeypatch.delenv("NODE_NAME")
    assert node_name()  # falls back to the hostname
