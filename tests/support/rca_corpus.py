"""A synthetic but realistic log mix for parser speed and fuzz checks: mostly noise, some failures.

The failure lines follow the formats real tools print (kernel Xid/AER/OOM, PyTorch, NCCL, vLLM, gRPC);
the noise lines are what surrounds them in real logs (training progress, INFO lines, dmesg chatter).
"""

# ruff: noqa: E501  (real log lines and Kubernetes messages are longer than the code line limit)

from __future__ import annotations

import random

from gpuobs.names import gpu as g

__all__ = ["FAILURE_LINES", "NOISE_LINES", "fleet_openmetrics", "make_log"]

FAILURE_LINES = (
    "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s "
    "of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).",
    "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', "
    "name=<unknown>, Graphics SM Global Exception on (GPC 8, TPC 5, SM 1): Multiple Warp Errors",
    "[12345.678] pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0",
    "Memory cgroup out of memory: Killed process 4242 (python3) total-vm:80000000kB, anon-rss:31000000kB, "
    "file-rss:1000kB, shmem-rss:0kB",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of "
    "23.65 GiB of which 11.06 MiB is free. Of the allocated memory 22.90 GiB is allocated by PyTorch, and "
    "194.87 MiB is reserved by PyTorch but unallocated.",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) "
    "ran for 600060 milliseconds before timing out.",
    "hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 172.36.143.59<44206> "
    "with status=12 opcode=129 len=65536 vendor err 129 (Recv)",
    "(APIServer pid=1) ERROR 05-12 01:48:42 [api_router.py:72] vllm.v1.engine.exceptions.EngineDeadError: "
    "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    "WARNING 08-20 10:18:39 scheduler.py:1141] Sequence group 147 is preempted by PreemptionMode.RECOMPUTE mode "
    "because there is not enough KV cache space. total_num_cumulative_preemption=1",
    "Failed to initialize NVML: Driver/library version mismatch",
    "\tstatus = StatusCode.DEADLINE_EXCEEDED",
    "[ 1843.308145] NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.",
    '{"ts": "2026-11-29T10:00:00Z", "level": "error", "msg": "launch failed", "cuda_error_code": 700}',
    "[Sun Jan  5 18:37:06 2025] watchdog: BUG: soft lockup - CPU#0 stuck for 27s! [cuda-EvtHandlr:2255424]",
)

NOISE_LINES = (
    "Epoch 3:  42%|####2     | 2100/5000 [12:01<16:35,  2.91it/s, loss=1.873, v_num=7]",
    "2026-11-29 10:00:00,123 INFO worker.py:88 -- processed batch 1288 in 0.412s (tokens=32768)",
    "INFO 11-29 10:00:01 [loggers.py:123] Engine 000: Avg prompt throughput: 1234.5 tokens/s, Avg generation "
    "throughput: 456.7 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 41.2%",
    "[  12.345678] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
    "Nov 29 10:00:02 gpu-node-7 systemd[1]: Started Session 123 of user root.",
    'INFO:     10.0.0.12:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "gpu-node-7:984:1357 [4] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
    "kern  :info  : 2025-01-21T04:41:44,283302+00:00 eth0: renamed from veth1a2b3c",
    '{"ts": "2026-11-29T10:00:00Z", "level": "info", "msg": "request done", "request_id": "r-1", "ms": 412}',
    '  File "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl',
    "step=1200 lr=3.0e-4 grad_norm=0.91 tokens_per_s=51234.1 mem_alloc_gb=61.2",
    "[2026-11-29 10:00:03] [info] health check ok (latency 3 ms)",
)


def make_log(lines: int, failure_ratio: float = 0.02, seed: int = 0) -> str:
    """`lines` log lines, `failure_ratio` of them failure lines, the rest noise (deterministic)."""
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        pool = FAILURE_LINES if rng.random() < failure_ratio else NOISE_LINES
        out.append(pool[rng.randrange(len(pool))])
    return "\n".join(out) + "\n"


def fleet_openmetrics(end: float, gpus: int = 64, native: bool = True) -> str:
    """`gpus` GPUs x 1 hour at 30 s ending at `end`, as OpenMetrics for `promtool tsdb create-blocks-from`.

    GPU 7 overheats in the last 10 minutes, GPU 13 logs Xid 79 at 40 min, GPU 21 is power-throttled.
    """
    step, points = 30, 120
    times = [end - (points - 1 - i) * step for i in range(points)]
    out: list[str] = []

    def labels(i: int) -> str:
        if native:
            return f'gpu="{i}",uuid="GPU-{i:08d}",host="node-{i // 8}",model_name="NVIDIA H200"'
        return f'gpu="{i}",UUID="GPU-{i:08d}",hostname="node-{i // 8}",modelName="NVIDIA H200"'

    temp = g.GPU_TEMPERATURE.native if native else "DCGM_FI_DEV_GPU_TEMP"
    out.append(f"# TYPE {temp} gauge")
    for i in range(gpus):
        for k, t in enumerate(times):
            v = 92.0 if (i == 7 and k >= points - 20) else 55.0 + (i % 5)
            out.append(f"{temp}{{{labels(i)}}} {v} {t:.3f}")
    power = g.POWER_USAGE.native if native else "DCGM_FI_DEV_POWER_USAGE"
    out.append(f"# TYPE {power} gauge")
    for i in range(gpus):
        for t in times:
            out.append(f"{power}{{{labels(i)}}} {400.0 + i} {t:.3f}")
    if native:
        fam = g.XID_ERRORS.native
        out.append(f"# TYPE {fam} counter")
        for i in (13, 14):
            for k, t in enumerate(times):
                v = 1.0 if (i == 13 and k >= 80) else 0.0
                out.append(f'{fam}_total{{{labels(i)},code="79"}} {v} {t:.3f}')
        fam = g.CLOCK_EVENT_ACTIVE.native
        out.append(f"# TYPE {fam} gauge")
        for i in range(gpus):
            for t in times:
                out.append(f'{fam}{{{labels(i)},reason="sw_power_cap"}} {1.0 if i == 21 else 0.0} {t:.3f}')
    else:
        fam = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
        out.append(f"# TYPE {fam} gauge")
        for i in range(gpus):
            for t in times:
                out.append(f"{fam}{{{labels(i)}}} {4.0 if i == 21 else 0.0} {t:.3f}")
    out.append("# EOF")
    return "\n".join(out) + "\n"
