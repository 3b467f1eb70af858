"""Fuzz of the readers of issue 11 and of the text tier: 10,000 random and mutated inputs, no crash.

A seeded loop (fast and reproducible, unlike a hypothesis run of this size) mutates real excerpts of the
tune split and tool-output templates: lines dropped, repeated, swapped, cut, wrapped at a random width,
glued to progress bars, wrapped in compose prefixes, box borders, paste numbers and quote markers, with
random Unicode spliced in. Every input goes through every reader (the tool readers and the readers of what
prose tells, rca/parsers/told.py), the wrappers, the memory trend and the text tier; every 25th through the whole document pipeline, the line parsers in strict mode and the check of what the semantic tier may read.
Every record must be serialisable, of a known key, with a finite time.
"""

# ruff: noqa: E501  (real log lines and tool output are longer than the code line limit)

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from gpuobs.errors import InputError
from gpuobs.evidence import Evidence
from gpuobs.names import all_specs
from gpuobs.rca import keys
from gpuobs.rca.anomalies import ANOMALY_PREFIX
from gpuobs.rca.parsers.containers import parse_container_setup
from gpuobs.rca.parsers.describe import parse_kubectl_text
from gpuobs.rca.parsers.document import parse_document
from gpuobs.rca.parsers.lines import parse_lines
from gpuobs.rca.parsers.lspci import parse_lspci
from gpuobs.rca.parsers.nvsmi_text import parse_nvsmi_text
from gpuobs.rca.parsers.pyrepr import parse_pyrepr
from gpuobs.rca.parsers.text import default_phrasebook, match_text
from gpuobs.rca.parsers.told import told_records
from gpuobs.rca.parsers.trend import memory_trend
from gpuobs.rca.parsers.wrappers import unwrap
from gpuobs.rca.readers.files import machine_written

TUNE = Path(__file__).resolve().parent / "real_corpus" / "tune"
INPUTS = 10_000
FULL_EVERY = 25
_KEYS = {v for k, v in vars(keys).items() if k.isupper() and isinstance(v, str)} | {
    s.native for s in all_specs()
}
TEMPLATES = [
    "    State:          Waiting",
    "      Reason:       CrashLoopBackOff",
    "    Last State:     Terminated",
    "      Exit Code:    137",
    "  Warning  FailedScheduling  3m (x4 over 9m)  default-scheduler  0/2 nodes: 2 Insufficient nvidia.com/gpu.",
    "Events:",
    "  Type     Reason   Age   From   Message",
    "NAME   READY   STATUS      RESTARTS   AGE",
    "pod-1  0/1     OOMKilled   3          5m",
    "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:1B:00.0 Off |                    0 |",
    "| N/A   41C    P0            120W /  700W |   4000MiB /  81559MiB |     37%      Default |",
    "Tue Nov 24 10:00:00 2026",
    "    Clocks Event Reasons",
    "        HW Thermal Slowdown           : Active",
    "40:01.1 PCI bridge: AMD Starship/Matisse GPP Bridge",
    "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+",
    "\t\tLnkSta:\tSpeed 8GT/s (downgraded), Width x8 (downgraded)",
    "{'active_size': 0, 'address': 1396, 'blocks': [{'size': 116, 'state': 'inactive'}],",
    " 'blocks': [{'size': 16, 'state': 'active_allocated'}, {'state': 'inactive', 'size': 9}],",
    "{'num_alloc_retries': 7, 'reserved_bytes.all.current': 0, 'inactive_split_bytes.all.current': 4}",
    "$ sudo docker run -v /a:/b -p 1:2 img:1 python x.py",
    "c 195:* m",
    "c 1:5 rwm",
    'open("/dev/nvidiactl", O_RDWR) = -1 EPERM (Operation not permitted)',
    "step 3 memory: 4200 MB loss 1.2",
    "Epoch 1:  6%|██  | 32/500 [6:28<94:39, 1.37it/s, loss=2.6][E ProcessGroupNCCL.cpp:458] Watchdog caught",
    "Last error:",
    "srun: error: node12: task 3: Killed",
    "slurmstepd: error: Detected 2 oom-kill event(s) in StepId=1.0",
    "memory: usage 131072kB, limit 131072kB, failcnt 15691",
    "Memory cgroup stats for /kubepods/burstable/pod45dbec92-0481-4b70-b999-158b7cf2f909:",
    "(ServeReplica:x pid=1) WARNING Request dropped due to backpressure (num_queued_requests=1, max_queued_requests=1)",
    "[n1:1:0:2] Caught signal 11 (Segmentation fault: address not mapped)",
    " 3  /opt/nccl/lib/libnccl.so(+0x120057) [0x7ff1]",
    "Kernel panic - not syncing: Fatal hardware error!",
    "Killed",
]
WRAPPERS = ["svc-1  | ", "│ ", "> ", "[{n}] ", "[rank0]:", "\t", "kern  :err   : "]


def _seeds() -> list[str]:
    lines = [line for p in sorted(TUNE.glob("*/excerpt.log")) for line in p.read_text().splitlines()]
    return lines + TEMPLATES


def _mutate(rng: random.Random, seeds: list[str]) -> list[str]:
    lines = [rng.choice(seeds) for _ in range(rng.randint(1, 12))]
    for _ in range(rng.randint(0, 6)):
        op = rng.randrange(9)
        i = rng.randrange(len(lines))
        line = lines[i]
        if op == 0 and line:
            cut = rng.randrange(len(line))
            lines[i] = line[:cut]
        elif op == 1:
            lines.insert(i, line)
        elif op == 2 and len(lines) > 1:
            del lines[i]
        elif op == 3 and line:
            pos = rng.randrange(len(line))
            noise = "".join(
                chr(rng.choice((rng.randrange(32, 127), rng.randrange(0x80, 0x2FFF)))) for _ in range(3)
            )
            lines[i] = line[:pos] + noise + line[pos + 1 :]
        elif op == 4:
            width = rng.randint(5, 90)
            lines[i : i + 1] = [line[k : k + width] for k in range(0, max(1, len(line)), width)] or [""]
        elif op == 5:
            lines[i] = rng.choice(WRAPPERS).format(n=i + 100) + line
        elif op == 6:
            lines[i] = "  4%|▍  | 4/100 [00:01<00:30, 3.1it/s]\r" + line
        elif op == 7:
            lines[i] = line.replace(" ", rng.choice(("  ", "\t", "\xa0", "")))
        else:
            lines[i] = "".join(
                rng.choice("{}[]()|'\":=,-+*/\\ \u2019aZ09") for _ in range(rng.randint(0, 60))
            )
    return lines


def _check(records: list[Evidence]) -> None:
    for ev in records:
        assert ev.key in _KEYS or ev.key.startswith(ANOMALY_PREFIX), ev.key
        assert ev.time is None or math.isfinite(ev.time)
        json.dumps(ev.to_dict(), default=str)
        assert Evidence.from_dict(ev.to_dict()).tier is ev.tier


def test_readers_and_text_tier_never_crash_on_10k_inputs() -> None:
    rng = random.Random(11)
    seeds = _seeds()
    book = default_phrasebook()
    records = 0
    for n in range(INPUTS):
        lines = _mutate(rng, seeds)
        clean = unwrap(lines).lines
        assert len(clean) == len(lines)
        for reader in (
            parse_kubectl_text,
            parse_nvsmi_text,
            parse_lspci,
            parse_pyrepr,
            parse_container_setup,
        ):
            found, used = reader(clean, "fuzz")
            assert all(0 <= i < len(clean) for i in used)
            _check(found)
            records += len(found)
        trend = memory_trend(clean, source="fuzz")
        worded = match_text(clean, book, source="fuzz")
        told = told_records(clean, "fuzz")  # the readers of figures and behaviours told in prose
        _check([*trend, *worded, *told])
        records += len(told)
        assert all(0.0 < float(ev.attrs["score"]) <= 1.0 for ev in worded)
        records += len(trend) + len(worded)
        if n % FULL_EVERY == 0:
            _check(parse_lines(clean, source="fuzz", year=2026, strict=True))
            _check(_document_or_refusal("\n".join(lines)))
            # what the semantic tier may read: words are never taken for a machine's document
            text = "\n".join(lines)
            if not text.lstrip().startswith(("{", "[", "#")):
                assert not machine_written(text), text[:300]
    assert records > 1000  # the mutations keep enough real structure to exercise the readers


def _document_or_refusal(text: str) -> list[Evidence]:
    """parse_document's records; a text that claims to be /metrics from its first line and gives no metric
    is refused with InputError, the clear error the CLI prints (any other exception is a crash)."""
    try:
        return parse_document("fuzz", text)
    except InputError as exc:
        assert "not valid Prometheus exposition text" in str(exc)
        assert text.lstrip().startswith(("# HELP ", "# TYPE "))
        return []


def test_the_machine_document_check_never_crashes_on_json_shaped_inputs() -> None:
    """JSON and JSON lines cut, nested past the recursion limit and spliced with prose: a verdict, no crash."""
    rng = random.Random(12)
    pieces = [
        '{"ts": "2026-11-29T22:52:48Z", "level": "info", "msg": "request finished"}',
        '{"kind": "PodList", "items": [{"metadata": {"name": "vllm-0"}}]}',
        '{"resourceSpans": []}',
        "[" * 5000 + "]" * 5000,
        "{" * 3000,
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "# TYPE vllm:num_requests_waiting gauge",
        "",
    ]
    verdicts = set()
    for _ in range(2000):
        lines = [rng.choice(pieces) for _ in range(rng.randint(1, 12))]
        text = "\n".join(line[: rng.randint(0, len(line))] if rng.random() < 0.3 else line for line in lines)
        verdicts.add(machine_written(text))
    assert verdicts == {True, False}
