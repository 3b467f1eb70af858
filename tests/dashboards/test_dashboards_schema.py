"""The generated dashboards validate against what grafana-foundation-sdk carries for Grafana 11.6.

The SDK ships no JSON schema or validator (its Python package holds only generated model classes and
builders), so validation decodes each dashboard with the SDK's model classes, encodes it again and
requires the same JSON back, then checks the fields Grafana needs (gpuobs.dashboards.validate). The
tests below also show that the validation rejects what it is there to reject.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from gpuobs.dashboards.boards import boards, gpu_detail
from gpuobs.dashboards.build import BuildResult
from gpuobs.dashboards.validate import validate_dashboard
from gpuobs.names import all_specs

ROOT = Path(__file__).resolve().parents[2]


def _boards(built: BuildResult) -> dict[str, dict[str, Any]]:
    return {f.detail["uid"]: json.loads(f.path.read_text()) for f in built.of_kind("dashboard")}


def _exprs(board: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in board["panels"] for t in p.get("targets") or []]


def test_sdk_carries_no_json_schema() -> None:
    """Why validation is a round trip: the installed SDK has model classes, no schema files."""
    import grafana_foundation_sdk

    package = Path(grafana_foundation_sdk.__file__).parent
    data_files = [p for p in package.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc", ".typed")]
    assert data_files == []


def test_every_dashboard_validates(built: BuildResult) -> None:
    found = _boards(built)
    assert set(found) == {b.uid for b in boards()} == {"gpuobs-fleet", "gpuobs-gpu", "gpuobs-serving",
                                                       "gpuobs-incident"}
    for uid, board in found.items():
        assert validate_dashboard(board) == [], uid


@pytest.mark.parametrize("breakage, message", [
    (lambda b: b["panels"][1].__setitem__("gridPoss", {}), "not a field of the Grafana 11.6 schema"),
    (lambda b: b["panels"][1]["fieldConfig"]["defaults"].pop("unit"), "no unit"),
    (lambda b: b["panels"][1].__setitem__("type", "no-such-panel"), "unknown to the SDK"),
    (lambda b: b["panels"][2].__setitem__("id", b["panels"][1]["id"]), "repeated"),
    (lambda b: b["panels"][1]["targets"][0].__setitem__("expr", 'up{x=~"$nope"}'), "undefined variable"),
    (lambda b: b.__setitem__("uid", "short"), "8 to 40"),
    (lambda b: b["panels"][1]["datasource"].__setitem__("uid", "prom-1"), "datasource variable"),
    (lambda b: b["panels"][1]["fieldConfig"]["defaults"]["thresholds"].__setitem__("mode", "sideways"),
     "is not a ThresholdsMode"),
    (lambda b: b["panels"][1]["gridPos"].__setitem__("w", "wide"), "not a number"),
])
def test_validation_rejects_broken_dashboards(built: BuildResult, breakage: Any, message: str) -> None:
    board = copy.deepcopy(_boards(built)["gpuobs-fleet"])
    breakage(board)
    problems = validate_dashboard(board)
    assert any(message in p for p in problems), problems


def test_variables_units_and_thresholds(built: BuildResult) -> None:
    found = _boards(built)
    names = {uid: {v["name"] for v in b["templating"]["list"]} for uid, b in found.items()}
    assert names["gpuobs-fleet"] >= {"datasource", "host", "instance"}
    assert names["gpuobs-gpu"] >= {"datasource", "instance", "gpu"}
    assert names["gpuobs-serving"] >= {"datasource", "model", "instance"}
    assert "datasource" in names["gpuobs-incident"]
    for board in found.values():
        for panel in board["panels"]:
            if panel["type"] == "row":
                continue
            defaults = panel["fieldConfig"]["defaults"]
            assert defaults["unit"] and defaults["thresholds"]["steps"], panel["title"]
    temperature = next(p for p in found["gpuobs-fleet"]["panels"] if p["title"] == "GPU temperature")
    steps = temperature["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert [s["value"] for s in steps] == [None, 80, 87]


def test_detail_dashboard_shows_every_gpu_metric(built: BuildResult) -> None:
    exprs = " ".join(_exprs(_boards(built)["gpuobs-gpu"]))
    for spec in gpu_detail.gpu_specs():
        assert re.search(rf"\b{spec.exposed_native}\b", exprs), f"no panel for {spec.exposed_native}"


def test_event_counts_fall_back_to_zero(built: BuildResult) -> None:
    """Panels of things that a healthy fleet has none of show 0, not No data."""
    found = _boards(built)
    event_names = ("xid_errors", "cuda_errors", "engine_errors", "ALERTS", "fault_active", "kernel_launches")
    for board in found.values():
        for expr in _exprs(board):
            if any(name in expr for name in event_names) and "offset" not in expr:
                assert expr.endswith("or on() vector(0)") or "vector(0)" in expr, expr


def test_no_metric_name_is_spelled_in_the_dashboards_code() -> None:
    """Metric names come from gpuobs.names; no string literal of the dashboards package holds one."""
    literals = [
        (path.name, node.value)
        for path in (ROOT / "dashboards").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    assert len(literals) > 100
    for spec in all_specs():
        for name in {spec.native, spec.exposed_native}:
            word = re.compile(rf"(?<![\w:]){re.escape(name)}(?![\w:])")
            spelled = [where for where, text in literals if word.search(text)]
            assert not spelled, f"{name} spelled in dashboards/{spelled}"


def test_no_hand_written_dashboard_json_in_the_repository() -> None:
    # Other projects' dashboards kept verbatim for the compatibility tests are not ours to generate.
    peers = ROOT / "tests" / "fixtures" / "compat"
    tracked = [p for p in ROOT.rglob("*.json") if ".venv" not in p.parts and "build" not in p.parts
               and not p.is_relative_to(peers)]
    for path in tracked:
        try:
            data = json.loads(path.read_text())
        except (UnicodeDecodeError, ValueError):
            continue
        assert not (isinstance(data, dict) and "panels" in data and "schemaVersion" in data), (
            f"{path} is a dashboard JSON: generate it with gpuobs.dashboards instead"
        )
