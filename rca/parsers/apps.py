"""Serving-stack parsers: vLLM engine death / preemption / KV cache, TensorRT and ONNX, gRPC status,
Python tracebacks, Ray's OOM killer, tokenizer mismatches, model load times, exporter failures.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from gpuobs.evidence import EvidenceKind
from gpuobs.names import gpu as g
from gpuobs.names import serving as sv
from gpuobs.rca import keys
from gpuobs.rca.parsers.context import LineParser, ParseContext, Trigger
from gpuobs.rca.parsers.cuda import exporter_nvml_reporter, parse_size
from gpuobs.rca.parsers.prefix import LinePrefix
from gpuobs.rca.parsers.text import asks, negated

__all__ = ["FALLBACK", "LINE_COMPLETE", "PARSERS", "QUIET_LINES", "STATS_LINE_GAUGES", "quiet_stats_line"]

# --- vLLM ------------------------------------------------------------------------------------------
_DEAD_RE = re.compile(
    r"\b(?:Async)?EngineDeadError\b|EngineCore encountered an issue|Engine loop is not running|"
    r"Engine core initialization failed|EngineCore failed to start|EngineCore encountered a fatal error|"
    r"Engine process failed to start|"
    r"Background loop has errored already|Engine iteration timed out|"
    r"engine of \S+ is (?:dead|stalled)\b|"  # gpuobs serve's /health problem, as its supervisor logs it
    # Text Generation Inference: the launcher's verdict when a model shard dies or cannot start
    r"\bShard(?:Failed|CannotStart)\b|"
    # SGLang's launcher when its scheduler or detokenizer process dies (entrypoints/engine.py; later
    # tokenizer_manager.py's "SIGQUIT received. signum=..., frame=.... It usually means one child failed.")
    r"Received sigquit from a child process|It usually means one child failed"
)
# The running total is "total_num_cumulative_preemption=N" in vLLM's V0 scheduler and
# "total_cumulative_preemption_cnt=N" in its documentation's copy of the warning; a formatter that puts the
# caller after the message leaves " (scheduler.py:1558)" behind it.
_PREEMPT_V0_RE = re.compile(
    r"Sequence group (?P<rid>\S+) is preempted by PreemptionMode\.(?P<mode>\w+) mode.*?"
    r"(?:total_(?:num_)?cumulative_preemption(?:_cnt)?=(?P<n>\d+))?(?:\s*\([\w./-]+:\d+\))?\s*$"
)
_TRT_KV_STAGE_RE = re.compile(r"The following component could not be created: KV cache\s*$")
_PREEMPT_V1_RE = re.compile(r"Preempt(?:ing|ed) request (?P<rid>[^\s:]+)")
_KV_LEN_RE = re.compile(
    r"max seq len \((?P<len>\d+)\) is larger than the maximum number of tokens that can be stored in "
    r"KV cache "
    r"\((?P<cap>\d+)\)"
)
# llama.cpp's server and decoder when the context's KV cells are all taken (tools/server/server.cpp, src/
# llama-context.cpp): a context (`-c`, shared by every slot) too small for the requests in flight.
_LLAMACPP_KV_FULL_RE = re.compile(
    r"failed to find free space in the KV cache|failed to find KV cache slot for ubatch|"
    r"failed to find a memory slot for batch|Input prompt is too big compared to KV size"
)
# Start-up and run-time checks of other engines that the cache cannot hold one sequence: TensorRT-LLM's
# KVCacheManager ("maxTokensInPagedKvCache (693) must be large enough to process at least 1 sequence to
# completion", kvCacheManager.cpp) at start-up; SGLang's retraction of running requests when even the last one
# finds no free KV slot ("No space left for only one request", managers/schedule_batch.py) while serving.
_TRTLLM_KV_ONE_SEQ_RE = re.compile(r"maxTokensInPagedKvCache \(\d+\) must be large enough to process")
_SGLANG_KV_RETRACT_RE = re.compile(r"No space left for only one request")
_KV_V1_RE = re.compile(
    r"max seq len \((?P<len>\d+)\), \(?(?P<need>[\d.]+ ?[GMK]i?B) KV cache is needed, "
    r"which is larger than the "
    r"available KV cache memory \((?P<avail>[\d.]+ ?[GMK]i?B)\)"
)


def _vllm(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if _DEAD_RE.search(msg):
        attrs: dict[str, object] = {"message": msg.strip()[:500]}
        if "initialization failed" in msg or "failed to start" in msg:
            attrs["phase"] = "startup"
        ctx.emit(keys.VLLM_ENGINE_DEAD, None, pre, msg, attrs)
        return
    m = _PREEMPT_V0_RE.search(msg)
    if m:
        attrs = {"request_id": m["rid"], "mode": m["mode"].lower()}
        if m["n"]:
            n = int(m["n"])
            attrs["count"] = n
            # vLLM V0 prints this warning for every 50th preemption only (1, 51, 101...): a record stands
            # for the preemptions since the previous warning of this log (the first one seen, for all
            # those before it), which its cumulative count says
            prev = ctx.state.get("preempt_count")
            if n - (prev if prev is not None else 0) > 1:
                attrs["repeats"] = n - (prev if prev is not None else 0)
            ctx.state["preempt_count"] = n
        ctx.emit(keys.VLLM_PREEMPTION, int(m["n"]) if m["n"] else None, pre, msg, attrs)
        return
    m = _PREEMPT_V1_RE.search(msg)
    if m and "resumed" not in msg:
        ctx.emit(keys.VLLM_PREEMPTION, None, pre, msg, {"request_id": m["rid"]})
        return
    kv = _KV_LEN_RE.search(msg)
    if kv:
        ctx.emit(
            keys.KV_CACHE_INSUFFICIENT,
            None,
            pre,
            msg,
            {"max_model_len": int(kv["len"]), "kv_capacity_tokens": int(kv["cap"]), "message": msg.strip()},
        )
        return
    kv = _KV_V1_RE.search(msg)
    if kv:
        ctx.emit(
            keys.KV_CACHE_INSUFFICIENT,
            None,
            pre,
            msg,
            {
                "max_model_len": int(kv["len"]),
                "needed_bytes": parse_size(kv["need"]),
                "available_bytes": parse_size(kv["avail"]),
                "message": msg.strip(),
            },
        )
        return
    # TensorRT-LLM's executor memory monitor names the stage that ran out of memory (_torch/pyexecutor/
    # _util.py: "Executor creation failed due to insufficient GPU memory." then "The following component
    # could not be created: KV cache"); other stages ("Model", "Sampler", "Initial KV cache (temporary for
    # KV cache size estimation)") are the weights or scratch buffers, not the cache
    if (
        "No available memory for the cache blocks" in msg
        or "insufficient KV cache" in msg.lower()
        or _TRT_KV_STAGE_RE.search(msg)
        or _TRTLLM_KV_ONE_SEQ_RE.search(msg)
    ):
        ctx.emit(keys.KV_CACHE_INSUFFICIENT, None, pre, msg, {"message": msg.strip()})
        return
    if _LLAMACPP_KV_FULL_RE.search(msg) or _SGLANG_KV_RETRACT_RE.search(msg):
        # while serving: the requests in flight outgrew the cache
        ctx.emit(keys.KV_CACHE_INSUFFICIENT, None, pre, msg, {"message": msg.strip(), "phase": "runtime"})
        return


# vLLM's periodic stats line (V0 `Running: 4 reqs, Swapped: 0 reqs, Pending: 12 reqs, GPU KV cache usage:
# 97.1%`; V1 `Running: 4 reqs, Waiting: 12 reqs, GPU KV cache usage: 97.1%`): the same gauges its
# /metrics serves, as readings at the line's time.
_STATS_RE = re.compile(
    r"Running: \d+ reqs, (?:Swapped: \d+ reqs, )?(?:Pending|Waiting): (?P<wait>\d+) reqs"
    r"(?:, GPU KV cache usage: (?P<kv>[\d.]+)%)?"
)


# The only metric keys a log line gives (the gauges vLLM's stats line prints that a rule reads).
STATS_LINE_GAUGES = (sv.NUM_REQUESTS_WAITING.native, sv.KV_CACHE_USAGE.native)
# A stats line is printed every few seconds: only a reading a rule could select becomes a record (a queue,
# a nearly full KV cache), so a long healthy log stays cheap.
_KV_NEARLY_FULL = 0.9


def _gauge() -> dict[str, object]:
    return {"labels": {}, "agg": "last"}


def _stats(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _STATS_RE.search(msg)
    if m is None:
        return
    waiting = float(m["wait"])
    if waiting > 0:
        ctx.emit(sv.NUM_REQUESTS_WAITING.native, waiting, pre, msg, _gauge(), kind=EvidenceKind.METRIC)
    if m["kv"] is not None and (usage := float(m["kv"]) / 100.0) >= _KV_NEARLY_FULL:
        ctx.emit(sv.KV_CACHE_USAGE.native, usage, pre, msg, _gauge(), kind=EvidenceKind.METRIC)


# Whatever in a line could make `split_prefix` give it an error, fatal or critical level, or the fallback
# see one in its text: the level words and their abbreviations in any case (`_level_word`: vLLM `ERROR`,
# logrus `ERRO[`, `kern  :crit  :`, `PANIC`), and glog's `[E` / `[F` and klog's `E0822` (`_letter_level`).
def _level_word(low: str) -> bool:
    """Whether a lower-cased line holds err, fata, crit, emerg, alert or pani (spelled out: `any()` over a
    generator costs twice the six searches)."""
    return "err" in low or "fata" in low or "crit" in low or "emerg" in low or "alert" in low or "pani" in low


def _letter_level(line: str) -> bool:
    """Whether an `E` or `F` in the line follows a `[` or precedes a digit (a glog or klog level).

    A `str.find` loop: a regular expression without a literal to look for tries every position.
    """
    for letter in "EF":
        i = line.find(letter)
        while i != -1:
            if (i > 0 and line[i - 1] == "[") or line[i + 1 : i + 2].isdigit():
                return True
            i = line.find(letter, i + 1)
    return False


def quiet_stats_line(line: str) -> bool:
    """True when a cleaned line that only the stats parser's trigger hit certainly gives no record, so
    `parse_lines` can skip peeling its prefix (a vLLM log prints one every few seconds: on 100,000 lines
    that was a third of the line parsers' time). It must not be JSON or logfmt (their message is a field,
    not the line's tail), no stats reading anywhere in it may be one `_stats` records (the message is
    the line's tail, so its reading is one of them), and nothing may hint at an error level (the
    fallback's only way to record an unrecognised line).
    """
    if line.lstrip().startswith("{") or "time=" in line:
        return False
    if _level_word(line.lower()) or _letter_level(line):
        return False
    m = _STATS_RE.search(line)  # the first reading; no reading holds a second "Running: "
    if m is None:
        return True
    if "Running: " in line[m.end() :] or float(m["wait"]) > 0:
        return False  # a second reading (rare: read the slow way) or a queue
    if m["kv"] is not None:
        try:
            usage = float(m["kv"]) / 100.0
        except ValueError:  # the parser would fail on it and count the failure: leave it the line
            return False
        if usage >= _KV_NEARLY_FULL:
            return False
    return True


# --- TensorRT / ONNX -------------------------------------------------------------------------------
_TRT_PARSE_RE = re.compile(
    r"ModelImporter\.cpp|onnx2trt|While parsing node number|UNSUPPORTED_NODE|Failed to parse (?:the )?ONNX|"
    r"ONNX(?:Runtime)?Error\]?\s*:\s*\d+\s*:\s*(?:INVALID_GRAPH|INVALID_PROTOBUF|NOT_IMPLEMENTED|FAIL|NO_MODEL)|"
    r"onnx runtime error|Unsupported ONNX opset|ERROR: Failed to parse the ONNX file|parser->parse",
    re.I,
)
# ONNX Runtime's "onnx runtime error 6" is RUNTIME_EXCEPTION, any failure: one raised by its BFC arena
# ("Failed to allocate memory for requested buffer of size N") is the GPU out of memory, not a model the
# parser cannot read.
_ORT_ALLOC_RE = re.compile(r"Failed to allocate memory for requested buffer|BFCArena::AllocateRaw")
# TensorRT's logger tags each line with its severity ("[TRT] [W]" from the Python API, "[W] [TRT]" from
# trtexec and the samples, "[TensorRT] WARNING:" before 8.0): the ONNX parser's warnings
# ("onnx2trt_utils.cpp:374: Your ONNX model has been generated with INT64 weights ... Attempting to cast
# down to INT32.") come with nearly every import and report no failure to parse.
# onnxruntime's own logger tag ("[W:onnxruntime:Default, tensorrt_execution_provider.h:53 log]") is peeled
# by the shared prefix splitter, which sets the line's level.
_TRT_MINOR_RE = re.compile(
    r"\[(?:TRT|TensorRT)\]\s*(?:\[[WIV]\]|(?:WARNING|INFO|VERBOSE):)|\[[WIV]\]\s*\[(?:TRT|TensorRT)\]"
)
# A pasted INT64 notice may lose every tag ("onnx2trt_utils.cpp:374: Your ONNX model has been generated with
# INT64 weights"): the notice itself is the parser's warning, whatever wraps it.
_TRT_INT64_NOTICE_RE = re.compile(r"has been generated with INT64 weights")
# onnxruntime failing to load an execution provider's library ("[ONNXRuntimeError] : 1 : FAIL : Failed to
# load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open shared object
# file") is a CUDA library missing on the host (the session falls back to the CPU), not a model the parser
# rejected.
_ORT_PROVIDER_LOAD_RE = re.compile(r"Failed to load library libonnxruntime_providers_\w+")
_TRT_NODE_RE = re.compile(r"(?:In node|node number) (?P<node>-?\d+)(?: \((?P<op>\w+)\))?")
# TensorRT 5-7's runtime asserted in `Engine::deserialize` that the plan's recorded size matches the layout
# this version expects ("Mismatch between allocated memory size and expected size of serialized engine."):
# a plan serialized by another TensorRT version (or a truncated file), before the version tag check existed.
_TRT_ENGINE_RE = re.compile(
    r"engine plan file is (?:not compatible with this version of TensorRT|"
    r"generated on an incompatible device)|"
    r"Version tag does not match|deserializeCudaEngine failed|Serialization assertion .*failed|"
    r"was built with TensorRT .* but is being run|Engine deserialization failed|magicTagRead|"
    r"Serialization Error in \w+|coreReadArchive|"
    r"Mismatch between allocated memory size and expected size of serialized engine",
    re.I,
)


def _tensorrt(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if _TRT_ENGINE_RE.search(msg):
        ctx.emit(keys.TENSORRT_ENGINE_INCOMPATIBLE, None, pre, msg, {"message": msg.strip()[:500]})
        return
    if pre.level in ("warning", "info", "debug"):
        return
    if _TRT_MINOR_RE.search(msg) or _TRT_INT64_NOTICE_RE.search(msg):
        return
    if _TRT_PARSE_RE.search(msg) and not (_ORT_ALLOC_RE.search(msg) or _ORT_PROVIDER_LOAD_RE.search(msg)):
        attrs: dict[str, object] = {"message": msg.strip()[:500]}
        node = _TRT_NODE_RE.search(msg)
        if node:
            attrs["node"] = int(node["node"])
            if node["op"]:
                attrs["op"] = node["op"]
        ctx.emit(keys.TENSORRT_PARSE_ERROR, None, pre, msg, attrs)


# --- gRPC ------------------------------------------------------------------------------------------
_GRPC_NAMES = (
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)
_GRPC_CAMEL = {n.replace("_", "").lower(): n for n in _GRPC_NAMES}
_GRPC_PY_RE = re.compile(r"StatusCode\.(?P<name>[A-Z_]+)")
_GRPC_GO_RE = re.compile(r"rpc error: code = (?P<name>\w+)(?: desc = (?P<desc>.*))?")
_GRPC_STATUS_RE = re.compile(r"grpc_status:(?P<code>\d+)|\"grpc_status\":\s*(?P<code2>\d+)")
# A status name with gRPC context ("gRPC call failed: UNAVAILABLE", "Predict deadline exceeded after 5 s").
_GRPC_BARE_RE = re.compile(
    r"\b(?P<name>DEADLINE_EXCEEDED|RESOURCE_EXHAUSTED|UNAVAILABLE|CANCELLED|INTERNAL|UNIMPLEMENTED)\b|"
    r"(?i:\b(?:Predict|rpc|grpc)\b.{0,40}deadline exceeded)"
)
_GRPC_METHOD_RE = re.compile(r"(?P<m>/[\w.]+/\w+)")


_GRPC_CONTINUATION = ("details", "debug_error_string", '"grpc_status', "grpc_status", "{")


def _grpc(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    name = None
    via_code = False  # only a grpc_status:N number (the debug string line of a multi-line error)
    m = _GRPC_PY_RE.search(msg)
    if m and m["name"] in _GRPC_NAMES:
        name = m["name"]
    else:
        g = _GRPC_GO_RE.search(msg)
        if g:
            name = _GRPC_CAMEL.get(g["name"].lower())
        else:
            s = _GRPC_STATUS_RE.search(msg)
            if s:
                code = int(s["code"] or s["code2"])
                name = _GRPC_NAMES[code - 1] if 1 <= code <= len(_GRPC_NAMES) else None
                via_code = True
            else:
                bare = _GRPC_BARE_RE.search(msg)
                if bare and ("rpc" in msg.lower() or "Predict" in msg):
                    name = bare["name"] if bare["name"] else "DEADLINE_EXCEEDED"
    if name is None:
        return
    attrs: dict[str, object] = {"message": msg.strip()[:500]}
    method = pre.fields.get("grpc_method") or pre.fields.get("method")
    mm = _GRPC_METHOD_RE.search(msg) if method is None else None
    if method is None and mm:
        method = mm["m"]
    if method:
        attrs["method"] = method
    last = ctx.state.get("last_grpc")
    continuation = via_code or msg.lstrip().startswith(_GRPC_CONTINUATION)
    if last is not None and ctx.index - last <= 3 and continuation:
        # one Python _InactiveRpcError prints status, details and debug string (grpc_status:N) on
        # consecutive lines: one error. A line that states its own status is another error and counts.
        return
    ctx.state["last_grpc"] = ctx.index
    ctx.emit(keys.GRPC_STATUS, name, pre, msg, attrs)


# --- Triton Inference Server / TensorRT's logger -------------------------------------------------
# Triton (glog): "E1129 12:30:01.123456 1 model_lifecycle.cc:638] failed to load 'x' version 1: Internal:
# ...", "I... model_lifecycle.cc:461] loading: x:1", "I... successfully loaded 'x' version 1".
_TRITON_FAILED_RE = re.compile(
    r"failed to load '(?P<model>[^']+)'(?: version (?P<version>\d+))?\s*:\s*(?P<reason>.*)$"
)
_TRITON_LOADING_RE = re.compile(r"^loading: (?P<model>[^\s:]+):(?P<version>\d+)\s*$")
_TRITON_LOADED_RE = re.compile(r"successfully loaded '(?P<model>[^']+)'(?: version (?P<version>\d+))?")
# TensorRT: "[TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: OutOfMemory (...)",
# "Error Code 1: Cuda Runtime (out of memory)", "Error Code 1: Serialization (Serialization assertion ...)".
_TRT_CODE_RE = re.compile(
    r"Error Code (?P<code>\d+): (?P<kind>[A-Za-z][\w ]*?)\s*(?:\((?P<detail>.*)\))?\s*$"
)
_OOM_TEXT_RE = re.compile(r"(?i)out of memory|OutOfMemory|OUT_OF_MEMORY|cudaErrorMemoryAllocation")


def _triton(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _TRITON_FAILED_RE.search(msg)
    if m:
        model, reason = m["model"], m["reason"].strip()
        attrs: dict[str, object] = {"model": model, "failed": True, "message": reason[:500]}
        if m["version"]:
            attrs["version"] = int(m["version"])
        ctx.emit(keys.MODEL_LOAD, None, pre, msg, attrs, model=model)
        if _OOM_TEXT_RE.search(reason) and not ctx.emitted_here(keys.CUDA_OOM):
            oom = {"framework": "triton", "message": reason[:500]}
            ctx.emit(keys.CUDA_OOM, None, pre, msg, oom, model=model)
        return
    m = _TRITON_LOADING_RE.search(msg)
    if m:
        if pre.time is not None:
            ctx.state.setdefault("triton_loading", {})[(m["model"], m["version"])] = pre.time
        return
    m = _TRITON_LOADED_RE.search(msg)
    if m and pre.time is not None:
        loading = ctx.state.get("triton_loading", {})
        key: tuple[str, str] | None = (m["model"], m["version"])
        if not m["version"]:  # newer Triton: "successfully loaded 'x'" without the version
            key = next((k for k in loading if k[0] == m["model"]), None)
        started = loading.pop(key, None) if key is not None else None
        if started is not None and pre.time >= started:
            seconds = round(pre.time - started, 6)
            ctx.emit(keys.MODEL_LOAD, seconds, pre, msg, {"model": m["model"]}, model=m["model"])


def _trt_code(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _TRT_CODE_RE.search(msg)
    if not m:
        return
    kind, detail = m["kind"].strip(), (m["detail"] or "").strip()
    attrs: dict[str, object] = {
        "trt_error_code": int(m["code"]),
        "trt_error": kind,
        "message": msg.strip()[:500],
    }
    if kind == "OutOfMemory" or (kind.startswith("Cuda") and _OOM_TEXT_RE.search(detail)):
        if not ctx.emitted_here(keys.CUDA_OOM):
            ctx.emit(keys.CUDA_OOM, None, pre, msg, {"framework": "tensorrt", **attrs})
    elif kind == "Serialization" and not ctx.emitted_here(keys.TENSORRT_ENGINE_INCOMPATIBLE):
        ctx.emit(keys.TENSORRT_ENGINE_INCOMPATIBLE, None, pre, msg, attrs)


# --- Python tracebacks -----------------------------------------------------------------------------
_EXC_RE = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Timeout|Fault|Warning)|"
    r"(?:[A-Za-z_]\w*\.)+[A-Z]\w*)(?::\s?(?P<msg>.*))?$"
)


def _traceback(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if "Traceback (most recent call last)" in msg:
        ctx.state["tb"] = ctx.index


def _exception(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    text = msg.rstrip()
    if not text or text[0].isspace() or text.startswith(("File ", "During handling", "The above exception")):
        return
    m = _EXC_RE.match(text)
    if not m:
        return
    etype = m["type"]
    in_tb = "tb" in ctx.state and ctx.index - ctx.state["tb"] < 400
    if not in_tb and not etype.endswith(("Error", "Exception")):
        return
    if etype.endswith("Warning") and not in_tb:
        return
    attrs: dict[str, object] = {"message": (m["msg"] or "").strip()[:500], "type": etype.rsplit(".", 1)[-1]}
    if in_tb:
        attrs["traceback"] = True
        ctx.state.pop("tb", None)
    ctx.emit(keys.PYTHON_EXCEPTION, etype, pre, msg, attrs)


# --- Ray OOM killer --------------------------------------------------------------------------------
_RAY_NODE_RE = re.compile(r"Memory on the node \(IP: (?P<ip>[^,]+), ID: (?P<id>\w+)\)")
_RAY_TASK_RE = re.compile(r"name=(?P<name>[^,]+), pid=(?P<pid>\d+), memory used=(?P<used>[\d.]+ ?[GMK]i?B)")
_RAY_RATIO_RE = re.compile(
    r"\((?P<ratio>0\.\d+)\), which exceeds the memory usage threshold of (?P<thr>\d+(?:\.\d+)?)"
)
_RAY_COUNT_RE = re.compile(
    r"(?P<n>\d+) Workers? \(tasks / actors\) killed due to memory pressure \(OOM\)"
    r"(?:.*?node \(ID: (?P<id>\w+), IP: (?P<ip>[\d.]+)\))?"
)

# Ray 1.x-2.0's raylet memory monitor (before the "Task was killed due to the node running low on memory"
# report): "System memory low at node with IP 10.0.0.5. Used memory (54.90GB) / total capacity (57.60GB)
# (0.95307) exceeds threshold 0.95, killing latest task with name ... and actor ID ...".
_RAY_LEGACY_RE = re.compile(
    r"System memory low at node with IP (?P<ip>[\w.:-]+?)\.? Used memory .*?\((?P<ratio>[01]\.\d+)\) "
    r"exceeds threshold (?P<thr>[01](?:\.\d+)?), killing"
)

# Ray 1.x's memory_monitor.py raises RayOutOfMemoryError in the task it stops ("More than 95% of the memory
# on node suwi is used (30.47 / 31.3 GB). The top 10 memory consumers are: ..."): the same kill by its
# memory monitor, told by the task's exception.
_RAY_OOM_ERROR_RE = re.compile(
    r"RayOutOfMemoryError: ?More than (?P<pct>\d+(?:\.\d+)?)% of the memory on node (?P<node>\S+) is used"
    r"(?: \((?P<used>[\d.]+) / (?P<total>[\d.]+) GB\))?"
)


def _ray(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    error = _RAY_OOM_ERROR_RE.search(msg)
    if error:
        told: dict[str, object] = {
            "message": msg.strip()[:500],
            "node": error["node"],
            "threshold": float(error["pct"]) / 100,
        }
        if error["used"] and error["total"] and float(error["total"]) > 0:
            told["memory_used_ratio"] = round(float(error["used"]) / float(error["total"]), 4)
        ctx.emit(keys.RAY_OOM_KILL, 1, pre, msg, told)
        return
    c = _RAY_COUNT_RE.search(msg)
    if c:
        attrs: dict[str, object] = {"count": int(c["n"]), "message": msg.strip()[:500]}
        if c["ip"]:
            attrs["node"] = c["ip"]
        ctx.emit(keys.RAY_OOM_KILL, int(c["n"]), pre, msg, attrs)
        return
    legacy = _RAY_LEGACY_RE.search(msg)
    if legacy:
        attrs = {
            "message": msg.strip()[:500],
            "node": legacy["ip"],
            "memory_used_ratio": float(legacy["ratio"]),
            "threshold": float(legacy["thr"]),
        }
        ctx.emit(keys.RAY_OOM_KILL, 1, pre, msg, attrs)
        return
    if "running low on memory" not in msg:
        return
    text = msg + " " + ctx.lookahead(3)
    attrs = {"message": msg.strip()[:500]}
    node = _RAY_NODE_RE.search(text)
    if node:
        attrs["node"] = node["ip"].strip()
    task = _RAY_TASK_RE.search(text)
    if task:
        attrs.update(
            {"process": task["name"].strip(), "pid": int(task["pid"]), "rss_bytes": parse_size(task["used"])}
        )
    ratio = _RAY_RATIO_RE.search(text)
    if ratio:
        attrs["memory_used_ratio"] = float(ratio["ratio"])
        attrs["threshold"] = float(ratio["thr"])
    ctx.emit(keys.RAY_OOM_KILL, 1, pre, msg, attrs)


# --- tokenizer, model load, exporter ----------------------------------------------------------------
# transformers refuses a tokenizer whose added_tokens.json disagrees with its vocabulary ("Non-consecutive
# added token '<unk>' found. Should have index 32000 but has index 0 in saved vocabulary."), the mark of a
# fine-tune's token files saved against another vocabulary.
_TOKENIZER_RE = re.compile(
    r"(?i)vocab(?:ulary)?[ _]size.{0,80}?(?:mismatch|does not match|doesn't match|!=|differs)|"
    r"token ids? (?:\d+ )?(?:is |are )?out of (?:vocab|range)|out of vocabulary|"
    r"tokenizer.{0,60}?(?:mismatch|does not match|incompatible)|"
    r"Non-consecutive added token .{0,80}? in saved vocabulary"
)
# Stable Diffusion web UIs print "Model loaded in 5.3s (load weights from disk: ...)" at start and
# "Weights loaded in 12.1s (...)" when the checkpoint is changed (modules/sd_models.py).
_LOAD_RE = re.compile(
    r"(?:Loading weights took|Model loading took .*? and|(?:model|weights) loaded in|"
    r"Loading model weights took|load(?:ed|ing)? model .*? in) (?P<s>[\d.]+) ?(?:s|sec|seconds)\b",
    re.I,
)
# Telegraf's nvidia_smi input (also inside the CloudWatch agent) fails a whole gather with "E!
# [inputs.nvidia_smi] Error in plugin: ..." (a value nvidia-smi printed as [N/A], a missing binary): the
# collector is broken, so the node's GPU series stop.
# Its agent refuses to start when the input cannot find nvidia-smi ("E! [telegraf] Error running agent:
# validate input plugin nvidia_smi failed because of Cannot get file's stat /usr/bin/nvidia-smi").
# nvidia_gpu_exporter (utkuozdemir) fails a scrape on a value nvidia-smi printed as [N/A] ("couldn't parse
# number from: [n/a]") and on nvidia-smi itself failing ("command failed. code: 12 | command: nvidia-smi ...",
# "command failed. stderr: err: exit status 12": no NVML library in its container). Categraf's nvidia_smi
# input ("E! failed to init input: local.nvidia_smi error: unexpected query field: ...") and
# windows_exporter's gpu collector ("couldn't initialize collector" err="error build collector gpu: ...")
# stop the same way.
_EXPORTER_RE = re.compile(
    r"(?i)dcgm-exporter|nv-hostengine|DCGM initialization error|Failed to watch metrics|DCGM_ST_\w+|"
    r"dcgm\w*: .*error|gpuobs\.exporters|Error watching fields|Failed to collect metrics|"
    r"Host engine (?:connection|is running)|Cannot initialize the hostengine|"
    r"\[inputs\.nvidia_smi\] Error in plugin|input plugin nvidia_smi failed|"
    r"couldn't parse number from|failed to init input: \S*nvidia_smi|"
    r"command failed\. (?:code: \d+ \| command: \S*nvidia-smi|stderr: ?\S* err: exit status)|"
    r"couldn't initialize collector.{0,40}collector gpu"
)
# The monitoring of GPUs seen from outside the exporter. A Go exporter that builds a metric name Prometheus
# refuses panics at registration (client_golang's "panic: descriptor Desc{fqName: \"nvidia_smi_clocks_event_
# reasons_counters_sync_boost [us]\", ...} is invalid"; nvidia_gpu_exporter on a driver that added a field):
# it exits, so every GPU series stops. kube-prometheus's TargetDown alert ("35.29% of the dcgm-exporter/
# dcgm-exporter targets in nvidia namespace are down.") and a row of Prometheus's targets page
# ("http://nvidia-smi-exporter:9454/metrics | DOWN | ...") say a scrape of the exporter fails. Each counts
# only when its metric, job, URL or labels name the GPU exporter: any exporter can panic or go down.
_EXPORTER_PANIC_RE = re.compile(r'panic: descriptor Desc\{fqName: "(?P<name>[^"]*)"')
_TARGETS_DOWN_RE = re.compile(r"[\d.]+% of the (?P<name>\S+) targets in \S+ namespace are down")
_TARGET_ROW_DOWN_RE = re.compile(r"(?P<name>https?://\S+/metrics\s*\|\s*DOWN\s*\|[^|]*)")
_GPU_EXPORTER_NAME_RE = re.compile(r"(?i)dcgm|nvidia|gpu|nvml")
# dcgm-exporter gives up on the GPUs at start-up, at any level ("Not collecting GPU metrics; Error getting
# devices count: ... NVML doesn't exist on this system"): it serves, but no GPU series. Its NvSwitch and
# NvLink forms ("Not collecting NvSwitch metrics; no switches to monitor") are normal on hosts without them.
# Its NVML provider's "Cannot init NVML library; err: ..." is the exporter's own NVML failure (an NVML error
# as well), as is nvidia_gpu_prometheus_exporter's log.Fatalf with no level word ("Couldn't initialize gonvml:
# ..."): both wordings live in cuda.py (`exporter_nvml_reporter`), which gives the NVML record its reporter.
_EXPORTER_NO_GPUS_RE = re.compile(r"Not collecting GPU metrics; \S")


def _tokenizer(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if _TOKENIZER_RE.search(msg):
        ctx.emit(keys.TOKENIZER_MISMATCH, None, pre, msg, {"message": msg.strip()[:500]})


# The checkpoint-shard progress bar of transformers and vLLM ("Loading checkpoint shards:   7% | 2/30
# [06:30<1:31:00, 195.00s/it]"), and LMDeploy's weight-loading bar ("Loading weights from safetensors:   3%|_|
# 1/38 [08:20<5:08:40, 500.55s/it]"): elapsed plus remaining is the load time it is heading for.
_SHARDS_RE = re.compile(
    r"(?:checkpoint shards|[Ll]oading (?:model )?weights(?: from \w+)?):.*?\|\s*(?P<done>\d+)/(?P<total>\d+) "
    r"\[(?P<el>[\d:]+)<(?P<left>[\d:]+)"
)


def _clock_s(text: str) -> float:
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + float(part or 0)
    return seconds


def _model_load(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    shards = _SHARDS_RE.search(msg)
    if shards:
        if shards["done"] == shards["total"] or ctx.state.get("shards_estimated"):
            return  # the finished bar says nothing new; one estimate per log is enough
        total = _clock_s(shards["el"]) + _clock_s(shards["left"])
        ctx.state["shards_estimated"] = True
        ctx.emit(keys.MODEL_LOAD, total, pre, msg, {"estimated": True, "shards": int(shards["total"])})
        return
    m = _LOAD_RE.search(msg)
    if m:
        attrs: dict[str, object] = {}
        size = parse_size(msg)
        if size:
            attrs["bytes"] = size
        model = pre.fields.get("model_id") or pre.fields.get("model")
        if model:
            attrs["model"] = model
        ctx.emit(keys.MODEL_LOAD, float(m["s"]), pre, msg, attrs)


def _exporter(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    level = pre.level or ""
    low = msg.lower()
    # A line with no log level that is a question is a person asking ("is there a way to clear xid errors in
    # the dcgm-exporter?"), not the exporter reporting: its words are no failure.
    asking = not level and asks(msg)
    erroring = not asking and (
        level in ("error", "fatal", "critical")
        or "level=error" in low
        or "level=fatal" in low
        or " error" in low
        or "failed" in low
        or "fatal" in low
    )
    logger_name = pre.fields.get("logger")
    if (
        isinstance(logger_name, str)
        and logger_name.startswith("gpuobs.exporters")
        and level in ("error", "fatal", "critical")
    ):
        ctx.emit(keys.EXPORTER_ERROR, "gpuobs", pre, msg, {"message": msg.strip()[:500]})
        return
    outside = (
        _EXPORTER_PANIC_RE.search(msg) or _TARGETS_DOWN_RE.search(msg) or _TARGET_ROW_DOWN_RE.search(msg)
    )
    if outside and _GPU_EXPORTER_NAME_RE.search(outside["name"]):
        ctx.emit(keys.EXPORTER_ERROR, "exporter", pre, msg, {"message": msg.strip()[:500]})
        return
    if (
        (erroring and _EXPORTER_RE.search(msg))
        or _EXPORTER_NO_GPUS_RE.search(msg)
        or exporter_nvml_reporter(msg)
    ):
        ctx.emit(
            keys.EXPORTER_ERROR,
            "dcgm" if "dcgm" in low or "hostengine" in low else "exporter",
            pre,
            msg,
            {"message": msg.strip()[:500]},
        )


# --- load shedding, killed processes, Slurm, DCGM health ------------------------------------------------
# Ray Serve's refusal names its limit beside the queue's length ("num_queued_requests=1,
# max_queued_requests=1"); the limit's name alone is a setting talked about (a feature request, the docs).
# Ollama's scheduler refuses past OLLAMA_MAX_QUEUE with "server busy, please try again.  maximum pending
# requests exceeded"; Knative's queue-proxy and activator answer 503 "pending request queue full".
# TorchServe's frontend answers 503 ServiceUnavailableException "Model \"m\" has no worker to serve inference
# request. Please use scale workers API to add workers." whenever it cannot queue a job: its job queue
# (job_queue_size) is full, or no worker is up. Azure ML online endpoints answer 429 "Too many pending
# requests" past 2 x max_concurrent_requests_per_instance x instances.
_NO_WORKER_RE = re.compile(r"(?i)has no worker to serve inference request")
_SHED_RE = re.compile(
    r"(?i)dropped due to backpressure|exceeds maximum queue size|model is overloaded|"
    r"\b429 Too Many Requests\b|request queue is full|num_queued_requests=\d+, max_queued_requests=\d+|"
    r"maximum pending requests exceeded|pending request queue full|Too many pending requests|"
    + _NO_WORKER_RE.pattern.removeprefix("(?i)")
)
_QUEUED_RE = re.compile(r"num_queued_requests=(?P<q>\d+), max_queued_requests=(?P<m>\d+)")
# TorchServe's refusal also answers every request to a model whose workers died ("Backend worker process
# died.", "Worker disconnected. WORKER_STOPPED", "Load model failed"): with such a line in the same log the
# refusal is the dead worker's consequence, not a full queue.
_TS_WORKER_DOWN_RE = re.compile(
    r"Backend worker process died|WORKER_STOPPED|Load model failed|Backend worker error"
)


def _shed(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if not _SHED_RE.search(msg):
        return
    if _NO_WORKER_RE.search(msg) and _torchserve_worker_down(ctx):
        return
    attrs: dict[str, object] = {"message": msg.strip()[:500]}
    q = _QUEUED_RE.search(msg)
    if q:
        attrs["queued"], attrs["max_queued"] = int(q["q"]), int(q["m"])
    ctx.emit(keys.REQUEST_REJECTED, "queue_full", pre, msg, attrs)


def _torchserve_worker_down(ctx: ParseContext) -> bool:
    """Whether the log says a TorchServe worker died (checked once per log)."""
    if "ts_worker_down" not in ctx.state:
        ctx.state["ts_worker_down"] = any(_TS_WORKER_DOWN_RE.search(line) for line in ctx.lines)
    return bool(ctx.state["ts_worker_down"])


# A SIGKILL with no reason given: the shell's `Killed` (also `bash: line 1: 123 Killed  python x.py`),
# torch elastic's `exitcode: -9`, docker's exit code 137, a pod status's `exitCode: 137` (YAML / JSON),
# PyTorch's DataLoader reporting a worker's death by signal (`DataLoader worker (pid 123) is killed by
# signal: Killed.`, strsignal(SIGKILL) being "Killed"; a bus error there is the shm failure, read elsewhere).
# Go's os/exec ("exit status 137"), Docker Compose ("<service> exited with code 137") and container tools
# ("status code 137") say 128 + SIGKILL the same way. Flyte's pod plugin reports a task pod's container by its
# terminated state ("[<container>] terminated with exit code (137). Reason [Error]. Message: ..."): a
# container killed.
_KILLED_RE = re.compile(
    r"^(?:.*?\b\d+\]?\+?\s+)?Killed(?:\s+(?P<cmd>\S.*))?$|exitcode\s*:\s*-9\b|Signal 9 \(SIGKILL\) received|"
    r"(?:exited with(?: code)?|[Ee]xit ?[Cc]ode\"?:?|[Ee]xit status|[Ss]tatus code) ?137\b|"
    r"\bkilled by signal: Killed\b|"
    r"(?P<pod>\] terminated with exit code \(137\))"
)
# A line that places the kill in a container (Docker, a pod) names that context: the container's memory
# limit (its cgroup's OOM killer) is then the likelier sender than the machine's.
_CONTAINER_RE = re.compile(r"(?i)\b(?:containers?|pods?|docker|kubernetes|k8s|kubelet|podman|containerd)\b")


def _killed(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    text = msg.strip()
    m = _KILLED_RE.search(text)
    if m is None or ctx.emitted_here(keys.HOST_OOM_KILL):
        return
    if negated(text[: m.start()].lower()):
        return  # "the status does not have the exit code 137", "it never exited with code 137": denied
    if text.startswith("Killed") and m["cmd"] and not m["cmd"].startswith(("python", "/", "torchrun", "./")):
        return  # "Killed process 123 (x)" is the kernel's OOM report; prose is not a shell's verdict
    attrs: dict[str, object] = {"message": text[:500]}
    if m["cmd"]:
        attrs["process"] = m["cmd"].split()[0]
    if m["pod"] or _CONTAINER_RE.search(text):
        attrs["context"] = "container"
    ctx.emit(keys.PROCESS_KILLED, "SIGKILL", pre, msg, attrs)


# Slurm: `srun: error: node12: task 3: Killed | Out Of Memory` and slurmstepd's cgroup OOM report.
_SRUN_RE = re.compile(
    r"srun: error: (?P<node>[\w.-]+): tasks? (?P<task>[\d,-]+): (?P<what>Killed|Out Of Memory)"
)
_STEPD_OOM_RE = re.compile(r"slurmstepd(?:-[\w.-]+)?: error: Detected (?P<n>\d+) oom[-_]kill event")


def _slurm(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _SRUN_RE.search(msg)
    if m:
        if m["what"] == "Killed":
            ctx.emit(keys.PROCESS_KILLED, "SIGKILL", pre, msg, {"task": m["task"]}, host=m["node"])
        else:
            found: dict[str, object] = {"constraint": "CONSTRAINT_MEMCG", "memcg": "slurm"}
            found["message"] = msg.strip()[:500]
            ctx.emit(keys.HOST_OOM_KILL, None, pre, msg, found, host=m["node"])
        return
    o = _STEPD_OOM_RE.search(msg)
    if o:
        attrs: dict[str, object] = {
            "constraint": "CONSTRAINT_MEMCG",
            "memcg": "slurm",
            "count": int(o["n"]),
            "message": msg.strip(),
        }
        ctx.emit(keys.HOST_OOM_KILL, None, pre, msg, attrs)


# kubelet's OOM watcher (pkg/kubelet/oom): an OOM kill whose victim is not in a pod's cgroup is recorded on
# the node as a SystemOOM event, "System OOM encountered, victim process: X, pid: N": the node ran out of
# memory, not a container's limit (whose kill shows as OOMKilled on the pod).
_SYSTEM_OOM_RE = re.compile(
    r"System OOM encountered(?:, victim process: (?P<proc>[^,\s]+)(?:, pid: (?P<pid>\d+))?)?"
)


def _system_oom(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _SYSTEM_OOM_RE.search(msg)
    if m is None or ctx.emitted_here(keys.HOST_OOM_KILL):
        return
    attrs: dict[str, object] = {"reporter": "kubelet", "message": msg.strip()[:500]}
    if m["proc"]:
        attrs["process"] = m["proc"]
    if m["pid"]:
        attrs["pid"] = int(m["pid"])
    ctx.emit(keys.HOST_OOM_KILL, None, pre, msg, attrs)


# An uncorrectable ECC error reported against one GPU, outside the kernel log: DCGM's health check
# (dcgm_errors.h DCGM_FR_VOLATILE_DBE_DETECTED "Detected %d volatile double-bit ECC error(s) in GPU %u."), a
# health agent's or a person's report bound to a GPU by its index ("uncorrectable ECC errors on GPU 3") or
# told by a reporting verb on a line that names a GPU ("the node reports uncorrectable ECC errors after adding
# a second GPU"). The words alone are ambiguous in real text (a host DIMM's uncorrectable ECC, documentation,
# a question): a GPU binding or a report is what makes them a fact. Read as that GPU's volatile DBE count.
_ECC_WORDS = r"(?:uncorrectable|uncorrected|double[- ]bit)(?: volatile)? (?:ECC|memory) errors?(?:\(s\))?"
_ECC_DCGM_RE = re.compile(
    r"(?i)Detected (?P<n>\d+) volatile double-bit ECC error\(s\) in GPU (?P<gpu>\d+)"
)
_ECC_ON_GPU_RE = re.compile(
    rf"(?i)(?:\b(?P<n>\d+|an?|zero|no) )?{_ECC_WORDS}"
    r"[^.;:?!]{0,40}?\b(?:on|in|at|of|from) GPU ?#?(?P<gpu>\d+)\b"
)
# the GPU as the sentence's subject (DCGM_FR_UNCORRECTABLE_ROW_REMAP "GPU %u had uncorrectable memory errors
# and %u rows were remapped"; "GPU 3 has uncorrectable ECC errors")
_ECC_GPU_HAD_RE = re.compile(
    rf"(?i)\bGPU ?#?(?P<gpu>\d+)(?:'s)?:? (?:had|has|have|reported|reports|shows|showed|got|hit|logged) "
    rf"(?:(?P<n>\d+|an?|zero|no) )?{_ECC_WORDS}"
)
_ECC_REPORTED_RE = re.compile(
    r"(?i)\b(?:reports?|reported|reporting|detected|detects|shows?|showed|showing|throws?|throwing|threw|"
    r"logged|logs|logging|raised|raises|hit|hits|got|gets|getting|seeing|saw|encountered|encounters)"
    rf" (?:(?P<n>\d+|an?|zero|no) )?{_ECC_WORDS}"
)
_GPU_WORD_RE = re.compile(r"\bGPUs?\b", re.IGNORECASE)
_NO_COUNT = frozenset({"0", "zero", "no"})
_REMAP_FAILED_RE = re.compile(r"(?i)^[^.;]{0,20}\brow remapping failed")
# the sentence so far is the condition of another ("If the node reports ... on GPU 3, drain it")
_SUPPOSED_RE = re.compile(r"(?i)(?:^|[,;:.!]\s*)(?:if|whether|unless|in case|once|when)\b[^,;:.!]*$")


def _gpu_ecc_report(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    from gpuobs.rca.parsers.metrics import metric_evidence

    m = _ECC_DCGM_RE.search(msg) or _ECC_ON_GPU_RE.search(msg) or _ECC_GPU_HAD_RE.search(msg)
    if m is None:
        m = _ECC_REPORTED_RE.search(msg)
        if m is None or not _GPU_WORD_RE.search(msg):
            return
    count = (m["n"] or "1").lower()
    rest = msg[m.end():]
    before = msg[: m.start()]
    if count in _NO_COUNT or negated(before.lower()) or _SUPPOSED_RE.search(before) or "?" in rest:
        return  # a count read and found empty, a supposition or a question: no error told
    labels = {"gpu": m.groupdict()["gpu"]} if m.groupdict().get("gpu") else {}
    readings = [(g.ECC_DBE_VOLATILE.native, float(count) if count.isdecimal() else 1.0)]
    if _REMAP_FAILED_RE.search(rest):  # DCGM_FR_ROW_REMAP_FAILURE: no spare row was left for them
        readings.append((g.ROW_REMAP_FAILURE.native, 1.0))
    told = {"message": msg.strip()[:500]}
    for name, value in readings:
        record = metric_evidence(name, value, labels, ctx.source, pre.time, "sample", told)
        ctx.out.append(replace(record, raw=msg.strip()[:2000], attrs={**record.attrs, "line": ctx.index + 1}))


# DCGM health / diag: "Detected clocks event due to thermal violation in GPU 2" (older: "clocks throttling");
# the diagnostic's time the clocks spent held back by temperature (dcgm_errors.h DCGM_FR_THERMAL_VIOLATIONS
# "There were thermal violations totaling %.1f seconds for GPU %u", DCGM_FR_THERMAL_VIOLATIONS_TS "Thermal
# violations totaling %.1f seconds started at %.1f seconds into the test for GPU %u").
_DCGM_CLOCKS_RE = re.compile(
    r"(?i)clocks? (?:event|throttl\w*)s? due to (?P<why>thermal|power) violations?(?: in GPU (?P<gpu>\d+))?|"
    r"(?P<why2>thermal) violations totaling [\d.]+ seconds (?:started at [\d.]+ seconds into the test )?"
    r"for GPU (?P<gpu2>\d+)"
)


# DCGM's diagnostic past its temperature bar (dcgm_errors.h DCGM_FR_TEMP_VIOLATION "Temperature %lld of GPU %u
# exceeded user-specified maximum allowed temperature %lld"): the die at its limit, as nvidia-smi -q reads it.
_DCGM_TEMP_RE = re.compile(
    r"Temperature (?P<t>\d+) of GPU (?P<gpu>\d+) exceeded user-specified maximum allowed temperature "
    r"(?P<max>\d+)"
)


def _dcgm_temperature(msg: str, pre: LinePrefix, ctx: ParseContext) -> bool:
    """Whether the line was DCGM's temperature violation (read as the GPU's temperature at its limit)."""
    from gpuobs.rca.parsers.metrics import metric_evidence

    m = _DCGM_TEMP_RE.search(msg)
    if m is None:
        return False
    extra = {"message": msg.strip()[:500], "limit_c": float(m["max"]), "at_limit": True}
    record = metric_evidence(
        g.GPU_TEMPERATURE.native, float(m["t"]), {"gpu": m["gpu"]}, ctx.source, pre.time, "sample", extra
    )
    ctx.out.append(replace(record, raw=msg.strip()[:2000], attrs={**record.attrs, "line": ctx.index + 1}))
    return True


def _dcgm_health(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if _dcgm_temperature(msg, pre, ctx):
        return
    m = _DCGM_CLOCKS_RE.search(msg)
    if m is None:
        return
    from gpuobs.rca.parsers.metrics import metric_evidence

    why, gpu = m["why"] or m["why2"], m["gpu"] or m["gpu2"]
    reason = "sw_thermal_slowdown" if why.lower() == "thermal" else "sw_power_cap"
    labels = {"reason": reason}
    if gpu:
        labels["gpu"] = gpu
    record = metric_evidence(
        g.CLOCK_EVENT_ACTIVE.native,
        1.0,
        labels,
        ctx.source,
        pre.time,
        "sample",
        {"message": msg.strip()[:500]},
    )
    ctx.out.append(replace(record, raw=msg.strip()[:2000], attrs={**record.attrs, "line": ctx.index + 1}))


# --- fallback: an error/fatal line nothing else recognised ---------------------------------------------
_LEVEL_IN_TEXT_RE = re.compile(
    r"\b(?:level=|\"level\":\s*\")?(?P<lvl>ERROR|FATAL|CRITICAL|error|fatal|critical)\b"
)


def _fallback(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    level = pre.level
    if level not in ("error", "fatal", "critical"):
        m = _LEVEL_IN_TEXT_RE.search(msg[:40])
        if not m or (m["lvl"].islower() and "level=" not in msg[:40]):
            return
        level = m["lvl"].lower()
    if not msg.strip() or msg.lstrip().startswith(('File "', "^", "~")):
        return
    ctx.emit(keys.LOG_LINE, level, pre, msg, {"message": msg.strip()[:500]})


PARSERS: list[Trigger] = [
    (
        (
            "EngineDead",
            "EngineCore",
            "ShardFailed",
            "ShardCannotStart",
            "sigquit from a child",
            "one child failed",
            "Engine loop",
            "Engine core",
            "Engine process",
            "Background loop",
            "Engine iteration",
            "preempted",
            "Preempt",
            "stored in KV cache",
            "KV cache is needed",
            "cache blocks",
            "nsufficient KV cache",
            "could not be created: KV cache",
            "free space in the KV cache",
            "KV cache slot for ubatch",
            "memory slot for batch",
            "compared to KV size",
            "maxTokensInPagedKvCache",
            "only one request",
            " is stalled",
            " is dead",
        ),
        _vllm,
    ),
    (
        (" reqs, ",),
        _stats,
    ),
    (
        (
            "ModelImporter",
            "onnx2trt",
            "parsing node",
            "UNSUPPORTED_NODE",
            "ONNX",
            "onnx",
            "engine plan",
            "Version tag",
            "deserializeCudaEngine",
            "Serialization assertion",
            "TensorRT",
            "magicTagRead",
            "parser->parse",
            "Serialization Error",
            "coreReadArchive",
            "size of serialized engine",
        ),
        _tensorrt,
    ),
    (
        (
            "StatusCode.",
            "rpc error: code",
            "grpc_status",
            "DEADLINE_EXCEEDED",
            "RESOURCE_EXHAUSTED",
            "deadline exceeded",
        ),
        _grpc,
    ),
    (("failed to load '", "loading: ", "successfully loaded '"), _triton),
    (("Error Code ",), _trt_code),
    (("Traceback (most recent call last)",), _traceback),
    (("Error", "Exception", "Warning", "SystemExit", "KeyboardInterrupt"), _exception),
    (
        (
            "running low on memory",
            "killed due to memory pressure",
            "System memory low at node",
            "RayOutOfMemoryError",
        ),
        _ray,
    ),
    (("ocab", "okenizer", "oken id"), _tokenizer),
    (
        ("weights took", "loading took", "loaded in", "oading model", "checkpoint shards:", "oading weights"),
        _model_load,
    ),
    (
        (
            "backpressure",
            "maximum queue size",
            "overloaded",
            "Too Many Requests",
            "queue is full",
            "max_queued_requests",
            "pending requests exceeded",
            "request queue full",
            "no worker to serve",
            "many pending requests",
        ),
        _shed,
    ),
    (
        ("Killed", "exitcode", "SIGKILL", "code 137", "Code: 137", "code: 137", "status 137", "code (137)"),
        _killed,
    ),
    (("srun: error", "oom-kill event", "oom_kill event"), _slurm),
    (("System OOM encountered",), _system_oom),
    (("due to thermal", "due to power", "violations totaling", "maximum allowed temperature"), _dcgm_health),
    (
        (
            "uncorrectable ECC",
            "Uncorrectable ECC",
            "uncorrectable ecc",
            "uncorrected ECC",
            "Uncorrected ECC",
            "double-bit ECC",
            "Double-bit ECC",
            "double bit ECC",
            "Double Bit ECC",
            "uncorrectable memory error",
            "Uncorrectable memory error",
        ),
        _gpu_ecc_report,
    ),
    (
        (
            "dcgm",
            "DCGM",
            "hostengine",
            "gpuobs.exporters",
            "watch metrics",
            "watching fields",
            "collect metrics",
            "Host engine",
            "[inputs.nvidia_smi]",
            "plugin nvidia_smi",
            "collecting GPU metrics",
            "Cannot init NVML library",
            "initialize gonvml",
            "couldn't parse number",
            "command failed.",
            "failed to init input",
            "initialize collector",
            "Desc{fqName",
            "namespace are down",
            "| DOWN |",
        ),
        _exporter,
    ),
]

# Parsers whose message is always one whole line: a line only they were triggered by is never re-read
# joined with its neighbours (a vLLM log has a stats line every few seconds; re-reading each cost
# ~0.5 s per 100k lines).
LINE_COMPLETE: tuple[LineParser, ...] = (_stats,)
# Parsers with a check that a line only they were triggered by gives no record at all (theirs or the
# fallback's): `parse_lines` skips such a line without peeling its prefix.
QUIET_LINES: dict[LineParser, Callable[[str], bool]] = {_stats: quiet_stats_line}

FALLBACK: Trigger = (
    (
        "ERROR",
        "FATAL",
        "CRITICAL",
        "level=error",
        "level=fatal",
        '"error"',
        '"fatal"',
        '"critical"',
        "[E",
        ":err ",
        "[error]",
        "[fatal]",
    ),
    _fallback,
)
