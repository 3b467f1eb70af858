"""Application-side GPU error parsers: PyTorch CUDA OOM figures, CUDA error names and codes,
driver/arch mismatches and NVML / nvidia-smi / container-toolkit failures.

CUDA names, codes and messages come from the shared catalog `gpuobs.cuda_errors`.
"""

from __future__ import annotations

import re

from gpuobs import cuda_errors
from gpuobs.rca import keys
from gpuobs.rca.parsers.context import ParseContext, Trigger
from gpuobs.rca.parsers.prefix import LinePrefix

__all__ = ["PARSERS", "parse_oom_figures", "parse_size"]

_UNITS = {
    "b": 1,
    "bytes": 1,
    "byte": 1,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}
_SIZE = r"(\d+(?:\.\d+)?)\s*(TiB|GiB|MiB|KiB|bytes|byte|TB|GB|MB|KB|B)\b"
_SIZE_RE = re.compile(_SIZE)


def parse_size(text: str) -> int | None:
    """Bytes from '2.26 GiB', '781.59 MiB', '0 bytes', '12.18GB'; None when not a size."""
    m = _SIZE_RE.search(text)
    if not m:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


# (attribute, keyword that must be in the text, regex): the keyword check keeps regexes off lines without it.
_OOM_FIELDS = (
    ("tried", "Tried to allocate", re.compile(r"Tried to allocate " + _SIZE)),
    ("total", "total capac", re.compile(r"(?:total capacity|total capacty) of " + _SIZE)),
    ("total", "total capacity", re.compile(_SIZE + r" total capacity")),
    ("free", "is free", re.compile(r"of which " + _SIZE + r" is free")),
    ("free", " free", re.compile(_SIZE + r" free\b")),
    ("process_in_use", "this process has", re.compile(r"this process has " + _SIZE + r" memory in use")),
    ("allocated", "allocated by PyTorch", re.compile(_SIZE + r" is allocated by PyTorch")),
    ("allocated", "already allocated", re.compile(_SIZE + r" already allocated")),
    (
        "reserved_unallocated",
        "but unallocated",
        re.compile(_SIZE + r" is reserved by PyTorch but unallocated"),
    ),
    ("reserved", "reserved in total", re.compile(_SIZE + r" reserved in total by PyTorch")),
    # PyTorch 1.0-1.3 printed "N cached" as its cache less what was allocated (amount_cached -
    # amount_allocated): the pool reserved but unallocated, not the whole reservation.
    ("reserved_unallocated", " cached", re.compile(_SIZE + r" cached\b")),
)
_GPU_RE = re.compile(r"\(?GPU (\d+)[;\s]")
_OTHER_PROC_RE = re.compile(r"Process (\d+) has " + _SIZE + r" memory in use")


def parse_oom_figures(text: str) -> dict[str, object]:
    """The byte figures of a PyTorch 'CUDA out of memory' message (old and new formats)."""
    out: dict[str, object] = {}
    for name, keyword, regex in _OOM_FIELDS:
        if name in out or keyword not in text:
            continue
        m = regex.search(text)
        if m:
            out[name] = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if "reserved" not in out and "allocated" in out and "reserved_unallocated" in out:
        out["reserved"] = int(out["allocated"]) + int(out["reserved_unallocated"])  # type: ignore[call-overload]
    if "reserved_unallocated" not in out and "reserved" in out and "allocated" in out:
        out["reserved_unallocated"] = max(0, int(out["reserved"]) - int(out["allocated"]))  # type: ignore[call-overload]
    gpu = _GPU_RE.search(text)
    if gpu:
        out["gpu_index"] = int(gpu.group(1))
    others = (
        [(int(p), int(float(v) * _UNITS[u.lower()])) for p, v, u in _OTHER_PROC_RE.findall(text)]
        if "Process " in text
        else []
    )
    if others:
        out["other_processes"] = [{"pid": p, "bytes": b} for p, b in others]
    return out


# Conditional advice that names out-of-memory without reporting one (vLLM's CUDA-graph notice, launcher
# hints); a line that also carries an allocator report is still an OOM.
_OOM_ADVICE_RE = re.compile(
    r"(?i)\b(?:if|in case|when) (?:you are |you're |you )?(?:running|run|runs) out of memory|"
    r"\b(?:to avoid|may cause|might cause|can cause|could cause|prevent|avoid)\b[^.]{0,40}"
    r"\b(?:out of memory|OOM)\b"
)
_OOM_REPORT_RE = re.compile(
    r"Tried to allocate|OutOfMemoryError|OOM when allocating|CUDA error: out of memory"
)
# A sentence whose out-of-memory is the machine's ("the system runs out of memory", "the host ran out of
# memory"): RAM and swap, what the kernel's OOM killer answers, whatever GPU words the line also holds.
_HOST_OOM_RE = re.compile(
    r"(?i)\b(?:system|host|machine|node|server|computer|ram)\b (?:\w+ )?"
    r"(?:runs?|ran|running|is|was|goes|went) out of memory"
)


def _oom(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    low = msg.lower()
    if "out of memory" not in low and "outofmemoryerror" not in low and "oom when allocating" not in low:
        return
    if "ray" in low and "node running low on memory" in low:
        return  # host memory, the Ray parser reports it
    if (
        "killed process" in low
        or "oom-kill" in low
        or "invoked oom-killer" in low
        or "cgroup out of memory" in low
    ):
        return  # kernel OOM killer
    if _OOM_ADVICE_RE.search(msg) and not _OOM_REPORT_RE.search(msg):
        return  # advice printed at start-up ("If you are running out of memory, consider ..."), no OOM
    if _HOST_OOM_RE.search(msg) and not _OOM_REPORT_RE.search(msg) and "cuda out of memory" not in low:
        return  # the host's memory, told in words (the text tier reads them for the OOM killer)
    framework = "cuda"
    if "CUDA out of memory" in msg or "torch.OutOfMemoryError" in msg or "torch.cuda.OutOfMemoryError" in msg:
        framework = "pytorch"
    elif "OOM when allocating" in msg or "ResourceExhaustedError" in msg:
        framework = "tensorflow"
    elif not ("CUDA" in msg or "cuda" in msg or "GPU" in msg or "CUBLAS" in msg):
        return
    text = msg
    if "Tried to allocate" in msg and ("reserved" not in msg and "cached" not in msg):
        text = msg + " " + ctx.lookahead(4)  # wrapped or split over lines
    figures = parse_oom_figures(text.split("See documentation")[0])
    attrs: dict[str, object] = {"framework": framework, "message": msg.strip()[:500]}
    attrs.update(figures)
    ctx.emit(keys.CUDA_OOM, None, pre, msg, attrs, gpu_index=figures.get("gpu_index"))


# vLLM's start-up check (v1 gpu_worker.py), often wrapped over lines: "Free memory on device cuda:0
# (27.44/79.15 GiB) on startup is less than desired GPU memory utilization (0.9, 71.24 GiB). Decrease GPU
# memory utilization or reduce GPU memory used by other processes." Its DEBUG twin ("... on startup.
# Desired GPU memory utilization is ...") reports a start that went well.
_STARTUP_FREE_RE = re.compile(
    r"Free memory on device(?: [\w:]+)? \((?P<free>\d+(?:\.\d+)?)/(?P<total>\d+(?:\.\d+)?) GiB\)"
    r" on startup is less than desired GPU memory utilization"
    r" \((?P<util>\d+(?:\.\d+)?), (?P<want>\d+(?:\.\d+)?) GiB\)"
)


def _startup_free_memory(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    """vLLM refusing to start because the device had less free memory than it was told to take: an OOM at
    start-up, before the engine held anything, so what was not free was held by others (the figures let
    the anomaly tell a neighbour's GPU from a utilization set too high)."""
    m = _STARTUP_FREE_RE.search(" ".join((msg + " " + ctx.lookahead(3)).split()))
    if m is None or ctx.emitted_here(keys.CUDA_OOM):
        return
    gib = _UNITS["gib"]
    attrs: dict[str, object] = {
        "framework": "vllm",
        "message": m.group(0)[:500],
        "at_startup": True,
        "total": int(float(m.group("total")) * gib),
        "free": int(float(m.group("free")) * gib),
        "tried": int(float(m.group("want")) * gib),
        "utilization": float(m.group("util")),
    }
    ctx.emit(keys.CUDA_OOM, None, pre, msg, attrs)


_KERNEL_RE = re.compile(r"(?:in kernel|kernel[= ]|Kernel:?)\s*['\"`]?(?P<k>[A-Za-z_][\w:<>]*)")
_API_RE = re.compile(r"\b(?P<api>cuda[A-Z]\w+|cu[A-Z]\w+)\(")
_LIB_STATUS_RE = re.compile(r"\b(?P<name>(?:CUBLAS|CUDNN|CUSOLVER|CUSPARSE|CUFFT|NCCL)_STATUS_[A-Z_]+)\b")
_ASSERT_RE = re.compile(r"(?P<file>[\w/.-]+\.cu):(?P<line>\d+): .*Assertion `(?P<cond>.*)` failed")


def _cuda_error(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    low = msg.lower()
    if "out of memory" in low or "cudaerrormemoryallocation" in low or "cuda_error_out_of_memory" in low:
        if (
            "CUDA error: out of memory" in msg
            or "CUDA_ERROR_OUT_OF_MEMORY" in msg
            or "cudaErrorMemoryAllocation" in msg
        ):
            ctx.emit(keys.CUDA_OOM, None, pre, msg, {"framework": "cuda", "message": msg.strip()[:500]})
        return
    assertion = _ASSERT_RE.search(msg)
    if assertion:
        err = cuda_errors.by_name("cudaErrorAssert")
        attrs: dict[str, object] = {
            "assertion": assertion["cond"],
            "file": assertion["file"],
            "raw_name": "device-side assert",
        }
        if err is not None:
            attrs.update({"code": err.code, "category": err.category, "sticky": err.sticky})
        ctx.emit(keys.CUDA_ERROR, err.name if err else "cudaErrorAssert", pre, msg, attrs)
        return
    found = cuda_errors.from_text(msg)
    if found is None or found.code == 0:
        lib = _LIB_STATUS_RE.search(msg)
        if lib and "SUCCESS" not in lib["name"]:
            ctx.emit(
                keys.CUDA_ERROR,
                lib["name"],
                pre,
                msg,
                {"category": "library", "raw_name": lib["name"], "message": msg.strip()[:500]},
            )
        return
    attrs = {
        "code": found.code,
        "category": found.category,
        "sticky": found.sticky,
        "message": msg.strip()[:500],
    }
    named = re.search(r"\b(cudaError\w+|CUDA_ERROR_[A-Z_]+)\b", msg)
    attrs["raw_name"] = named.group(1) if named else found.message
    kernel = _KERNEL_RE.search(msg) or None
    if kernel:
        attrs["kernel"] = kernel["k"]
    api = _API_RE.search(msg)
    if api:
        attrs["api"] = api["api"]
    if found.name in (
        "cudaErrorInsufficientDriver",
        "cudaErrorNoKernelImageForDevice",
        "cudaErrorUnsupportedPtxVersion",
        "cudaErrorNoDevice",
        "cudaErrorCompatNotSupportedOnDevice",
    ):
        _driver(msg, pre, ctx)
    ctx.emit(keys.CUDA_ERROR, found.name, pre, msg, attrs)


def _json_cuda(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    """Structured logs of the serving stack carry `cuda_error_code` / `cuda_error_name` fields."""
    code = pre.fields.get("cuda_error_code")
    name = pre.fields.get("cuda_error_name")
    err = None
    if isinstance(code, int) or (isinstance(code, str) and code.isdecimal()):
        err = cuda_errors.by_code(int(code))
    if err is None and isinstance(name, str):
        err = cuda_errors.by_name(name)
    if err is None or err.code == 0:
        return
    if err.code == 2:
        same = ctx.emitted_index(keys.CUDA_OOM)
        if same is not None:
            # the message text was the OOM already (PyTorch's figures): one record per line, so counts
            # stay the number of failures
            ctx.amend(same, {"cuda_error_code": 2})
            return
        ctx.emit(keys.CUDA_OOM, None, pre, msg, {"framework": "cuda", "message": msg.strip()[:500]})
        return
    attrs: dict[str, object] = {
        "code": err.code,
        "category": err.category,
        "sticky": err.sticky,
        "raw_name": name or err.name,
        "message": msg.strip()[:500],
    }
    for field in ("kernel", "input_hash", "request_id"):
        if pre.fields.get(field) is not None:
            attrs[field] = pre.fields[field]
    if ctx.emitted_here(keys.CUDA_ERROR):
        # the message text named the error too: keep one record, with the structured fields added
        ctx.amend(len(ctx.out) - 1, {k: v for k, v in attrs.items() if k not in ("message", "raw_name")})
        return
    ctx.emit(keys.CUDA_ERROR, err.name, pre, msg, attrs)


_DRIVER_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"(?i)CUDA driver version is insufficient|driver version is too old|"
            r"unsatisfied condition: cuda>=|"
            # NGC containers' start-up banner when forward compatibility cannot help
            r"This container was built for NVIDIA Driver Release \S+ or later, but"
        ),
        "cuda_driver_version_insufficient",
    ),
    (
        re.compile(
            r"(?i)no kernel image is available|is not compatible with the current PyTorch installation|"
            r"CUDA capability sm_\d+ is not compatible|"
            # text-embeddings-inference's candle backend refusing a GPU its image was not built for
            # (backends/candle: "Runtime compute cap {} is not compatible with compile time compute cap {}")
            r"Runtime compute cap \d+ is not compatible with compile time compute cap \d+"
        ),
        "no_kernel_image",
    ),
    (
        re.compile(r"(?i)PTX was compiled with an unsupported toolchain|unsupported PTX version"),
        "unsupported_ptx",
    ),
    (
        re.compile(
            r"NVRM: (?:RmInitAdapter failed|The NVIDIA probe routine failed|"
            # older drivers' "rm_init_adapter failed for device bearing minor number 0" and
            # "rm_init_adapter(0) failed"; current drivers print both under the GPU's PCI address
            # ("GPU 0000:57:00.0: RmInitAdapter failed! (0x22:0x56:897)", "... rm_init_adapter failed, ...")
            r"rm_init_adapter(?:\(\d+\))? failed|GPU \S+: (?:rm_init_adapter|RmInitAdapter) failed|"
            r"failed to allocate vendor device|No NVIDIA (?:graphics adapter|GPU) (?:probed|found)|"
            r"The NVIDIA probe routine was not called|"
            # nv-pci.c's probe refusals: a GPU this driver branch does not support ("The NVIDIA GPU %s
            # (PCI ID: %04x:%04x)\nNVRM: installed in this system is not supported by the\nNVRM: NVIDIA %s
            # driver release."), a BAR the BIOS left unassigned
            r"installed in this system is not supported by|"
            r"This PCI I/O region assigned to your NVIDIA device is invalid|"
            # nv.c when RmInitAdapter stops at NV_ERR_INSUFFICIENT_POWER
            r"GPU \S+: GPU does not have the necessary power cables connected|"
            # nv-pci.c: a 64-bit BAR the upstream bridge has no window for; nv.c's module init giving up
            r"This is a 64-bit BAR mapped above 4GB|NVIDIA init module failed)|"
            # nvidia-persistenced (nvpd_main.c) finds no /dev/nvidia* nodes: the module never came up
            r"Failed to query NVIDIA devices\. Please ensure that the NVIDIA device files|"
            # the GSP-RM firmware the driver boots the GPU with is missing (osinit.c's RmFetchGspRmImages,
            # after the kernel's firmware loader: "Direct firmware load for nvidia/565.57.01/gsp_tu10x.bin
            # failed with error -2"), so RmInitAdapter stops; the GSP log image (gsp_log_*.bin) is optional
            r"NVRM:? RmFetchGspRmImages: No firmware image found|"
            r"(?:Direct firmware load for |failed to load |loading )\S*nvidia/[\d.]+/gsp_(?!log_)\w+\.bin"
            r"(?: failed| \(-)|"
            # GSP-RM never booted, so the adapter cannot initialise (kernel_gsp*.c: "kgspBootstrap_GH100:
            # GSP-FMC reported an error while attempting to boot GSP", "kgspBootstrapRiscvOSEarly_GH100:
            # Timeout waiting for GSP target mask release"; the open modules print "NVRM" without a colon)
            r"NVRM:? kgspBootstrap\w*: (?:.*\b(?:[Tt]imeout|failed|error)\b)"
        ),
        "nvrm_init",
    ),
    (re.compile(r"NVRM: API mismatch"), "driver_library_mismatch"),
    # TensorFlow's stream_executor/cuda/cuda_diagnostics.cc after cuInit failed: the loaded kernel module's
    # version (/proc/driver/nvidia/version) against the libcuda.so it loaded ("kernel version 352.63.0 does
    # not match DSO version 361.93.2 -- cannot find working devices in this configuration"), NVML's
    # "Driver/library version mismatch" in other words
    (re.compile(r"kernel version \S+ does not match DSO version"), "driver_library_mismatch"),
    # The NVIDIA kernel module failed to build for the running kernel, so it cannot load: kbuild's error
    # for an object of the nvidia module tree (DKMS's /var/lib/dkms/nvidia/<ver>/build/, the driver
    # package's kernel/ or kernel-open/ nvidia* folders), nvidia-installer's "Unable to build the NVIDIA
    # kernel module" or failed `dkms build -m nvidia` (DKMS's own "Bad return status" is read in _driver).
    # The GPU operator's driver container says it before building: its package sources hold no headers for
    # the node's running kernel (gpu-driver-container's _resolve_kernel_version: "Could not resolve Linux
    # kernel version", then exit 1), so no module is ever built and the driver pod crash-loops.
    (
        re.compile(
            r"make(?:\[\d+\])?: \*\*\* \[[^\]]*(?:/dkms/nvidia/|/kernel(?:-open)?/nvidia"
            r"(?:-uvm|-modeset|-drm|-peermem)?/)[^\]]*\] Error \d+|"
            r"(?i:Unable to build the NVIDIA kernel module|Failed to run `?\S*dkms build -m nvidia\b)|"
            r"Could not resolve Linux kernel version"
        ),
        "module_build",
    ),
    # the open kernel module's GSP watchdog: what Xid 119/120 report, printed without the Xid line
    (re.compile(r"NVRM: .*(?:_kgspLogRpcTimeout|_kgspIsHeartbeatTimedOut|GSP RPC timeout)"), "gsp_timeout"),
    (
        re.compile(
            r"(?i)Found no NVIDIA driver on your system|No CUDA GPUs are available|"
            r"no CUDA-capable device is detected|"
            # c10d's ProcessGroupNCCL constructor when at::cuda::getNumGPUs() is 0
            r"ProcessGroupNCCL is only supported with GPUs, no GPUs found|"
            # the banner of NVIDIA's CUDA container images (nvidia_entrypoint.sh) when no driver was mounted
            # in: the container was started without the NVIDIA runtime or a GPU request
            r"The NVIDIA Driver was not detected\.\s+GPU functionality will not be available|"
            # PyTorch's text for cudaErrorInitializationError (c10/cuda/CUDAFunctions.cpp); JAX's xla_bridge
            # falling back to the CPU because its jaxlib has no CUDA
            r"CUDA driver initialization failed, you might not have a CUDA gpu|"
            r"but a CUDA-enabled jaxlib is not installed"
        ),
        "no_cuda_gpus",
    ),
    # libnvidia-container reaches the host driver through NVML: "nvml error: driver/library version mismatch"
    # says the host's user-space libraries and its loaded module differ (a driver upgraded without a reboot),
    # not that the container was given no GPU.
    (
        re.compile(
            r"nvidia-container-cli: initialization error: nvml error: driver/library version mismatch"
        ),
        "driver_library_mismatch",
    ),
    # "initialization error: nvml error: driver not loaded" and "driver rpc error: ..." say the host's driver
    # is down, not that the container was given no GPU; so does "driver error: timed out", the toolkit's
    # driver service getting no answer from the driver (a hung GPU or driver). Its "driver error: failed to
    # process request" is the service failing to start (libcuda missing from the image): no GPU given.
    (
        re.compile(
            r"nvidia-container-cli: initialization error: (?:nvml error: driver not loaded|driver rpc error)|"
            r"nvidia-container-cli: (?:initialization|detection) error: driver error: timed out"
        ),
        "container_cli_driver",
    ),
    # the Container Device Interface (containerd, CRI-O, podman, the toolkit's CDI mode) finds no spec for the
    # requested GPU ("unresolvable CDI devices nvidia.com/gpu=all"), or a spec gone stale with a driver
    # upgrade names files that are gone (crun: "cannot stat `/lib64/libEGL_nvidia.so.550.54.14`: No such file
    # or directory", podman: "failed to stat CDI host device \"/dev/dri/renderD129\""; the fix is
    # `nvidia-ctk cdi generate` again): the container gets no GPU
    (
        re.compile(
            r"nvidia-container-cli: (?:initialization|device|mount|ldcache|detection) error|"
            r"unresolvable CDI devices|failed to stat CDI host device|"
            r"cannot stat `[^`]*(?:nvidia|libcuda)[^`]*`: No such file or directory|"
            # containerd with a RuntimeClass "nvidia" whose handler the toolkit never configured
            r'no runtime for "nvidia" is configured'
        ),
        "container_cli",
    ),
)


# A REPL or notebook paste: `>>> torch.cuda.is_available()` answered `False` on the next line (or
# `torch.cuda.device_count()` answered `0`): the process sees no GPU.
_NO_GPU_PROBE_RE = re.compile(r"\b(?:cuda\.is_available\(\)|cuda\.device_count\(\))\s*$")
_NO_GPU_ANSWER = {"is_available()": "False", "device_count()": "0"}


# TensorFlow's cuda_diagnostics.cc prints both versions after cuInit failed ("libcuda reported version is:
# 375.66.0", "kernel reported version is: 384.130.0"); its verdict line (above) is missing from some versions.
_TF_REPORTED_RE = re.compile(r"\b(?P<which>libcuda|kernel) reported version is: (?P<version>[\d.]+)")


def _version_parts(version: str) -> tuple[int, ...]:
    """A driver version as numbers, trailing zeros dropped ("384.130.0" and "384.130" are one version)."""
    parts = [int(p) for p in version.split(".") if p.isdecimal()]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _tf_reported_versions(msg: str, pre: LinePrefix, ctx: ParseContext) -> bool:
    """Whether the line is one of TensorFlow's two version reports; the pair differing is a mismatch."""
    m = _TF_REPORTED_RE.search(msg)
    if m is None:
        return False
    seen: dict[str, str] = ctx.state.setdefault("tf_reported_versions", {})
    seen[m["which"]] = m["version"].rstrip(".")
    if len(seen) == 2:  # one run's pair: a later run of the same log pairs its own
        libcuda, kernel = seen.pop("libcuda"), seen.pop("kernel")
        if _version_parts(libcuda) != _version_parts(kernel):
            attrs = {"message": f"libcuda {libcuda} against kernel module {kernel}"}
            ctx.emit(keys.DRIVER_ERROR, "driver_library_mismatch", pre, msg, attrs)
    return True


def _driver(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if ctx.emitted_here(keys.DRIVER_ERROR):
        return
    if _tf_reported_versions(msg, pre, ctx):
        return
    probe = _NO_GPU_PROBE_RE.search(msg)
    if probe:
        answer = ctx.lookahead(1).strip()
        if answer == _NO_GPU_ANSWER[probe.group(0).split(".", 1)[1].strip()]:
            ctx.emit(
                keys.DRIVER_ERROR, "no_cuda_gpus", pre, msg, {"message": f"{msg.strip()[:200]} -> {answer}"}
            )
        return
    if "Bad return status for module build" in msg and "nvidia" in (msg + ctx.lookahead(2)).lower():
        # DKMS names the module on the next line ("Consult /var/lib/dkms/nvidia/<ver>/build/make.log")
        ctx.emit(keys.DRIVER_ERROR, "module_build", pre, msg, {"message": msg.strip()[:500]})
        return
    # The toolkit's long hook error wrapped by a terminal at a colon ("... nvidia-container-cli:
    # initialization error:" / "nvml error: ..."): the cause is on the line that ends it.
    wrapped = "nvidia-container-cli" in msg and msg.rstrip().endswith(":")
    text = f"{msg.rstrip()} {ctx.lookahead(1)}" if wrapped else msg
    for regex, cls in _DRIVER_PATTERNS:
        if regex.search(text):
            ctx.emit(keys.DRIVER_ERROR, cls, pre, msg, {"message": text.strip()[:500]})
            return


# dcgm-exporter's NVML provider's own wording ("Cannot init NVML library; err: %v"), and that of
# nvidia_gpu_prometheus_exporter (mindprince; main.go: "Couldn't initialize gonvml: %v. Make sure NVML is in
# the shared library search path."): the exporter's failure, kept apart from a workload's NVML errors (a
# record of its own, which the exporter's signature explains).
# The one place these wordings live: the NVML record's `reporter` here, the exporter record in apps.py.
_EXPORTER_NVML_RES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Cannot init NVML library; err"), "dcgm-exporter"),
    (re.compile(r"(?i)Couldn't initialize gonvml: "), "nvidia_gpu_prometheus_exporter"),
)


def exporter_nvml_reporter(msg: str) -> str | None:
    """The GPU exporter whose own NVML start-up failure the line is, if it is one."""
    return next((name for regex, name in _EXPORTER_NVML_RES if regex.search(msg)), None)
_NVML_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)Driver/library version mismatch"), "driver_library_mismatch"),
    (re.compile(r"(?i)GPU is lost|GpuIsLost|GPU_IS_LOST"), "gpu_lost"),
    # go-nvml's wording, which the containerised fleet agents print (device plugin, dcgm-exporter, GPU
    # feature discovery): inside a container the library is missing because the runtime did not inject the
    # driver's files (not the nvidia runtime, no GPU request), so the GPU is not visible there; the device
    # plugin's own next line asks "did you set the docker default runtime to `nvidia`?".
    (re.compile(r"(?i)could not load NVML library"), "library_not_loaded_in_container"),
    (
        re.compile(
            r"(?i)NVML Shared Library Not Found|libnvidia-ml\.so(?:\.1)?: cannot open|LibraryNotFound|"
            r"ERROR_LIBRARY_NOT_FOUND"
        ),
        "library_not_found",
    ),
    (re.compile(r"(?i)No devices were found"), "no_devices"),
    (
        re.compile(
            r"(?i)Failed to initialize NVML: (?:Unknown Error|ERROR_UNKNOWN)|Unable to determine the device "
            r"handle for GPU|NVMLError_Unknown|NVML_ERROR_UNKNOWN"
        ),
        "unknown",
    ),
    (
        re.compile(
            r"(?i)couldn't communicate with the NVIDIA driver|Failed to initialize NVML\b|"
            r"NVMLError_Uninitialized|NVML_ERROR_UNINITIALIZED|DriverNotLoaded"
        ),
        "init_failed",
    ),
)


def _nvml(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    for regex, cls in _NVML_PATTERNS:
        if regex.search(msg):
            attrs: dict[str, object] = {"message": msg.strip()[:500]}
            if "Unknown Error" in msg and "device handle" in msg:
                attrs["detail"] = "device_handle"
            reporter = exporter_nvml_reporter(msg)
            if reporter:
                attrs["reporter"] = reporter
            ctx.emit(keys.NVML_ERROR, cls, pre, msg, attrs)
            return


PARSERS: list[Trigger] = [
    (("out of memory", "OutOfMemoryError", "OOM when allocating", "CUDA out of"), _oom),
    (("Free memory on device",), _startup_free_memory),
    (
        (
            "CUDA error",
            "CUDA_ERROR_",
            "cudaError",
            "CUDA driver error",
            "device-side assert",
            "illegal memory access",
            "Triton Error",
            "illegal instruction",
            "misaligned address",
            "unspecified launch failure",
            "Assertion `",
            "_STATUS_",
            "launch timed out",
            "uncorrectable ECC",
            "CUDA Error",
            "no kernel image",
            "driver version is insufficient",
            "no CUDA-capable device",
        ),
        _cuda_error,
    ),
    (("cuda_error_code", "cuda_error_name"), _json_cuda),
    (
        (
            "driver version",
            "DSO version",
            "reported version is",
            "NVIDIA Driver Release",
            "PyTorch installation",
            "capability sm_",
            "compile time compute cap",
            "PTX",
            "NVRM: ",
            "kgspBootstrap",
            "NVIDIA driver",
            "NVIDIA Driver was not detected",
            "CUDA GPUs",
            "no GPUs found",
            "CUDA driver initialization failed",
            "CUDA-enabled jaxlib",
            "nvidia-container-cli",
            "CDI devices",
            "CDI host device",
            "cannot stat `",
            "no runtime for",
            "Failed to query NVIDIA devices",
            "CUDA-capable",
            "cuda.is_available()",
            "cuda.device_count()",
            "] Error ",
            "NVIDIA kernel module",
            "dkms build",
            "Bad return status for module build",
            "Could not resolve Linux kernel version",
            "/gsp_",
            "RmFetchGspRmImages",
        ),
        _driver,
    ),
    (
        (
            "NVML",
            "nvidia-smi",
            "NVIDIA-SMI",
            "GPU is lost",
            "No devices were found",
            "libnvidia-ml",
            "device handle",
            "GpuIsLost",
            "LibraryNotFound",
            # go-nvml's return names, as the device plugin and gpud wrap them ("nvml init failed:
            # ERROR_LIBRARY_NOT_FOUND", "failed to get device remapped rows: ERROR_GPU_IS_LOST"): no "NVML"
            # in capitals on the line
            "ERROR_LIBRARY_NOT_FOUND",
            "ERROR_GPU_IS_LOST",
            "version mismatch",
        ),
        _nvml,
    ),
]
