"""Readers of tool output pasted into incidents, line wrappers and continuation blocks (issue 11 item 1).

Each reader gets text shaped as the tool prints it (nvidia-smi tables and `-q` sections, `lspci -vvv`,
`kubectl describe pod` / `get pods`, pprint'ed allocator dumps, container set-up, memory series,
compose prefixes, numbered pastes, glued progress bars, wrapped messages) and must give the fact a
signature reads, with the line it came from; healthy tool output must give no finding.
"""

# ruff: noqa: E501  (real log lines and tool output are longer than the code line limit)

from __future__ import annotations

from gpuobs.evidence import EvidenceKind, EvidenceTier
from gpuobs.names import gpu as g
from gpuobs.rca import keys
from gpuobs.rca.anomalies import ANOMALY_PREFIX
from gpuobs.rca.parsers.blocks import block_around, is_continuation, joined
from gpuobs.rca.parsers.containers import parse_container_setup
from gpuobs.rca.parsers.describe import parse_kubectl_text
from gpuobs.rca.parsers.document import parse_document
from gpuobs.rca.parsers.lspci import parse_lspci
from gpuobs.rca.parsers.nvsmi_text import parse_nvsmi_text
from gpuobs.rca.parsers.pyrepr import parse_pyrepr
from gpuobs.rca.parsers.text import match_text
from gpuobs.rca.parsers.trend import memory_trend
from gpuobs.rca.parsers.wrappers import unwrap

DESCRIBE = """\
Name:         vllm-0
Namespace:    serving
Node:         gpu-node-3/10.0.4.17
Containers:
  vllm:
    Container ID:  containerd://4f1c
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
    Ready:          False
    Restart Count:  6
Events:
  Type     Reason            Age                From               Message
  ----     ------            ----               ----               -------
  Warning  FailedScheduling  3m (x4 over 9m)    default-scheduler  0/2 nodes are available: 2 Insufficient nvidia.com/gpu.
  Warning  BackOff           12s (x20 over 5m)  kubelet            Back-off restarting failed container vllm in pod vllm-0
"""

SMI_TABLE = """\
Tue Nov 24 10:{minute:02d}:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:1B:00.0 Off |                    0 |
| N/A   41C    P0            120W /  700W |   {used}MiB /  81559MiB |     37%      Default |
+-----------------------------------------+------------------------+----------------------+
"""


def _keys(records: list) -> list[str]:  # type: ignore[type-arg]
    return [r.key for r in records]


def test_kubectl_describe_gives_the_records_of_the_json_objects() -> None:
    records, used = parse_kubectl_text(DESCRIBE.splitlines(), "describe.txt")
    statuses = {(r.value, r.attrs["state"]) for r in records if r.key == keys.K8S_POD_STATUS}
    assert statuses == {("CrashLoopBackOff", "waiting"), ("OOMKilled", "last_terminated")}
    oom = next(r for r in records if r.value == "OOMKilled")
    assert oom.attrs["exit_code"] == 137 and oom.attrs["line"] == 9
    assert (
        oom.entity.pod == "vllm-0" and oom.entity.namespace == "serving" and oom.entity.host == "gpu-node-3"
    )
    assert oom.entity.container == "vllm"
    sched = next(r for r in records if r.value == "FailedScheduling")
    assert sched.attrs["count"] == 4 and sched.attrs["insufficient"] == ["nvidia.com/gpu"]
    assert 16 in used  # the event row is tool output for the text tier
    report = parse_document("describe.txt", DESCRIBE)
    assert keys.K8S_POD_STATUS in _keys(report)


NODE_RESOURCES = """Capacity:
  cpu:                    256
  nvidia.com/gpu:         0
{mig}  pods:                   110
Allocatable:
  cpu:                    255
  nvidia.com/gpu:         0
{mig}"""
MIG_SLICES = "  nvidia.com/mig-1g.10gb: 14\n  nvidia.com/mig-3g.40gb: 4\n"


def test_a_node_without_gpus_is_no_gpu_but_one_split_into_mig_slices_is_not() -> None:
    """`nvidia.com/gpu: 0` is the device plugin registering no GPU, unless the node offers MIG slices instead
    (the `mixed` strategy lists a fully split GPU only as `nvidia.com/mig-<profile>`)."""
    plain, used = parse_kubectl_text(NODE_RESOURCES.format(mig="").splitlines())
    assert [(r.key, r.value, r.attrs["line"]) for r in plain] == [(keys.DRIVER_ERROR, "no_cuda_gpus", 3)]
    split, used = parse_kubectl_text(NODE_RESOURCES.format(mig=MIG_SLICES).splitlines())
    assert split == [] and {2, 3, 4} <= used
    no_slices = MIG_SLICES.replace(": 14", ": 0").replace(": 4", ": 0")
    emptied, _ = parse_kubectl_text(NODE_RESOURCES.format(mig=no_slices).splitlines())
    assert [r.value for r in emptied] == ["no_cuda_gpus"]
    # two nodes described one after the other: the split one's slices do not excuse the other's missing GPUs
    two = "Name: dgx-1\n" + NODE_RESOURCES.format(mig=MIG_SLICES) + "Name: dgx-2\n" + NODE_RESOURCES.format(mig="")
    both, _ = parse_kubectl_text(two.splitlines())
    assert [(r.value, r.entity.host) for r in both] == [("no_cuda_gpus", "dgx-2")]


NODE_WITHOUT_GPU = """Name:               gpu-node-2
Capacity:
  cpu:                12
  ephemeral-storage:  959863856Ki
  hugepages-2Mi:      0
  memory:             16325228Ki
  pods:               110
{extra}Allocatable:
  cpu:                12
  memory:             16325228Ki
  pods:               110
{extra}System Info:
  Kernel Version:     5.11.0-43-generic
"""


def test_a_node_whose_resources_name_no_gpu_is_no_gpu() -> None:
    """A node's Capacity / Allocatable blocks that list cpu, memory and pods and no GPU resource at all are the
    same finding as `nvidia.com/gpu: 0`: no device plugin registered a GPU there (k8s-device-plugin #285,
    #834 paste such a block). A GPU of any vendor, or MIG slices, listed there is a node with GPUs."""
    bare = NODE_WITHOUT_GPU.format(extra="")
    records = parse_document("node.txt", bare, None)
    nogpu = [r for r in records if r.key == keys.DRIVER_ERROR]
    assert [(r.value, r.entity.host, r.attrs["line"]) for r in nogpu] == [("no_cuda_gpus", "gpu-node-2", 11)]
    for listed in ("  nvidia.com/gpu:     8\n", "  amd.com/gpu:        8\n", "  nvidia.com/mig-1g.10gb: 7\n"):
        records, _ = parse_kubectl_text(NODE_WITHOUT_GPU.format(extra=listed).splitlines())
        assert records == [], listed
    # a block cut before its pods line is not a whole list of the node's resources
    cut = "Capacity:\n  cpu:                12\n  memory:             16325228Ki\n"
    assert parse_kubectl_text(cut.splitlines())[0] == []


def test_a_queue_limit_talked_about_is_no_request_refused() -> None:
    """Ray Serve's refusal names its limit beside the queue's length; the limit's name in a feature request
    or the docs ("Add a `max_queued_requests` parameter that will start dropping requests") refuses nothing."""
    refused = (
        "(ServeReplica:app pid=9) WARNING 2025-04-25 23:33:15,376 app -- Request dropped due to backpressure "
        "(num_queued_requests=1, max_queued_requests=1).\n"
    )
    records = [r for r in parse_document("serve.log", refused, None) if r.key == keys.REQUEST_REJECTED]
    assert [(r.value, r.attrs["queued"], r.attrs["max_queued"]) for r in records] == [("queue_full", 1, 1)]
    asked = (
        "# [serve] Add active load shedding via `max_queued_requests`\n"
        "Add a `max_queued_requests` parameter that will start dropping requests when too many are queued.\n"
        "Set max_queued_requests=16 in the deployment options.\n"
    )
    assert not [r for r in parse_document("issue.md", asked, None) if r.key == keys.REQUEST_REJECTED]


def test_kubectl_get_pods_status_column() -> None:
    text = "NAME      READY   STATUS             RESTARTS   AGE\nvllm-0    0/1     OOMKilled          3          5m\nweb-1     1/1     Running            0          9d\n"
    records, _ = parse_kubectl_text(text.splitlines())
    assert [(r.value, r.entity.pod) for r in records] == [("OOMKilled", "vllm-0")]


def test_a_pod_row_without_its_header_is_read_only_when_it_is_kubectls_own() -> None:
    """A row of `kubectl get pods` pasted alone is read when every cell is kubectl's, down to the AGE cell
    (and `-o wide`'s IP, node and gates after it), and its STATUS is a finding; a running pod's row, or a sentence that happens to hold the words, is not."""
    rows = (
        "riva-riva-api-768b77d764-74k4m   0/2     OutOfnvidia.com/gpu   0          5m55s\n"
        "serving   vllm-0   0/1   CrashLoopBackOff   5 (2m ago)   12m\n"
        "web-1     1/1     Running   0   9d\n"
        "gpu-operator   nvidia-driver-daemonset-5m2xq   0/1   Init:CrashLoopBackOff   9   30m   10.0.3.7   gpu-node-1"
        "   <none>   <none>\n"
    )
    records, _ = parse_kubectl_text(rows.splitlines())
    assert [(r.value, r.entity.pod, r.entity.namespace, r.attrs["line"]) for r in records] == [
        ("OutOfnvidia.com/gpu", "riva-riva-api-768b77d764-74k4m", None, 1),
        ("CrashLoopBackOff", "vllm-0", "serving", 2),
        ("CrashLoopBackOff", "nvidia-driver-daemonset-5m2xq", "gpu-operator", 4),  # `-o wide`, an init loop
    ]
    told = "the pod 0/1 CrashLoopBackOff 5 times in a row since yesterday\n"
    assert parse_kubectl_text(told.splitlines())[0] == []


def test_nvidia_smi_tables_are_readings_and_a_growing_series() -> None:
    text = "".join(SMI_TABLE.format(minute=m, used=20000 + 6000 * m) for m in range(7))
    records, used = parse_nvsmi_text(text.splitlines(), "smi.txt")
    mem = [r for r in records if r.key == g.MEMORY_USED.native]
    assert len(mem) == 7 and all(r.kind is EvidenceKind.STATE for r in mem)
    assert mem[0].value == 20000 * 2**20 and mem[0].entity.gpu_index == 0
    assert mem[-1].time is not None and mem[-1].time - (mem[0].time or 0) == 6 * 60
    temp = next(r for r in records if r.key == g.GPU_TEMPERATURE.native)
    assert temp.value == 41.0 and temp.entity.pci_bus_id == "0000:1b:00"
    assert 8 in used  # table rows are tool output
    from gpuobs.rca.anomalies import memory_growth

    assert [a.key for a in memory_growth(records)] == [ANOMALY_PREFIX + "memory_growth"]


def test_nvidia_smi_clock_reasons_without_the_report_header() -> None:
    section = (
        "    Clocks Event Reasons\n        Idle                              : Not Active\n"
        "        SW Power Cap                      : Not Active\n        HW Slowdown                       : Active\n"
        "            HW Thermal Slowdown           : Active\n        SW Thermal Slowdown               : Not Active\n"
    )
    records, used = parse_nvsmi_text(section.splitlines())
    assert sorted(r.attrs["labels"]["reason"] for r in records) == ["hw_slowdown", "hw_thermal_slowdown"]
    assert used == {0, 1, 2, 3, 4, 5}
    assert parse_nvsmi_text(section.replace(": Active", ": Not Active").splitlines())[0] == []


def test_lspci_acs_and_downgraded_links() -> None:
    text = (
        "40:01.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge\n"
        "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"
        "41:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 80GB]\n"
        "\t\tLnkSta:\tSpeed 8GT/s (downgraded), Width x8 (downgraded)\n"
        "42:00.0 3D controller: NVIDIA Corporation GA100\n"
        "\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-\n"
        "\t\tLnkSta:\tSpeed 16GT/s, Width x16\n"
        "43:00.0 VGA compatible controller: NVIDIA Corporation GA102 [GeForce RTX 3090]\n"
        "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16\n"  # idle: the link rests at PCIe 1.0 speed
        "44:00.0 3D controller: NVIDIA Corporation GA100\n"
        "\t\tLnkSta:\tSpeed 8GT/s (downgraded), Width x16\n"  # a Gen4 GPU held at Gen3 by its riser
        "45:00.0 3D controller: NVIDIA Corporation GA100\n"
        "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x4 (downgraded)\n"
    )
    records, used = parse_lspci(text.splitlines())
    acs = [r for r in records if r.key == keys.PCIE_ACS_ENABLED]
    assert [(r.value, r.attrs["flags"]) for r in acs] == [
        ("40:01.1", "SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+")
    ]
    link = [r for r in records if r.key == keys.PCIE_LINK_DEGRADED]
    assert [(r.value, r.attrs["width"]) for r in link] == [("41:00.0", "x8"), ("44:00.0", "x16"), ("45:00.0", "x4")]
    assert used == {1, 3, 5, 6, 8, 10, 12}


def test_pprint_allocator_snapshot_cut_off_mid_structure() -> None:
    text = """{'active_size': 0,
 'address': 139624890499072,
 'allocated_size': 0,
 'blocks': [{'size': 11643387904, 'state': 'inactive'}],
 'segment_type': 'large',
 'total_size': 11643387904}

{'active_size': 499214336,
 'address': 139624890499072,
 'blocks': [{'size': 16515072, 'state': 'active_allocated'},
            {'size': 18191360, 'state': 'inactive'},
            {'size': 11400192, 'state': 'active_alloc"""
    records, _ = parse_pyrepr(text.splitlines())
    (snap,) = records
    assert snap.key == keys.ALLOCATOR_SNAPSHOT
    assert snap.attrs["segments"] == 2 and snap.attrs["split_segments"] == 1
    assert snap.attrs["resplit_segments"] == 1 and snap.attrs["free_in_split_bytes"] == 18191360
    stats = "{'num_alloc_retries': 7, 'reserved_bytes.all.current': 1000, 'inactive_split_bytes.all.current': 400}"
    (mem,) = parse_pyrepr([stats])[0]
    assert mem.attrs["alloc_retries"] == 7 and mem.attrs["inactive_split_ratio"] == 0.4
    healthy = "{'loss': 0.92, 'learning_rate': 6.5e-06, 'epoch': 0.03}"
    assert parse_pyrepr([healthy])[0] == []


def test_container_set_up() -> None:
    lines = [
        "$ sudo docker run -v /usr/lib64/nvidia:/usr/local/nvidia/lib -p 8888:8888 my/image:1 python app.py",
        "$ docker run --gpus all --rm nvidia/cuda:12.4.1-base nvidia-smi",
        "$ podman run --device nvidia.com/gpu=all img",
        "c 1:5 rwm",
        "c 195:* m",
        "c 136:* rwm",
        'open("/dev/nvidiactl", O_RDWR)          = -1 EPERM (Operation not permitted)',
    ]
    records, _ = parse_container_setup(lines)
    without = [r for r in records if r.key == keys.CONTAINER_WITHOUT_GPU]
    assert [(r.value, r.attrs["line"]) for r in without] == [("my/image:1", 1)]
    lost = [r for r in records if r.key == keys.CONTAINER_DEVICE_ACCESS]
    assert sorted(r.attrs["rule"] for r in lost) == ["EPERM", "c 195:* m"]
    granted = ["c 1:5 rwm", "c 195:* rwm", "c 136:* rwm"]
    assert parse_container_setup(granted)[0] == []


def test_memory_trend_needs_a_steady_rise() -> None:
    rising = [f"step {i} loss 1.{i} memory: {3000 + 400 * i} MB" for i in range(8)]
    (growth,) = memory_trend(rising, source="train.log")
    assert growth.key == ANOMALY_PREFIX + "memory_growth" and growth.attrs["line"] == 1
    assert growth.attrs["start"] == 3000 * 2**20 and growth.attrs["end"] == 5800 * 2**20
    flat = [f"step {i} memory: {3000 + (i % 2) * 50} MB" for i in range(8)]
    assert memory_trend(flat) == []
    few = rising[:3]
    assert memory_trend(few) == []


def test_unwrap_peels_compose_borders_numbers_and_progress_bars() -> None:
    compose = [
        "Attaching to api-1",
        "api-1  | Traceback (most recent call last):",
        "api-1  | RuntimeError: boom",
    ]
    out = unwrap(compose)
    assert out.lines == ["Attaching to api-1", "Traceback (most recent call last):", "RuntimeError: boom"]
    assert out.services == {1: "api-1", 2: "api-1"}
    numbered = ["[1824] frame #2: a", "[1825] frame #3: b", "[1826] some text"]
    assert unwrap(numbered).lines == ["frame #2: a", "frame #3: b", "some text"]
    glued = (
        "Epoch 0:   6%|██      | 3204/50015 [6:28:43<94:39:17,  1.37it/s, loss=2.6][E ProcessGroupNCCL.cpp:458] "
        "[Rank 0] Watchdog caught collective operation timeout"
    )
    (line,) = unwrap([glued]).lines
    assert line.startswith("[E ProcessGroupNCCL.cpp:458]")
    bar = "Epoch 3:  42%|####2     | 2100/5000 [12:01<16:35,  2.91it/s, loss=1.873]"
    assert unwrap([bar]).lines == [bar]
    boxed = ["│ RuntimeError: CUDA error: an illegal memory access was encountered │"]
    assert unwrap(boxed).lines == ["RuntimeError: CUDA error: an illegal memory access was encountered"]


def test_continuation_blocks_join_wrapped_messages() -> None:
    lines = [
        "ncclInternalError: Internal check failed.",
        "Last error:",
        "Net : Connection closed by remote peer host<43236>",
        "Traceback (most recent call last):",
        '  File "train.py", line 5, in <module>',
    ]
    assert block_around(lines, 2) == (1, 2) and block_around(lines, 0) == (0, 0)
    assert not is_continuation(lines[3], lines[4])  # a traceback frame is read by the traceback parser
    cut = "x" * 70 + " use `ray log"
    assert joined([cut, "s raylet.out`"], [cut, "s raylet.out`"]).endswith("`ray logs raylet.out`")
    records = parse_document("nccl.log", "\n".join(lines))
    network = [r for r in records if r.key == keys.NCCL_ERROR and r.value == "network"]
    assert network and network[0].attrs["line"] == 2 and network[0].attrs["joined_lines"] == 2


def test_document_keeps_tool_lines_from_the_text_tier() -> None:
    healthy = (
        "    Clocks Throttle Reasons\n        SW Power Cap                : Not Active\n"
        "        HW Slowdown                 : Not Active\n        SW Thermal Slowdown         : Not Active\n"
    )
    assert parse_document("q.txt", healthy) == []
    table = "".join(SMI_TABLE.format(minute=1, used=2000))
    assert all(r.tier is EvidenceTier.EXACT for r in parse_document("smi.txt", table))


def test_nvidia_smi_q_fragments_without_the_header() -> None:
    """Zero counters name conditions without reporting them; a pending remap is read like a full report."""
    healthy = (
        "    Retired Pages\n        Single Bit ECC              : 0\n        Double Bit ECC              : 0\n"
        "        Pending Page Blacklist      : No\n"
    )
    (reading,) = parse_document("q.txt", healthy)
    assert reading.key == keys.RETIRED_PAGES and reading.value == 0.0 and reading.tier is EvidenceTier.EXACT
    pending = (
        "GPU 00000000:3B:00.0\n    Remapped Rows\n        Correctable Error           : 0\n"
        "        Uncorrectable Error         : 2\n        Pending                     : Yes\n"
    )
    records = parse_document("q.txt", pending)
    remap = [r for r in records if r.key == g.ROW_REMAP_PENDING.native]
    assert [(r.value, r.entity.pci_bus_id) for r in remap] == [(1.0, "0000:3b:00")]
    assert all(r.tier is EvidenceTier.EXACT for r in records)
    # a report of uncorrectable errors bound to a GPU is its DBE count, an exact fact (the text tier may read
    # the words beside it, as its fitted weights say)
    worded = parse_document("notes.txt", "we saw double bit ECC errors on GPU 3 and the job died")
    assert [(r.key, r.value, r.entity.gpu_index) for r in worded if r.tier is EvidenceTier.EXACT] == [
        (g.ECC_DBE_VOLATILE.native, 1.0, 3)
    ]


def test_a_crash_in_an_other_kernel_is_not_placed_in_nccl_by_an_environment_name() -> None:
    """NCCL's API symbols are camel case after the prefix (nccl.h): NCCL_DEBUG on the line of a segfault in
    another kernel does not make it NCCL's crash."""
    told = parse_document("issue.log", "Every rank segfaults inside ncclCommInitRank on the V100 nodes.\n")
    assert [(e.key, e.value) for e in told if e.key == keys.NCCL_ERROR] == [(keys.NCCL_ERROR, "segfault")]
    other = parse_document(
        "issue.log", "The extension segfaults in fused_adam_kernel even with NCCL_DEBUG=WARN set.\n"
    )
    assert [e for e in other if e.key == keys.NCCL_ERROR] == []


def test_a_message_size_limit_is_not_the_server_thread_pool() -> None:
    """gRPC answers RESOURCE_EXHAUSTED for several limits; only "Server Threadpool Exhausted" (server_cc.cc)
    is the sync server's thread pool."""
    pool = match_text(["RPC failed: status 8 (RESOURCE_EXHAUSTED): Server Threadpool Exhausted"])
    assert [e.value for e in pool] == ["grpc_threadpool_exhaustion"]
    size = match_text(["grpc: RESOURCE_EXHAUSTED: Received message larger than max (5242880 vs. 4194304)"])
    assert "grpc_threadpool_exhaustion" not in [e.value for e in size]


def test_a_crash_looping_alert_is_the_pod_status_it_tells() -> None:
    """kube-prometheus' KubePodCrashLooping description names namespace, pod, container and reason: it is
    the pod's status record (the exporter's own pod then names the exporter); a waiting reason that is no
    failure gives no record."""
    looping = 'Pod monitoring/dcgm-exporter-7xk2p (dcgm-exporter) is in waiting state (reason: "CrashLoopBackOff").'
    records, used = parse_kubectl_text([looping], "alert.txt")
    assert [(r.key, r.value, r.entity.pod, r.entity.container) for r in records] == [
        (keys.K8S_POD_STATUS, "CrashLoopBackOff", "dcgm-exporter-7xk2p", "dcgm-exporter")
    ]
    assert records[0].entity.namespace == "monitoring" and not used
    creating = 'Pod serving/vllm-0 (vllm) is in waiting state (reason: "ContainerCreating").'
    assert parse_kubectl_text([creating], "alert.txt")[0] == []


def test_flyte_task_container_exit_137_is_a_container_kill_and_exit_1_is_not() -> None:
    """Flyte reports a task pod's terminated container as "[name] terminated with exit code (N)": 137 is
    128 + SIGKILL in a container; another code is the task's own failure."""
    killed = parse_document("flyte.log", "[a1b2-n0-0] terminated with exit code (137). Reason [Error]. Message: \n")
    kills = [r for r in killed if r.key == keys.PROCESS_KILLED]
    assert [(r.value, r.attrs.get("context")) for r in kills] == [("SIGKILL", "container")]
    failed = parse_document("flyte.log", "[a1b2-n0-0] terminated with exit code (1). Reason [Error]. Message: \n")
    assert not [r for r in failed if r.key == keys.PROCESS_KILLED]
