"""Settings of the verbs as a user meets them, through the real `gpuobs` command.

Flag > GPUOBS_<VERB>_<OPTION> > the config file's [<verb>] table > default; `--help` names each variable;
Kubernetes service links (`GPUOBS_PORT=tcp://...` from a Service named `gpuobs`) break nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.exporter import SIM_NODE, ExporterProcess
from support.prometheus import free_port
from support.serve import ServeProcess

SERVICE_LINK = "tcp://10.0.0.1:9400"


def _gpuobs(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GPUOBS_")}
    return subprocess.run([sys.executable, "-m", "gpuobs", *args], capture_output=True, text=True, timeout=60,
                          env={**clean, "GPUOBS_CONFIG": os.devnull, "COLUMNS": "250", **(env or {})})


@pytest.mark.parametrize(("verb", "names"), [
    ("export", ["GPUOBS_EXPORT_PORT", "GPUOBS_EXPORT_BACKEND", "GPUOBS_EXPORT_WEB_CONFIG"]),
    ("serve", ["GPUOBS_SERVE_PORT", "GPUOBS_SERVE_GRPC_PORT", "GPUOBS_SERVE_DEVICE"]),
    ("loadtest", ["GPUOBS_LOADTEST_P99_TARGET_MS", "GPUOBS_LOADTEST_GPU_HOUR_PRICE"]),
])
def test_help_names_the_environment_variables(verb: str, names: list[str]) -> None:
    out = _gpuobs(verb, "--help")
    assert out.returncode == 0, out.stderr
    for name in names:
        assert name in out.stdout, f"`gpuobs {verb} --help` does not name {name}"


def test_export_reads_its_own_variable_and_ignores_service_links(tmp_path: Path) -> None:
    port = free_port()
    env = {"GPUOBS_PORT": SERVICE_LINK, "GPUOBS_EXPORT_PORT": str(port), "GPUOBS_EXPORT_GPUS": "3"}
    with ExporterProcess(*SIM_NODE, env=env, port=port, port_flag=False, log_dir=tmp_path) as exp:
        assert exp.metrics().count("gpuobs_gpu_temperature_celsius{") == 3, "GPUOBS_EXPORT_GPUS=3"
    assert exp.returncode == 0, exp.logs()


def test_a_service_link_in_the_verbs_own_variable_falls_back_to_the_config_file(tmp_path: Path) -> None:
    """A Service named `gpuobs-export` gives every pod GPUOBS_EXPORT_PORT=tcp://...: not a port, ignored."""
    port = free_port()
    config = tmp_path / "config.toml"
    config.write_text(f"[export]\nport = {port}\n")
    env = {"GPUOBS_CONFIG": str(config), "GPUOBS_PORT": SERVICE_LINK, "GPUOBS_EXPORT_PORT": SERVICE_LINK}
    with ExporterProcess(*SIM_NODE, env=env, port=port, port_flag=False, log_dir=tmp_path) as exp:
        exp.get("/metrics")
    assert exp.returncode == 0, exp.logs()
    warnings = [line for line in exp.logs().splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "ignoring GPUOBS_EXPORT_PORT=tcp://10.0.0.1:9400" in warnings[0], warnings
    assert "gpuobs-export" in warnings[0] and "enableServiceLinks" in warnings[0]


def test_flag_beats_environment_beats_config_file(tmp_path: Path) -> None:
    flag_port, env_port, file_port = free_port(), free_port(), free_port()
    config = tmp_path / "config.toml"
    config.write_text(f'[export]\nport = {file_port}\nnaming = "dcgm"\ngpus = 2\n')
    env = {"GPUOBS_CONFIG": str(config), "GPUOBS_EXPORT_PORT": str(env_port), "GPUOBS_EXPORT_GPUS": "4"}
    with ExporterProcess(*SIM_NODE, "--gpus", "1", env=env, port=flag_port, log_dir=tmp_path) as exp:
        text = exp.metrics()
    assert text.count("DCGM_FI_DEV_GPU_TEMP{") == 1, "--gpus 1 beats GPUOBS_EXPORT_GPUS=4 and gpus = 2"
    with ExporterProcess(*SIM_NODE, env=env, port=env_port, port_flag=False, log_dir=tmp_path) as exp:
        text = exp.metrics()
    assert text.count("DCGM_FI_DEV_GPU_TEMP{") == 4, "GPUOBS_EXPORT_GPUS=4 beats gpus = 2; dcgm from the file"


def test_unknown_config_key_and_bad_environment_value_are_one_line_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[export]\nprot = 9500\n")
    out = _gpuobs("export", *SIM_NODE, env={"GPUOBS_CONFIG": str(config)})
    assert out.returncode == 2
    assert "unknown setting 'prot' in [export]" in out.stderr and "Traceback" not in out.stderr, out.stderr
    out = _gpuobs("export", *SIM_NODE, env={"GPUOBS_EXPORT_GPUS": "many"})
    assert out.returncode == 2 and "--gpus" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_the_config_file_names_options_by_their_flags(tmp_path: Path) -> None:
    """`json = true` and `catalog = ...` (the flags --json and --catalog) in [diagnose]: they used to be
    unknown settings, the error listing the parameter names `as-json` and `catalog-dir`; `logs` may be one
    path."""
    log = tmp_path / "kern.log"
    log.write_text("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.\n")
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    config = tmp_path / "config.toml"
    config.write_text(f'[diagnose]\njson = true\ncatalog = "{catalog}"\nlogs = "{log}"\n')
    out = _gpuobs("diagnose", env={"GPUOBS_CONFIG": str(config)})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["top_cause"] == "xid_79_fallen_off_bus"
    config.write_text("[diagnose]\njsn = true\n")
    out = _gpuobs("diagnose", env={"GPUOBS_CONFIG": str(config)})
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "known: bundle, catalog, end, exporter, json," in out.stderr, out.stderr


def test_the_dashboards_table_sets_the_build_and_a_misplaced_setting_is_named(tmp_path: Path) -> None:
    """`dashboards build --help` names "the dashboards table of the config file", but `[dashboards]` was
    checked as a verb's table against the group's options (it has none): every key was "unknown setting ...
    (known: )". A table of no verb (`[diagnoze]`) and a setting outside any table were silently ignored."""
    config = tmp_path / "config.toml"
    config.write_text('[dashboards]\nexporter-job = "site-dcgm"\n')
    out = _gpuobs("dashboards", "build", str(tmp_path / "out"), env={"GPUOBS_CONFIG": str(config)})
    assert out.returncode == 0, out.stderr
    assert 'job=\\"site-dcgm\\"' in (tmp_path / "out" / "gpuobs-fleet-overview.json").read_text()
    for text, words in (
        ("[dashboards]\nexporter-jobb = 'x'\n", "unknown setting 'exporter-jobb' in [dashboards]"),
        ("[diagnoze]\njson = true\n", "unknown table [diagnoze]"),
        ('since = "30m"\n', "since = '30m' in"),
    ):
        config.write_text(text)
        out = _gpuobs("diagnose", "--list-signatures", env={"GPUOBS_CONFIG": str(config)})
        if "dashboards" in text:
            out = _gpuobs("dashboards", "alerts", env={"GPUOBS_CONFIG": str(config)})
        assert out.returncode == 2 and words in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
    config.write_text("[kernels]\nkernel-span-sample = 0.5\n")  # the launcher's table, read by resolve()
    assert _gpuobs("diagnose", "--list-signatures", env={"GPUOBS_CONFIG": str(config)}).returncode == 0


def test_serve_reads_its_own_port_variable_despite_service_links(tmp_path: Path) -> None:
    """Services named `gpuobs`, `gpuobs-serve` and `gpuobs-serve-grpc` exist in the namespace."""
    server = ServeProcess(tmp_path, grpc=False, port_flag=False, env={
        "GPUOBS_CONFIG": os.devnull,
        "GPUOBS_PORT": SERVICE_LINK,
        "GPUOBS_SERVE_GRPC_PORT": "tcp://10.0.0.2:50051",
    })
    server.env["GPUOBS_SERVE_PORT"] = str(server.port)
    with server:  # ready on the port GPUOBS_SERVE_PORT named: the service links did not stop it
        assert "vllm:" in server.metrics()
        assert server.proc is not None and server.proc.poll() is None
    # (the other warning line is the embedded model's random weights)
    warnings = [line for line in server.logs().splitlines() if line.startswith("warning: ignoring")]
    assert len(warnings) == 1 and "ignoring GPUOBS_SERVE_GRPC_PORT=tcp://10.0.0.2:50051" in warnings[0]


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def test_supervise_from_the_environment_starts_one_worker_not_a_chain(tmp_path: Path) -> None:
    """GPUOBS_SERVE_SUPERVISE reaches the worker too: it must be told not to supervise again."""
    env = {"GPUOBS_CONFIG": os.devnull, "GPUOBS_SERVE_SUPERVISE": "1"}
    with ServeProcess(tmp_path, grpc=False, env=env) as srv:
        assert srv.proc is not None
        workers = _children(srv.proc.pid)
        assert len(workers) == 1, f"the supervisor runs one worker, got {workers}"
        cmdline = Path(f"/proc/{workers[0]}/cmdline").read_text().split("\0")
        assert "serve" in cmdline and "--no-supervise" in cmdline, cmdline
        assert not [c for c in _children(workers[0]) if "gpuobs" in Path(f"/proc/{c}/cmdline").read_text()]
