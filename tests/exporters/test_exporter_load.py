"""The exporter under connection load: a burst of new-connection scrapers, idle connections past the cap, TLS.

Issue 10 items 7 and 9, on a real `gpuobs export` process. The assertions are about success and
bounded resources, never latency (the figures are in `python -m bench.exporter --load`):
- a burst of 50 scrapers opening new connections at once all get their scrape: the accept backlog
  (socketserver's default was 5) holds them while the exporter is busy. The exporter is paused with
  SIGSTOP while they connect, so the burst is certain to meet a full queue however fast this machine is;
- idle connections beyond the cap do not each hold a thread (3,000 slow connections grew the old
  exporter to 2,738 threads): the thread count of the process, read from /proc, stays bounded, and a
  scrape still gets through while they are open;
- on the TLS path the response goes out with Nagle's algorithm off (headers and body in separate TLS
  records stalled on Nagle against delayed ACKs: about 45 ms a scrape instead of 1 ms).
"""

from __future__ import annotations

import http.client
import os
import select
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.certs import self_signed
from support.exporter import SIM_NODE, ExporterProcess

from gpuobs.exporters.sidecar.server import MAX_CONNECTIONS
from gpuobs.exporters.sidecar.service import Exporter, ExporterConfig

SCRAPERS = 50


@pytest.fixture
def exporter_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    exporter = ExporterProcess(*SIM_NODE, "--gpus", "2", "--log-level", "warning", log_dir=tmp_path)
    with exporter:
        assert exporter.proc is not None
        try:
            yield exporter.proc, exporter.port
        finally:
            if exporter.alive():  # a test that failed with the exporter stopped: let it take SIGTERM
                exporter.proc.send_signal(signal.SIGCONT)


def _scrape(port: int, timeout: float = 20.0, sock: socket.socket | None = None) -> int | None:
    """Status of one GET /metrics on a new connection (or on `sock`, already connected); None if none."""
    try:
        s = sock or socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError:
        return None
    with s:
        s.settimeout(timeout)
        try:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: exporter\r\nConnection: close\r\n\r\n")
            reply = b""
            while chunk := s.recv(65536):
                reply += chunk
        except OSError:
            return None
    try:
        return int(reply.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def test_a_burst_of_new_connection_scrapers_all_succeed(
    exporter_process: tuple[subprocess.Popen[bytes], int],
) -> None:
    proc, port = exporter_process
    proc.send_signal(signal.SIGSTOP)  # busy exporter: nothing accepts while the burst connects
    socks = []
    try:
        for _ in range(SCRAPERS):
            s = socket.socket()
            s.setblocking(False)
            assert s.connect_ex(("127.0.0.1", port)) in (0, 115)  # 115: EINPROGRESS
            socks.append(s)
        # the kernel completes a handshake only while the listen queue has room
        deadline = time.monotonic() + 10
        connected: set[socket.socket] = set()
        while len(connected) < SCRAPERS and time.monotonic() < deadline:
            _, writable, _ = select.select([], [s for s in socks if s not in connected], [], 0.2)
            connected.update(s for s in writable if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
        assert len(connected) == SCRAPERS, f"only {len(connected)} of {SCRAPERS} fit the accept backlog"
    finally:
        proc.send_signal(signal.SIGCONT)
    for s in socks:
        s.setblocking(True)
    statuses = [_scrape(port, sock=s) for s in socks]
    assert statuses == [200] * SCRAPERS


def test_idle_connections_past_the_cap_do_not_each_hold_a_thread(
    exporter_process: tuple[subprocess.Popen[bytes], int],
) -> None:
    proc, port = exporter_process
    baseline = _threads(proc.pid)
    idle = []
    try:
        for _ in range(MAX_CONNECTIONS * 4):  # slow clients: half a request, then nothing
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: exporter\r\n")
            idle.append(s)
        peak = baseline
        for _ in range(20):  # the bound holds at any moment, not just at the end
            peak = max(peak, _threads(proc.pid))
            time.sleep(0.1)
        assert peak <= baseline + MAX_CONNECTIONS + 8, (baseline, peak)
        assert _scrape(port) == 200, "a scrape must get through while idle connections fill the cap"
    finally:
        for s in idle:
            s.close()
    assert _scrape(port) == 200
    assert proc.poll() is None


# -- TLS -----------------------------------------------------------------------------------------------


def _server_side_nodelay(client: socket.socket) -> int:
    """TCP_NODELAY of the exporter's end of `client`'s connection (same process: found in /proc/self/fd)."""
    want = client.getsockname()
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            s = socket.fromfd(fd, socket.AF_INET, socket.SOCK_STREAM)
        except OSError:
            continue
        with s:
            try:
                if s.getpeername() == want:
                    return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            except OSError:
                continue
    raise AssertionError("the exporter's end of the connection was not found")


def test_tls_responses_go_out_without_nagle(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    web = tmp_path / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n")
    exp = Exporter(
        ExporterConfig(backend="sim", gpus=1, port=0, web_config=str(web), pod_resources_socket="none")
    ).start()
    try:
        assert exp.server is not None
        conn = http.client.HTTPSConnection(
            "127.0.0.1", exp.server.port, context=ssl.create_default_context(cafile=str(cert)), timeout=10
        )
        for _ in range(3):  # keep-alive: the same connection serves every scrape
            conn.request("GET", "/metrics")
            response = conn.getresponse()
            assert response.status == 200 and response.read()
        assert conn.sock is not None
        assert _server_side_nodelay(conn.sock) != 0
        conn.close()
    finally:
        exp.stop()
