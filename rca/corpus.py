"""The labelled incident corpus (tests/rca/incidents): load and run cases, score top-1/top-3, false causes.

A case is a folder with input files and an `expected.json`: `{"top": "<signature id>" | null,
"also": [ids that must be among the causes], "args": [explicit diagnose arguments, paths relative
to the case], "origin": "how the inputs were made"}`. Without `args`, files under `traces/` are
passed with `--traces` and every other file with `--logs`. `top: null` marks a healthy baseline:
no cause may be reported.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuobs.errors import InputError
from gpuobs.rca.inputs import DiagnoseInputs

__all__ = ["Case", "CaseResult", "Score", "load_cases", "run_in_process", "score"]

EXPECTED = "expected.json"


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    top: str | None
    also: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    origin: str = ""

    @property
    def healthy(self) -> bool:
        return self.top is None

    def inputs(self) -> DiagnoseInputs:
        """The case's inputs as the pipeline takes them (--logs, --traces, --prometheus, --exporter)."""
        opts: dict[str, Any] = {"logs": [], "traces": []}
        it = iter(self.cli_args())
        for flag in it:
            value = next(it)
            if flag in ("--logs", "--traces"):
                opts[flag[2:]].append(value)
            elif flag in ("--prometheus", "--exporter"):
                opts[flag[2:]] = value
            else:
                raise InputError(f"corpus case {self.name}: unsupported argument {flag}")
        return DiagnoseInputs(**opts)

    def cli_args(self) -> list[str]:
        """The `gpuobs diagnose` arguments of the case (absolute paths)."""
        if self.args:
            out = []
            for arg in self.args:
                candidate = self.path / arg
                out.append(str(candidate) if not arg.startswith("-") and candidate.exists() else arg)
            return out
        out = []
        for f in sorted(p for p in self.path.rglob("*") if p.is_file() and p.name != EXPECTED):
            flag = "--traces" if f.relative_to(self.path).parts[0] == "traces" else "--logs"
            out += [flag, str(f)]
        return out


@dataclass(frozen=True)
class CaseResult:
    case: Case
    causes: tuple[str, ...]
    seconds: float
    problems: tuple[str, ...] = ()
    error: str = ""

    @property
    def top1(self) -> bool:
        if self.case.healthy:
            return not self.causes
        return bool(self.causes) and self.causes[0] == self.case.top

    @property
    def top3(self) -> bool:
        if self.case.healthy:
            return not self.causes
        return self.case.top in self.causes[:3]

    @property
    def also_ok(self) -> bool:
        return all(a in self.causes for a in self.case.also)


@dataclass(frozen=True)
class Score:
    cases: int
    incident_cases: int
    healthy_cases: int
    top1: float
    top3: float
    false_cause_rate: float
    failures: tuple[str, ...] = field(default_factory=tuple)


def load_cases(root: Path) -> list[Case]:
    """Every case folder under root (sorted by name); a malformed expected.json is an InputError."""
    cases = []
    for expected in sorted(root.glob(f"*/{EXPECTED}")):
        try:
            data = json.loads(expected.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{expected}: {exc}") from exc
        if "top" not in data:
            raise InputError(f"{expected}: needs a 'top' key (a signature id, or null for a healthy case)")
        cases.append(
            Case(
                name=expected.parent.name,
                path=expected.parent,
                top=data["top"],
                also=tuple(data.get("also", ())),
                args=tuple(data.get("args", ())),
                origin=str(data.get("origin", "")),
            )
        )
    return cases


def run_in_process(case: Case) -> CaseResult:
    """Diagnose one case in this process through the pipeline `gpuobs diagnose --json` calls."""
    from gpuobs.rca.pipeline import diagnose

    t0 = time.perf_counter()
    try:
        report = diagnose(case.inputs())
    except InputError as exc:
        return CaseResult(case, (), time.perf_counter() - t0, error=str(exc))
    return CaseResult(
        case,
        tuple(c.id for c in report.causes),
        time.perf_counter() - t0,
        problems=report.problems,
    )


def score(results: Sequence[CaseResult]) -> Score:
    incidents = [r for r in results if not r.case.healthy]
    healthy = [r for r in results if r.case.healthy]
    failures = tuple(
        f"{r.case.name}: expected {r.case.top}, got {list(r.causes[:3]) or 'no cause'}"
        + (f" (error: {r.error})" if r.error else "")
        for r in results
        if not r.top1 or not r.also_ok
    )
    return Score(
        cases=len(results),
        incident_cases=len(incidents),
        healthy_cases=len(healthy),
        top1=sum(r.top1 for r in incidents) / len(incidents) if incidents else 1.0,
        top3=sum(r.top3 for r in incidents) / len(incidents) if incidents else 1.0,
        false_cause_rate=sum(bool(r.causes) for r in healthy) / len(healthy) if healthy else 0.0,
        failures=failures,
    )
