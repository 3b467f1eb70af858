"""Evidence keys and value vocabularies shared by the RCA parsers and the signature engine (RCA_KEYS.md).

Parsers (gpuobs.rca.parsers) produce `Evidence` records whose `key` is one of these constants;
signatures only ever compare against these names, never spell a key again. Metric evidence uses the
native metric name from gpuobs.names as its key; span evidence uses the span name.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ALLOCATOR_SNAPSHOT",
    "ALL_LOG_KEYS",
    "CONTAINER_DEVICE_ACCESS",
    "CONTAINER_WITHOUT_GPU",
    "CUDA_ERROR",
    "CUDA_OOM",
    "DEVICE_REPORT_KEYS",
    "DRIVER_CLASSES",
    "DRIVER_ERROR",
    "EXPORTER_ERROR",
    "FABRIC_MANAGER_ERROR",
    "FILESYSTEM_READONLY",
    "FILE_MAX_REACHED",
    "GPU_FALLEN_OFF_BUS",
    "GPU_RESET_REQUIRED",
    "GRPC_STATUS",
    "HOST_OOM_KILL",
    "HUNG_TASK",
    "INFINIBAND_ERROR",
    "K8S_EVENT",
    "K8S_POD_STATUS",
    "KERNEL_PANIC",
    "KV_CACHE_INSUFFICIENT",
    "LINK_FLAP",
    "LOG_LINE",
    "MACHINE_CHECK",
    "MODEL_LOAD",
    "NCCL_ERROR",
    "NCCL_ERROR_CLASSES",
    "NCCL_TIMEOUT",
    "NVLINK_ERROR",
    "NVML_ERROR",
    "NVML_ERROR_CLASSES",
    "PCIE_ACS_ENABLED",
    "PCIE_AER",
    "PCIE_AER_SEVERITIES",
    "PCIE_LINK_DEGRADED",
    "PEERMEM_ERROR",
    "PROCESS_KILLED",
    "PROSE_MATCH",
    "PYTHON_EXCEPTION",
    "RAY_OOM_KILL",
    "REQUEST_REJECTED",
    "RETIRED_PAGES",
    "SEMANTIC_MATCH",
    "SEMANTIC_READERS",
    "SOFT_LOCKUP",
    "SXID",
    "TENSORRT_ENGINE_INCOMPATIBLE",
    "TENSORRT_PARSE_ERROR",
    "TEXT_MATCH",
    "TOKENIZER_MISMATCH",
    "VLLM_ENGINE_DEAD",
    "VLLM_PREEMPTION",
    "XID",
]

# --- kernel / driver (kind LOG) -------------------------------------------------------------------
XID: Final = "xid"
"""value=int Xid code; attrs: pci, pid, process, message, gpu_instance, compute_instance (MIG)."""
SXID: Final = "sxid"
"""value=int SXid code; attrs: nvswitch, link, fatal (bool), message."""
GPU_FALLEN_OFF_BUS: Final = "gpu_fallen_off_bus"
"""A 'GPU has fallen off the bus' line without an Xid code; attrs: pci."""
GPU_RESET_REQUIRED: Final = "gpu_reset_required"
"""'GPU requires reset' / 'Reset required'; attrs: pci."""
PCIE_AER: Final = "pcie_aer"
"""value=severity in PCIE_AER_SEVERITIES; attrs: device, type (error type name), agent."""
PCIE_AER_SEVERITIES: Final = ("corrected", "uncorrected", "fatal")
KERNEL_PANIC: Final = "kernel_panic"
HUNG_TASK: Final = "hung_task"
"""attrs: process, pid, seconds."""
SOFT_LOCKUP: Final = "soft_lockup"
"""attrs: cpu, process, seconds."""
HOST_OOM_KILL: Final = "host_oom_kill"
"""attrs: pid, process, rss_bytes (anon+file+shmem when given), memcg (when constrained by a cgroup)."""

# --- CUDA / PyTorch ---------------------------------------------------------------------------------
CUDA_ERROR: Final = "cuda_error"
"""value=canonical CUDA runtime error name (cudaErrorIllegalAddress, ...) or the driver name when no
runtime name exists; attrs: code, category, raw_name, kernel, api."""
CUDA_OOM: Final = "cuda_oom"
"""attrs (bytes, each only when present): tried, allocated, reserved, free, total,
reserved_unallocated, process_in_use; gpu_index; also framework ('pytorch'|'cuda'|'tensorflow')."""
DRIVER_ERROR: Final = "driver_error"
"""value=class in DRIVER_CLASSES; attrs: message."""
DRIVER_CLASSES: Final = (
    "cuda_driver_version_insufficient",
    "no_kernel_image",
    "unsupported_ptx",
    "nvrm_init",
    "driver_library_mismatch",
    "no_cuda_gpus",
    "container_cli",
    "container_cli_driver",
)

# --- NCCL -------------------------------------------------------------------------------------------
NCCL_TIMEOUT: Final = "nccl_timeout"
"""Collective watchdog timeout; attrs: op, seq, timeout_ms, rank, elapsed_ms."""
NCCL_ERROR: Final = "nccl_error"
"""value=class in NCCL_ERROR_CLASSES; attrs: message, rank, host."""
NCCL_ERROR_CLASSES: Final = (
    "network",
    "shm",
    "p2p",
    "internal",
    "segfault",
    "unhandled_system",
    "unhandled_cuda",
    "invalid_usage",
    "remote",
)

# --- NVML / nvidia-smi ------------------------------------------------------------------------------
NVML_ERROR: Final = "nvml_error"
"""value=class in NVML_ERROR_CLASSES; attrs: message, detail, reporter ("dcgm-exporter" on its NVML provider's
own line)."""
NVML_ERROR_CLASSES: Final = (
    "driver_library_mismatch",
    "no_devices",
    "init_failed",
    "gpu_lost",
    "library_not_found",
    "library_not_loaded_in_container",
    "unknown",
)

# --- serving engines --------------------------------------------------------------------------------
VLLM_ENGINE_DEAD: Final = "vllm_engine_dead"
"""attrs: message."""
VLLM_PREEMPTION: Final = "vllm_preemption"
"""attrs: count (cumulative preemptions when the line says), request_id."""
KV_CACHE_INSUFFICIENT: Final = "kv_cache_insufficient"
"""Not enough KV cache for max_model_len / no available memory for cache blocks; attrs: message, phase
("runtime" when the cache filled while serving: llama.cpp's context full; else found at start-up)."""
TENSORRT_PARSE_ERROR: Final = "tensorrt_parse_error"
"""TensorRT ONNX parser / onnxruntime model load failures; attrs: message, node, op."""
TENSORRT_ENGINE_INCOMPATIBLE: Final = "tensorrt_engine_incompatible"
"""Serialized engine built with another TensorRT version / GPU; attrs: message."""
GRPC_STATUS: Final = "grpc_status"
"""value=gRPC status name (DEADLINE_EXCEEDED, UNAVAILABLE, RESOURCE_EXHAUSTED, ...);
attrs: method, message."""
PYTHON_EXCEPTION: Final = "python_exception"
"""value=exception type (last line of a traceback or an 'Error: msg' line); attrs: message, frames."""
RAY_OOM_KILL: Final = "ray_oom_kill"
"""attrs: node, process, pid, memory_used_ratio."""
MODEL_LOAD: Final = "model_load"
"""value=seconds to load; attrs: model."""
TOKENIZER_MISMATCH: Final = "tokenizer_mismatch"
"""Vocabulary size mismatch / token ids out of range / decode errors; attrs: message."""

# --- Kubernetes (kind EVENT) ------------------------------------------------------------------------
K8S_POD_STATUS: Final = "k8s_pod_status"
"""value=reason (OOMKilled, CrashLoopBackOff, Error, ContainerCreating, ...); attrs: exit_code,
restarts, container, message, state ('waiting'|'terminated'|'last_terminated'), phase."""
K8S_EVENT: Final = "k8s_event"
"""value=reason (FailedScheduling, BackOff, Killing, Unhealthy, ...); attrs: message, type, count,
object_kind, insufficient (list of resource names from 'Insufficient X' in FailedScheduling)."""

# --- monitoring and fallback ------------------------------------------------------------------------
EXPORTER_ERROR: Final = "exporter_error"
"""The monitoring itself broke (dcgm-exporter / gpuobs exporter errors, scrape target down);
attrs: message, target, job."""
# --- more kernel / node findings (peer tools' matchers: gpud, node-problem-detector, gcm) ------------
FABRIC_MANAGER_ERROR: Final = "fabric_manager_error"
"""nv-fabricmanager failure: value 'topology_mismatch' | 'nothing_to_do' | 'multicast_gpu_handle'."""
NVLINK_ERROR: Final = "nvlink_error"
"""Driver NVLink training/discovery failure (value 'post_rx_detect_failure'); Xid 74/144-150 stay `xid`."""
PEERMEM_ERROR: Final = "peermem_error"
"""nvidia-peermem (GPUDirect RDMA) error, value 'invalid_context'."""
INFINIBAND_ERROR: Final = "infiniband_error"
"""mlx5 HCA problem: value 'pci_power_insufficient' | 'port_module_high_temperature' | 'access_reg_failed'."""
LINK_FLAP: Final = "link_flap"
"""A network interface lost carrier / went down; value = interface name (ib0, eth0...)."""
FILE_MAX_REACHED: Final = "file_max_reached"
"""`VFS: file-max limit N reached`; value = N."""
MACHINE_CHECK: Final = "machine_check"
"""APEI/MCE hardware error; value = severity ('fatal', 'recoverable', 'corrected', 'logged')."""
FILESYSTEM_READONLY: Final = "filesystem_readonly"
"""A filesystem was remounted read-only; value = device."""

PROCESS_KILLED: Final = "process_killed"
"""A process ended by SIGKILL with no reason given (a shell's bare `Killed`, exit code 137, exitcode -9,
`srun: error: node: task N: Killed`); value = 'SIGKILL'; attrs: process, exit_code, host."""
REQUEST_REJECTED: Final = "request_rejected"
"""A server shed a request because its queue was full (Ray Serve backpressure, Triton's maximum queue
size, TGI 'Model is overloaded', Ollama's 'maximum pending requests exceeded', Knative's 'pending
request queue full', HTTP 429/503 'too many requests'); value = 'queue_full'; attrs: queued, max_queued."""
PCIE_ACS_ENABLED: Final = "pcie_acs_enabled"
"""`lspci -vvv` ACSCtl with SrcValid+ on a bridge: peer-to-peer traffic is redirected through the root
complex / IOMMU (the usual cause of GPU P2P hangs); value = the bridge's bus id or None; attrs: flags."""
PCIE_LINK_DEGRADED: Final = "pcie_link_degraded"
"""`lspci -vvv` LnkSta below LnkCap (`(downgraded)` speed or width); value = device; attrs: speed,
width, cap_speed, cap_width."""
CONTAINER_DEVICE_ACCESS: Final = "container_device_access"
"""A container's device cgroup (`devices.list`) without read/write on the NVIDIA devices (major 195, or
the nvidia-uvm major), or EPERM opening /dev/nvidia*; value = 'lost'; attrs: rule."""
CONTAINER_WITHOUT_GPU: Final = "container_without_gpu"
"""A `docker run`/`podman run` command line that asks for no GPU (no --gpus, --runtime=nvidia,
--device /dev/nvidia*, NVIDIA_VISIBLE_DEVICES); value = image; attrs: command."""
ALLOCATOR_SNAPSHOT: Final = "allocator_snapshot"
"""A pprint'ed PyTorch caching-allocator snapshot or memory_stats (STATE); attrs: segments,
split_segments, free_in_split_bytes, reserved_bytes, active_bytes, alloc_retries, inactive_split_bytes."""

RETIRED_PAGES: Final = "retired_pages"
"""STATE from `nvidia-smi -q` (pre-Ampere page retirement): value = SBE + DBE retired pages;
attrs: sbe, dbe, pending (bool). Remapped rows (Ampere+) use the native metric names instead."""

TEXT_MATCH: Final = "text_match"
"""The text tier (tier TEXT): lines whose wording points at a signature; value = signature id; attrs:
score (0..1, noisy-OR of the phrase weights), phrases (those found), lines (line numbers relied on)."""

PROSE_MATCH: Final = "prose_match"
"""The prose tier (tier PROSE): a document's prose lines read as a description of a signature's failure;
value = signature id; attrs: score (log-likelihood ratio against ordinary text), lead (over the runner-up),
confidence, lines (line numbers relied on). Heard only when no signature holds."""

SEMANTIC_MATCH: Final = "semantic_match"
"""The semantic tier (tier SEMANTIC): a document read by a sentence encoder as a signature's failure; value =
signature id; attrs: probability, incident (probability that the text tells of an incident), rank (1 for
the tier's first choice), confidence, lines (line numbers that read most like it), reader (one of
SEMANTIC_READERS). Made only when no other tier named a cause."""
SEMANTIC_READERS: Final = ("default", "cjk")
"""Which of the semantic tier's readers named a record (attr reader): `default` reads every text with MiniLM's
vector and the terms; `cjk` reads Chinese, Japanese or Korean text with the multilingual encoder's vector
too."""

LOG_LINE: Final = "log_line"
"""Fallback for a line with level error/fatal that matched no parser; value=level; attrs: message."""

# The kernel's and the driver's own structured reports about the hardware. When the exact tier read one and
# no signature holds on it, the catalog has judged it (a corrected AER, a non-fatal SXid, an Xid 31 from a
# desktop process, fabric manager with nothing to do): the semantic tier's guess by meaning is not asked. An
# Xid counts only when its code is one the catalog reads (rca.engine).
DEVICE_REPORT_KEYS: Final = frozenset(
    {
        XID,
        SXID,
        PCIE_AER,
        MACHINE_CHECK,
        NVLINK_ERROR,
        FABRIC_MANAGER_ERROR,
        PEERMEM_ERROR,
        INFINIBAND_ERROR,
        LINK_FLAP,
    }
)

ALL_LOG_KEYS: Final = (
    XID,
    SXID,
    GPU_FALLEN_OFF_BUS,
    GPU_RESET_REQUIRED,
    PCIE_AER,
    KERNEL_PANIC,
    HUNG_TASK,
    SOFT_LOCKUP,
    HOST_OOM_KILL,
    CUDA_ERROR,
    CUDA_OOM,
    DRIVER_ERROR,
    NCCL_TIMEOUT,
    NCCL_ERROR,
    NVML_ERROR,
    VLLM_ENGINE_DEAD,
    VLLM_PREEMPTION,
    KV_CACHE_INSUFFICIENT,
    TENSORRT_PARSE_ERROR,
    TENSORRT_ENGINE_INCOMPATIBLE,
    GRPC_STATUS,
    PYTHON_EXCEPTION,
    RAY_OOM_KILL,
    MODEL_LOAD,
    TOKENIZER_MISMATCH,
    K8S_POD_STATUS,
    K8S_EVENT,
    EXPORTER_ERROR,
    FABRIC_MANAGER_ERROR,
    NVLINK_ERROR,
    PEERMEM_ERROR,
    INFINIBAND_ERROR,
    LINK_FLAP,
    FILE_MAX_REACHED,
    MACHINE_CHECK,
    FILESYSTEM_READONLY,
    RETIRED_PAGES,
    PROCESS_KILLED,
    REQUEST_REJECTED,
    PCIE_ACS_ENABLED,
    PCIE_LINK_DEGRADED,
    CONTAINER_DEVICE_ACCESS,
    CONTAINER_WITHOUT_GPU,
    ALLOCATOR_SNAPSHOT,
    TEXT_MATCH,
    PROSE_MATCH,
    SEMANTIC_MATCH,
    LOG_LINE,
)
