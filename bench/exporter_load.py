"""`gpuobs export` under connection load, before and after issue 10's fixes (items 7 and 9).

Three measurements, each on a real exporter process (sim backend, 8 GPUs), once "before" (socketserver's
defaults restored inside that process: accept backlog 5, a thread for every connection, Nagle's
algorithm on, headers and body written apart) and once "after" (as shipped):
- 50 scrapers, each opening a new connection per scrape as fast as it can for `--seconds`: p50, p99
  and worst latency, and how many scrapes failed;
- `--slow` slow clients (half a request line each, then nothing), connected one after the other: how
  long each connect took, the process's peak threads and RSS over the 5 s after, and how long one
  scrape takes while they are connected (the old server's threads grow until its 30 s read timeout
  reaps the first ones);
- TLS scrape cost: keep-alive scrapes over one HTTPS connection (median, p99), a new HTTPS connection
  per scrape, and keep-alive plain HTTP for reference.

    python -m bench.exporter_load [--scrapers 50] [--seconds 10] [--slow 300] [--json FILE]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.report import cell, table

__all__ = ["main"]

# Restores what the exporter's HTTP server did before issue 10, inside the "before" process only.
_BEFORE = """
import gpuobs.exporters.sidecar.server as srv
srv._Server.request_queue_size = 5
def _unbounded(self, conn, closing):
    with self._cond:
        self._idle_since[conn] = None
    return True
srv._ConnectionSlots.acquire = _unbounded
srv._Handler.disable_nagle_algorithm = False
def _apart(self, status, body, content_type="application/json", headers=None):
    self.send_response(status)
    self.send_header("Content-Type", content_type)
    self.send_header("Content-Length", str(len(body)))
    for key, value in (headers or {}).items():
        self.send_header(key, value)
    self.end_headers()
    if self.command != "HEAD":
        self.wfile.write(body)
srv._Handler._send = _apart
"""

_RUN = """
from gpuobs.exporters.sidecar.service import ExporterConfig, run_until_signal
run_until_signal(ExporterConfig(backend="sim", gpus=8, address="127.0.0.1", port={port}, web_config={web!r},
                                pod_resources_socket="none"))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _self_signed(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "tls.crt", directory / "tls.key"
    try:
        import datetime
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:  # a machine without the dev extra: the openssl command does the same
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                str(key),
                "-out",
                str(cert),
                "-days",
                "1",
                "-subj",
                "/CN=127.0.0.1",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ],
            check=True,
            capture_output=True,
        )
        return cert, key
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(private, hashes.SHA256())
    )
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert, key


class _Exporter:
    """One exporter process in `mode` ("before" or "after"), plain or TLS."""

    def __init__(self, mode: str, web_config: str | None = None) -> None:
        self.port = _free_port()
        code = (_BEFORE if mode == "before" else "") + _RUN.format(port=self.port, web=web_config)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "GPUOBS_CONFIG": os.devnull},
        )

    def wait_ready(self, get: Any) -> None:
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("exporter exited at start-up")
            try:
                get()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def threads_and_rss_mib(self) -> tuple[int, float]:
        threads, rss = 0, 0.0
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    threads = int(line.split()[1])
                elif line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) / 1024
        return threads, rss


def _scrape_new_connection(port: int, timeout: float = 60.0) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: exporter\r\nConnection: close\r\n\r\n")
        reply = bytearray()
        while chunk := s.recv(1 << 16):
            reply += chunk
    return reply.startswith(b"HTTP/1.1 200")


def _percentiles(ms: list[float]) -> dict[str, float | None]:
    if not ms:
        return {"p50_ms": None, "p99_ms": None, "max_ms": None}
    ms = sorted(ms)
    return {
        "p50_ms": statistics.median(ms),
        "p99_ms": ms[min(len(ms) - 1, int(len(ms) * 0.99))],
        "max_ms": ms[-1],
    }


def bench_scrapers(mode: str, scrapers: int, seconds: float) -> dict[str, Any]:
    """`scrapers` threads, each scraping on a new connection in a loop for `seconds`."""
    exporter = _Exporter(mode)
    try:
        exporter.wait_ready(lambda: _scrape_new_connection(exporter.port, 2))
        latencies: list[float] = []
        errors = [0]
        lock = threading.Lock()
        start = threading.Barrier(scrapers)
        stop_at = [0.0]

        def scraper() -> None:
            start.wait()
            while time.monotonic() < stop_at[0]:
                t0 = time.perf_counter()
                try:
                    ok = _scrape_new_connection(exporter.port)
                except OSError:
                    ok = False
                took = (time.perf_counter() - t0) * 1000
                with lock:
                    if ok:
                        latencies.append(took)
                    else:
                        errors[0] += 1

        stop_at[0] = time.monotonic() + seconds + 1.0
        workers = [threading.Thread(target=scraper, daemon=True) for _ in range(scrapers)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(seconds + 120)
        threads, rss = exporter.threads_and_rss_mib()
    finally:
        exporter.stop()
    return {
        "mode": mode,
        "scrapers": scrapers,
        "scrapes": len(latencies),
        "errors": errors[0],
        **_percentiles(latencies),
        "threads_after": threads,
        "rss_mib_after": rss,
    }


def bench_slow_clients(mode: str, clients: int) -> dict[str, Any]:
    """`clients` connections that send half a request line and then nothing, as a slowloris does."""
    exporter = _Exporter(mode)
    held: list[socket.socket] = []
    try:
        exporter.wait_ready(lambda: _scrape_new_connection(exporter.port, 2))
        threads0, rss0 = exporter.threads_and_rss_mib()
        refused = 0
        connecting = time.perf_counter()
        for _ in range(clients):
            try:
                s = socket.create_connection(("127.0.0.1", exporter.port), timeout=5)
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                held.append(s)
            except OSError:
                refused += 1
        connect_ms = (time.perf_counter() - connecting) * 1000 / clients
        threads, rss = 0, 0.0
        for _ in range(20):  # the old server accepts a burst slowly (SYN cookies): watch it grow
            t, r = exporter.threads_and_rss_mib()
            threads, rss = max(threads, t), max(rss, r)
            time.sleep(0.25)
        t0 = time.perf_counter()
        try:
            ok = _scrape_new_connection(exporter.port, timeout=60)
        except OSError:
            ok = False
        scrape_ms = (time.perf_counter() - t0) * 1000
    finally:
        for s in held:
            s.close()
        exporter.stop()
    return {
        "mode": mode,
        "slow_clients": clients,
        "connect_failures": refused,
        "connect_ms": connect_ms,
        "threads_before": threads0,
        "threads": threads,
        "rss_mib_before": rss0,
        "rss_mib": rss,
        "scrape_ok": ok,
        "scrape_ms": scrape_ms,
    }


def _keep_alive_ms(conn: http.client.HTTPConnection, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        body = response.read()
        times.append((time.perf_counter() - t0) * 1000)
        assert response.status == 200 and body
    return times


def bench_tls(mode: str, runs: int, workdir: Path) -> dict[str, Any]:
    """Median TLS scrape: keep-alive, new connection each; plain keep-alive for reference."""
    cert, key = _self_signed(workdir)
    web = workdir / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n")
    ctx = ssl.create_default_context(cafile=str(cert))
    tls = _Exporter(mode, str(web))
    plain = _Exporter(mode)
    try:

        def https_get() -> None:
            c = http.client.HTTPSConnection("127.0.0.1", tls.port, context=ctx, timeout=10)
            c.request("GET", "/healthz")
            c.getresponse().read()
            c.close()

        tls.wait_ready(https_get)
        plain.wait_ready(lambda: _scrape_new_connection(plain.port, 2))
        conn = http.client.HTTPSConnection("127.0.0.1", tls.port, context=ctx, timeout=30)
        _keep_alive_ms(conn, 5)
        keep_alive = _keep_alive_ms(conn, runs)
        conn.close()
        fresh = []
        for _ in range(max(10, runs // 5)):
            t0 = time.perf_counter()
            c = http.client.HTTPSConnection("127.0.0.1", tls.port, context=ctx, timeout=30)
            _keep_alive_ms(c, 1)
            c.close()
            fresh.append((time.perf_counter() - t0) * 1000)
        pconn = http.client.HTTPConnection("127.0.0.1", plain.port, timeout=30)
        _keep_alive_ms(pconn, 5)
        plain_ms = _keep_alive_ms(pconn, runs)
        pconn.close()
    finally:
        tls.stop()
        plain.stop()
    keep = sorted(keep_alive)
    return {
        "mode": mode,
        "tls_keepalive_median_ms": statistics.median(keep),
        "tls_keepalive_p99_ms": keep[min(len(keep) - 1, int(len(keep) * 0.99))],
        "tls_new_connection_median_ms": statistics.median(fresh),
        "plain_keepalive_median_ms": statistics.median(plain_ms),
    }


def _fmt(v: Any) -> str:
    return cell(v, below=100, small=".2f", large=".0f")


def _table(title: str, rows: list[dict[str, Any]], cols: list[str]) -> str:
    return table(title, rows, cols, _fmt)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapers", type=int, default=50, help="concurrent new-connection scrapers")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the scrapers run")
    parser.add_argument("--slow", type=int, default=300, help="slow clients to connect")
    parser.add_argument("--tls-runs", type=int, default=200, help="scrapes per TLS timing")
    parser.add_argument("--modes", default="before,after", help="before, after or both")
    parser.add_argument("--json", dest="json_path", help="write the figures to this file")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "load_average": os.getloadavg()[0],
        "scrapers": [bench_scrapers(m, args.scrapers, args.seconds) for m in modes],
        "slow": [bench_slow_clients(m, args.slow) for m in modes],
    }
    workdir = Path(tempfile.mkdtemp(prefix="gpuobs-bench-tls-"))
    try:
        out["tls"] = [bench_tls(m, args.tls_runs, workdir) for m in modes]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"{out['date']} on {out['machine']}, Python {out['python']}, load average {out['load_average']:.1f}"
    )
    print(
        _table(
            f"{args.scrapers} scrapers, a new connection per scrape, {args.seconds:g} s",
            out["scrapers"],
            ["mode", "scrapes", "errors", "p50_ms", "p99_ms", "max_ms", "threads_after", "rss_mib_after"],
        )
    )
    print(
        _table(
            f"{args.slow} slow clients (half a request line, then nothing)",
            out["slow"],
            [
                "mode",
                "connect_failures",
                "connect_ms",
                "threads_before",
                "threads",
                "rss_mib_before",
                "rss_mib",
                "scrape_ok",
                "scrape_ms",
            ],
        )
    )
    print(
        _table(
            "TLS scrape cost (sim, 8 GPUs)",
            out["tls"],
            [
                "mode",
                "tls_keepalive_median_ms",
                "tls_keepalive_p99_ms",
                "tls_new_connection_median_ms",
                "plain_keepalive_median_ms",
            ],
        )
    )
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
