"""Core data model and settings resolution."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from gpuobs.config import resolve
from gpuobs.errors import InputError
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


def test_resolve_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cfg = {"export": {"port": 9500}}
    monkeypatch.delenv("GPUOBS_PORT", raising=False)
    assert resolve("export", "port", None, 9400, int, cfg) == 9500
    monkeypatch.setenv("GPUOBS_PORT", "9600")
    assert resolve("export", "port", None, 9400, int, cfg) == 9600
    assert resolve("export", "port", 9700, 9400, int, cfg) == 9700
    monkeypatch.setenv("GPUOBS_PORT", "nope")
    with pytest.raises(InputError, match="GPUOBS_PORT"):
        resolve("export", "port", None, 9400, int, cfg)


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
