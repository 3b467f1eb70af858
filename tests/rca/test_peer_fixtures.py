"""Peer test suites: every `expected.tsv` row of gpud, NVSentinel and gcm that applies to our parsers.

The rows record what other GPU health tools' tests assert about real kernel / fabric-manager lines
(tests/fixtures/compat/FIXTURES.md). Each row is routed by its `under_test` column to a check of our
evidence. Rows that do NOT apply are listed in `NOT_APPLICABLE` with the reason; in short:

- vendor policy, not parsing: gpud's and NVIDIA's catalogs decide event types, repair actions,
  resolutions and which codes are "known" (`getDetailWithSubCode`, `event_type`/`repair_actions`
  fields, NVSentinel mnemonics/resolutions, driver-version-dependent resolutions, action-string
  mapping, fatality from actions). We report every code with what the line says and leave the
  judgement to the signature catalog, so rows that *drop* a line because a catalog lacks its code
  (gpud `unknown xid code`, `unknown SXid code`) are not applied.
- hardware inventory, not logs: `lspci` and `nvidia-smi nvlink --status` counts.
- NVSentinel's own reset-janitor log lines and its NVLink-topology requirement.
- test-local matchers (gpud pstore `sysrq`).

Where a row mixes applicable and policy fields, the applicable fields are checked (documented in
the handler) and the row counts as applied. The test fails if any applied row fails, and if fewer
rows apply than the floor below (so a silent routing change cannot hide rows).
"""

# ruff: noqa: E501  (real log lines and Kubernetes messages are longer than the code line limit)

from __future__ import annotations

import calendar
import csv
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpuobs.evidence import Evidence
from gpuobs.names import gpu as g
from gpuobs.rca import keys
from gpuobs.rca.parsers import parse_text
from gpuobs.rca.parsers.host_kernel import oom_start_process, parse_cpu_pid_comm
from gpuobs.rca.parsers.kmsg import parse_kmsg_record
from gpuobs.rca.parsers.nvrm import nvlink5_subcode, parse_gpu_map_line
from gpuobs.rca.parsers.prefix import normalize_pci

NOT_APPLICABLE: dict[str, str] = {
    "xid.getDetailWithSubCode": "gpud catalog lookup (event type per subcode), not parsing",
    "fabricmanager.isNVIDIANVSwitchPCI": "lspci inventory, not a log line",
    "count lines containing": "nvidia-smi nvlink --status inventory, not a log",
    "lines with vendor 10de": "lspci inventory, not a log",
    "pci.parseLspciVVV": "lspci -vvv inventory, not a log",
    "pstore line matcher": "gpud test-local matcher (sysrq trigger), no finding of ours",
    "parser.CSVParser.Parse with driver version": "NVIDIA catalog resolution by driver version (policy)",
    "XIDHandler.parseGPUResetLine": "NVSentinel's own reset-janitor log format",
    "XIDHandler.determineFatality": "NVSentinel policy (fatality from recommended action)",
    "common.MapActionStringToProto": "NVSentinel policy (action strings)",
    "common.IsDriverVersionR575OrNewer": "NVSentinel policy (driver version gate)",
}
# Single rows that assert catalog policy on a line we do parse.
NOT_APPLICABLE_CASES: dict[tuple[str, str], str] = {
    (
        "xid.Match",
        "NVRM: Xid (PCI:0000:05:00): 99999, unknown error",
    ): "gpud drops codes missing from its catalog; we report every Xid code",
    (
        "sxid.Match",
        "[131453.740758] nvidia-nvswitch0: SXid (PCI:0000:a9:00.0): 11111, Data {0x50610002, 0x10100030}",
    ): "gpud drops SXid codes missing from its catalog; we report every code",
    (
        "SXIDHandler.ProcessLine (no NVLink topology available in test)",
        "[123] nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 28006, Non-fatal, Link 46 MC TS crumbstore MCTO (First)",
    ): "NVSentinel maps SXid links to GPUs through the NVLink topology; no topology here",
}
MIN_APPLIED = 400


@dataclass
class Row:
    project: str
    under_test: str
    case: str
    input: str
    expected: str


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append({"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _load_rows(compat: Path) -> list[Row]:
    rows: list[Row] = []
    for project in ("gpud", "nvsentinel", "gcm"):
        with (compat / project / "expected.tsv").open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            for raw in reader:
                rows.append(
                    Row(
                        project,
                        raw["under_test"],
                        raw.get("case_name") or raw.get("test_func") or "",
                        _unescape(raw["input_line"] or ""),
                        raw["expected"] or "",
                    )
                )
    return rows


def parse_expected(text: str) -> dict[str, Any]:
    """`key=value; key=value` with JSON values where they parse (lists, strings, numbers)."""
    out: dict[str, Any] = {}
    decoder = json.JSONDecoder()
    i = 0
    while i < len(text):
        m = re.compile(r"\s*([\w.]+)=").match(text, i)
        if not m:
            break
        key, i = m.group(1), m.end()
        try:
            value, end = decoder.raw_decode(text, i)
            i = end
        except ValueError:
            end = text.find("; ", i)
            end = len(text) if end < 0 else end
            value = text[i:end].strip()
            i = end
        out[key] = value
        if text.startswith("; ", i):
            i += 2
        elif i < len(text) and not text[i:].strip().startswith(";"):
            # free text after a value (e.g. "match=nil (unknown xid code)"): keep it as a note
            out.setdefault("_note", text[i:].strip())
            break
    return out


def _evidence(text: str, key: str, year: int = 2025) -> list[Evidence]:
    return [e for e in parse_text(text, source="fixture", year=year) if e.key == key]


def _truthy(value: Any) -> bool:
    return value in (True, "true", "non-nil")


# --------------------------------------------------------------------------------------------- checks
def check_xid(row: Row, exp: dict[str, Any], compat: Path) -> None:
    if row.input.startswith("<file "):
        name = row.input[6:-1]
        xids = _evidence((compat / row.project / name).read_text(), keys.XID)
        assert len(xids) == int(exp["match_count"]), xids
        each = row.expected.split("each:", 1)[1]
        code = int(re.search(r"xid=(\d+)", each).group(1))  # type: ignore[union-attr]
        device = re.search(r'device="([^"]+)"', each).group(1)  # type: ignore[union-attr]
        assert all(e.value == code and e.entity.pci_bus_id == normalize_pci(device) for e in xids)
        return
    xids = _evidence(row.input, keys.XID)
    fallen = _evidence(row.input, keys.GPU_FALLEN_OFF_BUS)
    if exp.get("match") in ("nil", "none") or exp.get("xid") == 0 or (exp.get("device") == "" and not xids):
        assert not xids and not fallen, (xids, fallen)
        return
    if row.under_test.startswith("xid.ExtractNVRMXidInfoExtended") and exp.get("match") == "nil":
        assert all("subcode" not in e.attrs for e in xids)
        return
    code = exp.get("xid")
    if code == 79 and not xids:
        # gpud reports a multi-line "fallen off the bus" message as Xid 79; we keep it apart.
        assert len(fallen) == 1, fallen
        ev = fallen[0]
    else:
        assert xids, "no xid parsed"
        ev = xids[0]
        if code is not None:
            assert ev.value == code
    if "device" in exp:
        if exp["device"] == "":
            assert ev.entity.pci_bus_id is None
        else:
            assert ev.entity.pci_bus_id == normalize_pci(exp["device"]), (ev.entity, exp["device"])
            if ev.key == keys.XID and row.under_test.startswith("xid.ExtractNVRMXidInfo[device]"):
                assert ev.attrs["device"] == exp["device"]
    for ours, theirs in (
        ("subcode", "subcode"),
        ("subcode_name", "subcode_name"),
        ("subcode_name", "subcode_description"),
        ("severity", "severity"),
        ("link", "link"),
        ("intrinfo", "intrinfo"),
        ("error_status", "error_status"),
    ):
        if theirs in exp:
            assert ev.attrs.get(ours) == exp[theirs], (ours, ev.attrs, exp)
    # event_type / repair_actions_include / detail / inject_priority: gpud policy, not checked.


def check_xid_device_only(row: Row, exp: dict[str, Any], compat: Path) -> None:
    check_xid(row, exp, compat)


def check_normalize_bdf(row: Row, exp: dict[str, Any], compat: Path) -> None:
    want = exp["normalized"]
    got = normalize_pci(row.input)
    assert (got or "") == (want.removeprefix("PCI:") if want else ""), (got, want)


def check_subcode(row: Row, exp: dict[str, Any], compat: Path) -> None:
    assert nvlink5_subcode(row.input) == exp["subcode"]


def check_sxid(row: Row, exp: dict[str, Any], compat: Path) -> None:
    sx = _evidence(row.input, keys.SXID)
    if exp.get("sxid") == 0 or exp.get("match") in ("nil", "none") or exp.get("device") == "":
        assert not sx, sx
        return
    assert len(sx) == 1, sx
    ev = sx[0]
    if "sxid" in exp:
        assert ev.value == exp["sxid"]
    if "device" in exp:
        assert ev.attrs["device"] == exp["device"]


def check_nvsentinel_sxid(row: Row, exp: dict[str, Any], compat: Path) -> None:
    sx = _evidence(row.input, keys.SXID)
    if exp.get("event") == "nil" or exp.get("events") == "nil":
        if "SXid" not in row.input:
            assert not sx
            return
        # NVSentinel rejects SXid lines without a link number (it maps links to GPUs); we keep the
        # SXid and check the field whose absence makes them reject it.
        assert len(sx) == 1 and "link" not in sx[0].attrs, sx
        return
    assert len(sx) == 1, sx
    ev = sx[0]
    assert ev.value == exp["sxid"]
    assert ev.attrs["nvswitch"] == exp["nvswitch"]
    assert ev.attrs["pci"] == exp["pci"]
    assert ev.attrs["link"] == exp["link"]
    assert ev.attrs["message"] == exp["message"]
    assert ev.attrs["fatal"] is exp["fatal"]


def _presence(key: str, value: str | None = None) -> Callable[[Row, dict[str, Any], Path], None]:
    def check(row: Row, exp: dict[str, Any], compat: Path) -> None:
        found = [e for e in _evidence(row.input, key) if value is None or e.value == value]
        want = exp.get("match")
        if "event" in exp:
            want = exp["event"] != ""
        if "is_nvswitch" in exp:
            want = exp["is_nvswitch"]
        assert bool(found) == _truthy(want) if not isinstance(want, bool) else bool(found) == want, (
            found,
            exp,
        )

    return check


def check_infiniband(row: Row, exp: dict[str, Any], compat: Path) -> None:
    found = _evidence(row.input, keys.INFINIBAND_ERROR)
    kind = {
        "infiniband.HasPCIPowerInsufficient": "pci_power_insufficient",
        "infiniband.HasPortModuleHighTemperature": "port_module_high_temperature",
        "infiniband.HasAccessRegFailed": "access_reg_failed",
    }.get(row.under_test)
    if row.under_test == "infiniband.accessRegFailedMessage":
        assert len(found) == 1 and found[0].value == "access_reg_failed"
        m = re.search(r"PCI device (\S+)\)", exp["message"])
        assert found[0].attrs.get("device") == (m.group(1) if m else None)
        return
    if kind is not None:
        assert bool([e for e in found if e.value == kind]) == _truthy(exp["match"]), (found, exp)
        return
    event = exp.get("event", "")
    assert [e.value for e in found] == ([event] if event else []), (found, exp)


def check_fabric(row: Row, exp: dict[str, Any], compat: Path) -> None:
    if row.input.startswith("<file "):
        text = (compat / row.project / row.input[6:-1]).read_text()
        sx = [e for e in _evidence(text, keys.SXID) if e.value == 12028 and e.attrs.get("fatal") is False]
        assert sx, "non-fatal SXid 12028 not found"
        want = calendar.timegm((2025, 2, 27, 15, 10, 2, 0, 0, 0))
        assert any(e.time == want for e in sx), [e.time for e in sx]
        return
    evs = parse_text(row.input, source="fixture", year=2025)
    classes = []
    for e in evs:
        if e.key == keys.SXID:
            classes.append(
                "fabricmanager_nvswitch_fatal_error"
                if e.attrs.get("fatal")
                else "fabricmanager_nvswitch_non_fatal_error"
            )
        elif e.key == keys.FABRIC_MANAGER_ERROR:
            classes.append(
                {
                    "multicast_gpu_handle": "fabricmanager_nvswitch_nvlink_failure",
                    "topology_mismatch": "fabricmanager_nvswitch_topology_mismatch",
                    "nothing_to_do": "fabricmanager_nvswitch_nothing_to_do",
                }[str(e.value)]
            )
    if row.under_test == "fabricmanager.Match":
        event = exp.get("event", "")
        assert classes == ([event] if event else []), (classes, exp)
        return
    target = {
        "fabricmanager.HasNVSwitchFatalSXid": "fabricmanager_nvswitch_fatal_error",
        "fabricmanager.HasNVSwitchNonFatalSXid": "fabricmanager_nvswitch_non_fatal_error",
        "fabricmanager.HasNVSwitchNVLinkFailure": "fabricmanager_nvswitch_nvlink_failure",
        "fabricmanager.HasNVSwitchTopologyMismatch": "fabricmanager_nvswitch_topology_mismatch",
        "fabricmanager.HasNVSwitchNothingToDo": "fabricmanager_nvswitch_nothing_to_do",
    }[row.under_test]
    assert (target in classes) == _truthy(exp["match"]), (classes, exp)


def check_clock(row: Row, exp: dict[str, Any], compat: Path) -> None:
    mask = int(row.input.split()[0], 16)
    reasons = g.clock_event_reasons(mask)
    assert sum(1 for r in reasons if r in g.HW_SLOWDOWN_REASONS) == len(exp["hw_slowdown_reasons"])
    assert sum(1 for r in reasons if r not in g.HW_SLOWDOWN_REASONS) == len(exp["other_reasons"])


def check_kmsg(row: Row, exp: dict[str, Any], compat: Path) -> None:
    if row.input.startswith("<file "):
        lines = [ln for ln in (compat / row.project / row.input[6:-1]).read_text().splitlines() if ln.strip()]
        records = [parse_kmsg_record(ln) for ln in lines]
        assert all(r.message for r in records)
        if "line_count" in exp:
            assert len(records) == exp["line_count"]
            assert len({r.message for r in records[:7]}) == 1 and records[7].message != records[0].message
            # and the parsers see 7 peermem errors through the kmsg prefix
            assert len(_evidence("\n".join(lines), keys.PEERMEM_ERROR)) == 7
        return
    if _truthy(exp.get("error")):
        with pytest.raises(ValueError):
            parse_kmsg_record(row.input)
        return
    rec = parse_kmsg_record(row.input)
    assert rec.priority == exp["priority"] and rec.seq == exp["seq"] and rec.message == exp["message"]
    assert f"boot_time+{rec.usec}us" == exp["timestamp"]


def check_file_max(row: Row, exp: dict[str, Any], compat: Path) -> None:
    found = _evidence(row.input, keys.FILE_MAX_REACHED)
    want = exp["event"] != "" if "event" in exp else _truthy(exp["match"])
    assert bool(found) == want, (found, exp)


def check_panic_stream(row: Row, exp: dict[str, Any], compat: Path) -> None:
    panics = _evidence(row.input, keys.KERNEL_PANIC)
    assert panics, "no kernel panic"
    m = re.search(r"CPU: (\d+), PID: (\d+), Process: (\S+)\"?$", exp["message"])
    assert m is not None
    attrs = panics[0].attrs
    assert (attrs.get("cpu"), attrs.get("pid"), attrs.get("process")) == (int(m[1]), int(m[2]), m[3]), attrs


def check_panic_start(row: Row, exp: dict[str, Any], compat: Path) -> None:
    assert bool(_evidence(row.input, keys.KERNEL_PANIC)) == _truthy(exp["panic_start"])


def check_cpu_pid(row: Row, exp: dict[str, Any], compat: Path) -> None:
    got = parse_cpu_pid_comm(row.input)
    if not _truthy(exp["found"]):
        assert got is None
        return
    assert got == (exp["cpu"], exp["pid"], exp["process"])


def check_oom_stream(row: Row, exp: dict[str, Any], compat: Path) -> None:
    ooms = _evidence(row.input, keys.HOST_OOM_KILL)
    want = [(m["message"].split("victim process: ")[1].rsplit(", pid: ", 1)) for m in exp["events"]]
    assert [(e.attrs["process"], str(e.attrs["pid"])) for e in ooms] == [(p, pid) for p, pid in want], ooms


def check_oom_line(row: Row, exp: dict[str, Any], compat: Path) -> None:
    ooms = _evidence(row.input, keys.HOST_OOM_KILL)
    if not _truthy(exp.get("found")) or _truthy(exp.get("error")):
        assert not ooms, ooms
        return
    assert len(ooms) == 1
    attrs = ooms[0].attrs
    assert attrs["pid"] == exp["pid"] and attrs["process"] == exp["process"]
    if "constraint" in exp:
        assert attrs["constraint"] == exp["constraint"]
    if "container" in exp:
        assert attrs["memcg"] == exp["container"]


def check_oom_start(row: Row, exp: dict[str, Any], compat: Path) -> None:
    assert (oom_start_process(row.input) is not None) == _truthy(exp["oom_start"])


def check_hung(row: Row, exp: dict[str, Any], compat: Path) -> None:
    found = _evidence(row.input, keys.HUNG_TASK)
    want = exp["event"] != "" if "event" in exp else _truthy(exp["match"])
    assert bool(found) == want, found
    if found and exp.get("process"):
        assert f"{found[0].attrs['process']}:{found[0].attrs['pid']}" == exp["process"]


def check_lockup(row: Row, exp: dict[str, Any], compat: Path) -> None:
    found = _evidence(row.input, keys.SOFT_LOCKUP)
    assert bool(found) == _truthy(exp["match"])
    if found:
        assert f"{found[0].attrs['process']}:{found[0].attrs['pid']}" == exp["process"]


def check_cpu_match(row: Row, exp: dict[str, Any], compat: Path) -> None:
    evs = parse_text(row.input, source="fixture", year=2025)
    names = [
        {keys.HUNG_TASK: "cpu_blocked_too_long", keys.SOFT_LOCKUP: "cpu_soft_lockup"}[e.key]
        for e in evs
        if e.key in (keys.HUNG_TASK, keys.SOFT_LOCKUP)
    ]
    assert names == ([exp["event"]] if exp["event"] else [])


def check_nvs_xid(row: Row, exp: dict[str, Any], compat: Path) -> None:
    xids = _evidence(row.input, keys.XID)
    if not _truthy(exp["success"]):
        assert not xids
        return
    assert len(xids) == 1
    ev = xids[0]
    assert ev.value == exp["xid"]
    assert ev.entity.pci_bus_id == normalize_pci(exp["pci"])
    meta = exp.get("metadata")
    if isinstance(meta, dict):
        for name in ("GPC", "TPC", "SM"):
            if name in meta:
                assert ev.attrs.get(name.lower()) == int(meta[name])
        if "NVLINK" in meta:
            assert ev.attrs.get("link") == int(meta["NVLINK"])
        if not meta:
            assert "gpc" not in ev.attrs
    # mnemonic / resolution: NVIDIA's catalog, not parsing.


def check_gpu_map(row: Row, exp: dict[str, Any], compat: Path) -> None:
    got = parse_gpu_map_line(row.input)
    assert (got or ("", "")) == (exp["pci"], exp["gpu_uuid"])
    if got:
        # and an Xid on that GPU gets the UUID
        text = row.input + "\nNVRM: Xid (PCI:" + got[0] + "): 79, GPU has fallen off the bus."
        assert _evidence(text, keys.XID)[0].entity.gpu_uuid == got[1]


def check_nvs_normalize(row: Row, exp: dict[str, Any], compat: Path) -> None:
    assert normalize_pci(row.input) == exp["normalized"]


def check_gpu_fallen(row: Row, exp: dict[str, Any], compat: Path) -> None:
    fallen = _evidence(row.input, keys.GPU_FALLEN_OFF_BUS)
    if exp["event"] == "nil":
        assert not fallen, fallen
        return
    assert len(fallen) == 1
    assert fallen[0].entity.pci_bus_id == normalize_pci(exp["pci"])
    assert fallen[0].attrs.get("pci_id", "") == exp["pci_id"]


def check_gcm(row: Row, exp: dict[str, Any], compat: Path) -> None:
    evs = parse_text(row.input, source="fixture", year=2025)
    if row.under_test.startswith("check_syslogs xid"):
        want = {int(x) for x in re.findall(r"XID error: (\d+)", exp.get("log_contains", ""))}
        assert {e.value for e in evs if e.key == keys.XID} == want
    elif "link-flaps" in row.under_test:
        want_ifaces = set(re.findall(r"(eth|ib) link flap", exp["log_contains"]))
        got = {str(e.value).rstrip("0123456789") for e in evs if e.key == keys.LINK_FLAP}
        assert got == want_ifaces
    else:  # PCIe AER counts
        text = exp.get("msg_contains", "") + " " + exp.get("log_contains", "") + " " + exp.get("_note", "")
        counts = {"corrected": 0, "uncorrected": 0, "fatal": 0}
        for n, what in re.findall(r"(\d+) (corrected|uncorrectable non-fatal|fatal)", text):
            counts[{"uncorrectable non-fatal": "uncorrected"}.get(what, what)] = int(n)
        got = {k: sum(1 for e in evs if e.key == keys.PCIE_AER and e.value == k) for k in counts}
        assert got == counts, (got, counts)


ROUTES: list[tuple[str, Callable[[Row, dict[str, Any], Path], None]]] = [
    ("xid.ExtractNVRMXidInfo[", check_xid),
    ("xid.ExtractNVRMXidInfoExtended", check_xid),
    ("xid.Match", check_xid),
    ("xid.ExtractNVRMXid", check_xid),
    ("xid.normalizePCIBDF", check_normalize_bdf),
    ("xid.calculateSubCode", check_subcode),
    ("sxid.", check_sxid),
    ("nvlink.Match", _presence(keys.NVLINK_ERROR)),
    ("nccl.", _presence(keys.NCCL_ERROR, "segfault")),
    ("peermem.", _presence(keys.PEERMEM_ERROR)),
    ("infiniband.", check_infiniband),
    ("fabricmanager log watcher", check_fabric),
    ("fabricmanager.Has", check_fabric),
    ("fabricmanager.Match", check_fabric),
    ("hwslowdown.", check_clock),
    ("kmsg.parseLine", check_kmsg),
    ("os.HasVFSFileMaxLimitReached", check_file_max),
    ("os.Match (stateful", check_panic_stream),
    ("os.Match", check_file_max),
    ("os.checkIfStartOfPanicMessages", check_panic_start),
    ("os.extractCPUandPID", check_cpu_pid),
    ("memory OOM matcher", check_oom_stream),
    ("memory.getContainerName", check_oom_line),
    ("memory.getProcessNamePid", check_oom_line),
    ("memory.checkIfStartOfOomMessages", check_oom_start),
    ("cpu.HasBlockedTooLong", check_hung),
    ("cpu.HasSoftLockup", check_lockup),
    ("cpu.Match", check_cpu_match),
    ("parser.CSVParser.Parse (embedded", check_nvs_xid),
    ("XIDHandler.parseNVRMGPUMapLine", check_gpu_map),
    ("XIDHandler.normalizePCI", check_nvs_normalize),
    ("SXIDHandler.", check_nvsentinel_sxid),
    ("GPUFallenHandler.", check_gpu_fallen),
    ("check_syslogs", check_gcm),
    ("process_pcie_aer_output", check_gcm),
]


def _route(row: Row) -> Callable[[Row, dict[str, Any], Path], None] | str:
    for prefix, reason in NOT_APPLICABLE.items():
        if row.under_test.startswith(prefix):
            return reason
    if (row.under_test, row.input) in NOT_APPLICABLE_CASES:
        return NOT_APPLICABLE_CASES[(row.under_test, row.input)]
    for prefix, check in ROUTES:
        if row.under_test.startswith(prefix):
            return check
    return "unrouted"


def test_peer_expected_rows(compat_dir: Path) -> None:
    rows = _load_rows(compat_dir)
    assert len(rows) > 500
    applied, skipped, failures = 0, {}, []
    for row in rows:
        route = _route(row)
        if isinstance(route, str):
            assert route != "unrouted", f"row not routed (add a check or a reason): {row.under_test}"
            skipped[route] = skipped.get(route, 0) + 1
            continue
        applied += 1
        try:
            route(row, parse_expected(row.expected), compat_dir)
        except AssertionError as exc:
            failures.append(
                f"[{row.project}] {row.under_test} / {row.case}: {row.input[:120]!r} -> "
                f"{row.expected[:160]} :: {str(exc)[:300]}"
            )
    print(f"\npeer rows: {applied} applied, {sum(skipped.values())} not applicable")
    for reason, n in sorted(skipped.items(), key=lambda kv: -kv[1]):
        print(f"  {n:4d}  {reason}")
    assert not failures, f"{len(failures)} failing rows:\n" + "\n".join(failures)
    assert applied >= MIN_APPLIED, applied


def test_peer_fixture_files(compat_dir: Path) -> None:
    """Whole fixture logs: what each tool's suite asserts about them, through our parsers."""
    gpud = compat_dir / "gpud"
    nccl = parse_text(
        (gpud / "components__accelerator__nvidia__nccl__testdata__dmesg.decode.iso.log").read_text()
    )
    segv = [e for e in nccl if e.key == keys.NCCL_ERROR and e.value == "segfault"]
    assert segv and all(e.time is not None and e.time > 1.7e9 for e in segv)
    assert segv[0].attrs["process"] == "pt_main_thread"
    memory = parse_text((gpud / "components__memory__testdata__dmesg.decode.iso.log").read_text())
    assert {e.value for e in memory if e.key == keys.XID} >= {13, 43}
    assert all(e.entity.pci_bus_id == "0000:38:00" for e in memory if e.key == keys.XID and e.value == 13)
    ooms = [e for e in memory if e.key == keys.HOST_OOM_KILL]
    assert {(e.attrs["process"], e.attrs["pid"]) for e in ooms} >= {("httpd", 123)}
    osfile = parse_text((gpud / "components__os__testdata__dmesg.decode.iso.log").read_text())
    assert [e.value for e in osfile if e.key == keys.FILE_MAX_REACHED] == [1000000, 1000000]
    panic = parse_text((gpud / "pkg__pstore__testdata__7530486857247__dmesg.txt").read_text())
    assert any(e.key == keys.KERNEL_PANIC and "crash_test" in e.attrs["reason"] for e in panic)

    npd = compat_dir / "node-problem-detector"
    hw = parse_text((npd / "test__kernel_log_generator__problems__hardware_error").read_text())
    assert [e.value for e in hw if e.key == keys.MACHINE_CHECK] == ["fatal"]
    oom = parse_text((npd / "test__kernel_log_generator__problems__oom_kill").read_text())
    assert [
        (e.attrs["process"], e.attrs["pid"], e.attrs["rss_bytes"]) for e in oom if e.key == keys.HOST_OOM_KILL
    ] == [("heapster", 1012, (306328 + 11132 + 12345) * 1024)]
    ro = parse_text((npd / "test__kernel_log_generator__problems__readonly_filesystem").read_text())
    assert [e.value for e in ro if e.key == keys.FILESYSTEM_READONLY] == ["sda1"]

    az = compat_dir / "azurehpc-health-checks"
    flaps = parse_text((az / "test__data__1dev_6flap_syslog").read_text(), year=2025)
    day = calendar.timegm((2025, 8, 17, 0, 0, 0, 0, 0, 0))
    in_window = [e for e in flaps if e.key == keys.LINK_FLAP and day <= (e.time or 0) < day + 86400]
    assert [e.value for e in in_window] == ["ib6"] * 6
    next_day = [
        e for e in flaps if e.key == keys.LINK_FLAP and day + 86400 <= (e.time or 0) < day + 2 * 86400
    ]
    assert next_day == []
    quiet = parse_text((az / "test__data__0flap_syslog").read_text(), year=2025)
    assert [e for e in quiet if e.key == keys.LINK_FLAP] == []


DIAGNOSE_EXPECTED = {
    # fixture log -> the cause `gpuobs diagnose --logs FILE` must put first (None: no cause at all)
    "gpud/components__accelerator__nvidia__xid__testdata__dmesg-with-xid-119.log": "xid_119_gsp_timeout",
    "gpud/components__accelerator__nvidia__nccl__testdata__dmesg.decode.iso.log": "nccl_segfault",
    "gpud/components__os__testdata__dmesg.decode.iso.log": "host_file_max_reached",
    "gpud/pkg__pstore__testdata__7530486857247__dmesg.txt": "host_kernel_panic",
    # an ERST record of an oops (BUG: NULL pointer dereference, Oops: 0002) with no 'Kernel panic' line
    "gpud/pkg__pstore__testdata__dmesg-erst.txt": "host_kernel_panic",
    "node-problem-detector/test__kernel_log_generator__problems__hardware_error": "host_machine_check",
    # "Memory cgroup out of memory: Kill process ..." (4.x): the cgroup's own limit, a container's OOM kill
    "node-problem-detector/test__kernel_log_generator__problems__oom_kill": "oom_killed_container",
    "node-problem-detector/test__kernel_log_generator__problems__readonly_filesystem": "filesystem_readonly",
    "azurehpc-health-checks/test__data__1dev_6flap_syslog": "network_link_flap",
    # healthy logs: an NVSwitch node booting, a quiet syslog
    "gpud/pkg__kmsg__testdata__kmsg.1.log": None,
    "azurehpc-health-checks/test__data__0flap_syslog": None,
}


def test_diagnose_names_the_cause_of_each_fixture_log(compat_dir: Path) -> None:
    """Through the `gpuobs diagnose` command (in-process): sources -> engine -> report, per fixture log."""
    from typer.testing import CliRunner

    from gpuobs.cli.app import app

    runner = CliRunner()
    for name, want in DIAGNOSE_EXPECTED.items():
        res = runner.invoke(app, ["diagnose", "--logs", str(compat_dir / name), "--json"])
        assert res.exit_code == (0 if want else 1), (name, res.output[-500:])
        causes = [c["id"] for c in json.loads(res.stdout)["causes"]]
        assert (causes[0] if causes else None) == want, (name, causes)


def test_nvidia_smi_page_retirement_reports(compat_dir: Path) -> None:
    """azurehpc-health-checks' `nvidia-smi -q -d PAGE_RETIREMENT` fixtures: per-GPU retired pages; the
    check's 'retirement table full' rule (SBE + DBE >= 62 and pending) flags GPUs 2, 6 and 8."""
    from gpuobs.rca import DiagnoseInputs, collect

    az = compat_dir / "azurehpc-health-checks"
    good = collect(DiagnoseInputs(logs=[str(az / "test__data__orig_nvsmi8_output.txt")], live=False))
    assert [e.value for e in good.evidence] == [0.0] * 8
    bad = collect(DiagnoseInputs(logs=[str(az / "test__data__bad_nvsmi8_output.txt")], live=False))
    pages = {e.attrs["bus_id"]: e for e in bad.evidence if e.key == keys.RETIRED_PAGES}
    assert pages["00000002:00:00.0"].attrs == {
        "sbe": 2.0,
        "dbe": 61.0,
        "pending": True,
        "bus_id": "00000002:00:00.0",
    }
    full = sorted(int(b[:8]) for b, e in pages.items() if float(e.value) >= 62 and e.attrs["pending"])  # type: ignore[arg-type]
    assert full == [2, 6, 8]
