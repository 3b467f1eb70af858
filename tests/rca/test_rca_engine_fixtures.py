"""`gpuobs diagnose --logs` on each peer kernel-log fixture (tests/fixtures/compat) names the right cause.

Fixtures come from gpud, node-problem-detector and azurehpc-health-checks (see FIXTURES.md); the
expected cause is ours, read from what each fixture holds. Not listed: the lspci / nvidia-smi / fabric
manager status outputs (not kernel logs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuobs.cli.app import app

GPUD = "gpud/"
NPD = "node-problem-detector/test__kernel_log_generator__problems__"
AZ = "azurehpc-health-checks/test__data__"
NV = "components__accelerator__nvidia__"
PSTORE = "pkg__pstore__testdata__7530486857247__"

# fixture file -> (expected top cause or None, other causes that must also be reported)
EXPECTED: dict[str, tuple[str | None, tuple[str, ...]]] = {
    f"{GPUD}{NV}xid__testdata__dmesg-with-xid-119.log": ("xid_119_gsp_timeout", ()),
    f"{GPUD}{NV}nccl__testdata__dmesg.decode.iso.log": ("nccl_segfault", ()),
    # Xid 13/43 burst and, separately, the host OOM killer: two independent causes.
    f"{GPUD}components__memory__testdata__dmesg.decode.iso.log": (
        "host_oom_killer",
        ("xid_13_graphics_exception",),
    ),
    f"{GPUD}components__os__testdata__dmesg.decode.iso.log": ("host_file_max_reached", ()),
    f"{GPUD}pkg__kmsg__testdata__kmsg.1.log": (None, ()),  # healthy NVSwitch node boot
    f"{GPUD}pkg__kmsg__testdata__kmsg.2.peermem.log": (None, ()),  # benign peermem invalid-context noise
    f"{GPUD}{NV}fabric-manager__testdata__fabricmanager.log": (None, ()),  # one non-fatal NVSwitch error
    f"{GPUD}{PSTORE}dmesg-erst-7530486857247752193": ("host_kernel_panic", ()),
    f"{GPUD}{PSTORE}dmesg-erst-7530486857247752194": (None, ()),  # part 2 holds boot lines only
    f"{GPUD}{PSTORE}dmesg.txt": ("host_kernel_panic", ()),
    # a sysrq-triggered NULL-pointer oops (BUG: / Oops: 0002, no 'Kernel panic' line)
    f"{GPUD}pkg__pstore__testdata__dmesg-erst.txt": ("host_kernel_panic", ()),
    f"{NPD}hardware_error": ("host_machine_check", ()),
    # a 4.x kernel's "Memory cgroup out of memory: Kill process ... or sacrifice child": a cgroup's own limit
    # (the 5.x "Memory cgroup out of memory: Killed process" reads the same), so a container's OOM kill
    f"{NPD}oom_kill": ("oom_killed_container", ()),
    f"{NPD}readonly_filesystem": ("filesystem_readonly", ()),
    f"{AZ}0flap_syslog": (None, ()),
    f"{AZ}1dev_6flap_syslog": ("network_link_flap", ()),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_names_the_right_cause(name: str, compat_dir: Path) -> None:
    path = compat_dir / name
    assert path.is_file(), f"fixture missing: {path}"
    top, also = EXPECTED[name]
    run = CliRunner().invoke(app, ["diagnose", "--json", "--logs", str(path)])
    assert run.exception is None or isinstance(run.exception, SystemExit), run.exception
    report = json.loads(run.stdout)
    causes = [c["id"] for c in report["causes"]]
    if top is None:
        assert causes == [] and run.exit_code == 1, causes
        return
    assert run.exit_code == 0
    assert causes[0] == top, causes
    assert set(also) <= set(causes), causes
    assert report["problems"] == []
