"""The CUDA runtime error catalog (cudaError_t of CUDA 12/13): code, name, meaning and category.

One table shared by the kernel launcher (which maps a failed launch to a code) and the RCA engine
(which parses logs). Names are accepted in the runtime spelling (`cudaErrorIllegalAddress`) and the
driver-API spelling (`CUDA_ERROR_ILLEGAL_ADDRESS`), case-insensitively; `from_text` also recognises
the `cudaGetErrorString` messages that PyTorch and Triton put in their exceptions
("CUDA error: an illegal memory access was encountered").

Categories:
- `application_bug`: the program did something wrong (bad pointer, bad launch configuration,
  device-side assert); fix the code or its inputs.
- `resource`: a limit was hit (memory, launch resources, peers, MPS clients); retry smaller or
  elsewhere.
- `hardware`: the GPU or its links reported a fault (uncorrectable ECC, NVLink, contained error);
  drain the node, check XIDs.
- `driver`: the driver, runtime or system configuration is wrong or unavailable (version
  mismatch, no device, missing JIT, MPS daemon); fix the node's software stack.

`sticky` marks errors after which the CUDA context is unusable: the process must restart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "APPLICATION_BUG",
    "CATEGORIES",
    "DRIVER",
    "HARDWARE",
    "RESOURCE",
    "CudaError",
    "all_errors",
    "by_code",
    "by_name",
    "from_text",
]

APPLICATION_BUG = "application_bug"
RESOURCE = "resource"
HARDWARE = "hardware"
DRIVER = "driver"
CATEGORIES = (APPLICATION_BUG, RESOURCE, HARDWARE, DRIVER)


@dataclass(frozen=True)
class CudaError:
    """One value of the CUDA runtime enum `cudaError_t`.

    `name` is the runtime spelling; `driver_name` the driver-API (CUresult) spelling of the same
    number; `message` the text `cudaGetErrorString` returns where it is well known (empty when not).
    """

    code: int
    name: str
    meaning: str
    category: str
    sticky: bool = False
    message: str = ""

    @property
    def driver_name(self) -> str:
        """The driver-API spelling, e.g. `CUDA_ERROR_ILLEGAL_ADDRESS` for 700."""
        if self.code in _DRIVER_NAMES:
            return _DRIVER_NAMES[self.code]
        stem = self.name.removeprefix("cudaError").removeprefix("cuda")
        return "CUDA_ERROR_" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stem).upper()


_A, _R, _H, _D = APPLICATION_BUG, RESOURCE, HARDWARE, DRIVER

# (code, runtime name, meaning, category, sticky, cudaGetErrorString message)
_TABLE: tuple[tuple[int, str, str, str, bool, str], ...] = (
    (0, "cudaSuccess", "No error; for queries, the operation is complete.", _A, False, "no error"),
    (1, "cudaErrorInvalidValue", "A parameter of the API call is out of its acceptable range.", _A, False,
     "invalid argument"),
    (2, "cudaErrorMemoryAllocation", "Not enough device memory or other resources to allocate.", _R, False,
     "out of memory"),
    (3, "cudaErrorInitializationError", "The CUDA driver and runtime could not be initialized.", _D, False,
     "initialization error"),
    (4, "cudaErrorCudartUnloading", "CUDA call during process shutdown, after the driver was unloaded.",
     _A, False, "driver shutting down"),
    (5, "cudaErrorProfilerDisabled", "The profiler is not initialized for this run (external profiler).",
     _A, False, ""),
    (6, "cudaErrorProfilerNotInitialized", "Deprecated since CUDA 5.0: profiler not initialized.", _A, False,
     ""),
    (7, "cudaErrorProfilerAlreadyStarted", "Deprecated since CUDA 5.0: profiler already started.", _A, False,
     ""),
    (8, "cudaErrorProfilerAlreadyStopped", "Deprecated since CUDA 5.0: profiler already stopped.", _A, False,
     ""),
    (9, "cudaErrorInvalidConfiguration",
     "The launch asks for resources the device can never provide (threads, blocks, shared memory).",
     _A, False, "invalid configuration argument"),
    (12, "cudaErrorInvalidPitchValue", "A pitch-related parameter is out of range.", _A, False,
     "invalid pitch argument"),
    (13, "cudaErrorInvalidSymbol", "The symbol name or identifier is not valid.", _A, False,
     "invalid device symbol"),
    (16, "cudaErrorInvalidHostPointer", "Deprecated since CUDA 10.1: invalid host pointer.", _A, False, ""),
    (17, "cudaErrorInvalidDevicePointer", "Deprecated since CUDA 10.1: invalid device pointer.", _A, False,
     ""),
    (18, "cudaErrorInvalidTexture", "The texture is not valid.", _A, False, "invalid texture reference"),
    (19, "cudaErrorInvalidTextureBinding", "The texture binding is not valid.", _A, False, ""),
    (20, "cudaErrorInvalidChannelDescriptor", "The channel format descriptor is not valid.", _A, False, ""),
    (21, "cudaErrorInvalidMemcpyDirection", "The memcpy direction is not a cudaMemcpyKind.", _A, False,
     "invalid copy direction for memcpy"),
    (22, "cudaErrorAddressOfConstant", "Deprecated since CUDA 3.1: address of a constant taken.", _A, False,
     ""),
    (23, "cudaErrorTextureFetchFailed", "Deprecated since CUDA 3.1: texture fetch failed.", _A, False, ""),
    (24, "cudaErrorTextureNotBound", "Deprecated since CUDA 3.1: texture not bound.", _A, False, ""),
    (25, "cudaErrorSynchronizationError", "Deprecated since CUDA 3.1: synchronization failed.", _A, False,
     ""),
    (26, "cudaErrorInvalidFilterSetting", "Linear filtering on a non-float texture.", _A, False, ""),
    (27, "cudaErrorInvalidNormSetting", "Non-float texture read as normalized float.", _A, False, ""),
    (28, "cudaErrorMixedDeviceExecution", "Deprecated since CUDA 3.1: mixed device and emulation code.",
     _A, False, ""),
    (31, "cudaErrorNotYetImplemented", "Deprecated since CUDA 4.1: API not yet implemented.", _D, False, ""),
    (32, "cudaErrorMemoryValueTooLarge", "Deprecated since CUDA 3.1: emulated pointer out of range.", _A,
     False, ""),
    (34, "cudaErrorStubLibrary", "The loaded CUDA driver is a stub library, not a real driver.", _D, False,
     "CUDA driver is a stub library"),
    (35, "cudaErrorInsufficientDriver", "The installed driver is older than the CUDA runtime.", _D, False,
     "CUDA driver version is insufficient for CUDA runtime version"),
    (36, "cudaErrorCallRequiresNewerDriver", "The API call needs a newer CUDA driver.", _D, False,
     "API call is not supported in the installed CUDA driver"),
    (37, "cudaErrorInvalidSurface", "The surface is not valid.", _A, False, ""),
    (43, "cudaErrorDuplicateVariableName", "Several global/constant variables share one name.", _A, False,
     ""),
    (44, "cudaErrorDuplicateTextureName", "Several textures share one name.", _A, False, ""),
    (45, "cudaErrorDuplicateSurfaceName", "Several surfaces share one name.", _A, False, ""),
    (46, "cudaErrorDevicesUnavailable",
     "All devices are busy or unavailable (exclusive compute mode, memory held by other work).",
     _R, False, "CUDA-capable device(s) is/are busy or unavailable"),
    (49, "cudaErrorIncompatibleDriverContext", "The current driver context is incompatible with the runtime.",
     _A, False, ""),
    (52, "cudaErrorMissingConfiguration", "Kernel launched without a launch configuration.", _A, False, ""),
    (53, "cudaErrorPriorLaunchFailure", "Deprecated since CUDA 3.1: a previous launch failed.", _A, False,
     ""),
    (65, "cudaErrorLaunchMaxDepthExceeded", "Device-side launch exceeds the maximum nesting depth.", _R,
     False, ""),
    (66, "cudaErrorLaunchFileScopedTex", "Device-side launch of a kernel using file-scoped textures.", _A,
     False, ""),
    (67, "cudaErrorLaunchFileScopedSurf", "Device-side launch of a kernel using file-scoped surfaces.", _A,
     False, ""),
    (68, "cudaErrorSyncDepthExceeded", "Device-side synchronize deeper than cudaLimitDevRuntimeSyncDepth.",
     _R, False, ""),
    (69, "cudaErrorLaunchPendingCountExceeded",
     "Device-side launches exceed cudaLimitDevRuntimePendingLaunchCount.", _R, False, ""),
    (98, "cudaErrorInvalidDeviceFunction",
     "The device function does not exist or is not built for this arch.", _A, False,
     "invalid device function"),
    (100, "cudaErrorNoDevice", "No CUDA-capable device was detected by the driver.", _D, False,
     "no CUDA-capable device is detected"),
    (101, "cudaErrorInvalidDevice", "The device ordinal is not a valid CUDA device.", _A, False,
     "invalid device ordinal"),
    (102, "cudaErrorDeviceNotLicensed", "The device has no valid grid license.", _D, False, ""),
    (103, "cudaErrorSoftwareValidityNotEstablished", "Runtime or driver self-tests failed.", _D, False, ""),
    (127, "cudaErrorStartupFailure", "Internal startup failure in the CUDA runtime.", _D, False, ""),
    (200, "cudaErrorInvalidKernelImage", "The device kernel image is invalid.", _A, False,
     "device kernel image is invalid"),
    (201, "cudaErrorDeviceUninitialized",
     "No valid context is bound (destroyed context, mixed API versions).", _A, False,
     "invalid device context"),
    (205, "cudaErrorMapBufferObjectFailed", "The buffer object could not be mapped.", _A, False, ""),
    (206, "cudaErrorUnmapBufferObjectFailed", "The buffer object could not be unmapped.", _A, False, ""),
    (207, "cudaErrorArrayIsMapped", "The array is mapped and cannot be destroyed.", _A, False, ""),
    (208, "cudaErrorAlreadyMapped", "The resource is already mapped.", _A, False, ""),
    (209, "cudaErrorNoKernelImageForDevice",
     "No kernel image in the binary suits this device's architecture.",
     _D, False, "no kernel image is available for execution on the device"),
    (210, "cudaErrorAlreadyAcquired", "The resource has already been acquired.", _A, False, ""),
    (211, "cudaErrorNotMapped", "The resource is not mapped.", _A, False, ""),
    (212, "cudaErrorNotMappedAsArray", "The mapped resource is not available as an array.", _A, False, ""),
    (213, "cudaErrorNotMappedAsPointer", "The mapped resource is not available as a pointer.", _A, False, ""),
    (214, "cudaErrorECCUncorrectable", "An uncorrectable ECC error was detected during execution.", _H, True,
     "uncorrectable ECC error encountered"),
    (215, "cudaErrorUnsupportedLimit", "The cudaLimit is not supported by the device.", _A, False, ""),
    (216, "cudaErrorDeviceAlreadyInUse", "An exclusive-thread device is already used by another thread.", _R,
     False, ""),
    (217, "cudaErrorPeerAccessUnsupported", "P2P access is not supported between these devices.", _H, False,
     "peer access is not supported between these two devices"),
    (218, "cudaErrorInvalidPtx", "PTX JIT compilation failed.", _D, False, "a PTX JIT compilation failed"),
    (219, "cudaErrorInvalidGraphicsContext", "Error with the OpenGL or DirectX context.", _A, False, ""),
    (220, "cudaErrorNvlinkUncorrectable", "An uncorrectable NVLink error was detected during execution.", _H,
     True, "uncorrectable NVLink error detected during the execution"),
    (221, "cudaErrorJitCompilerNotFound", "The PTX JIT compiler library was not found.", _D, False,
     "PTX JIT compiler library not found"),
    (222, "cudaErrorUnsupportedPtxVersion",
     "The PTX was built by a toolchain newer than the driver supports.",
     _D, False, "the provided PTX was compiled with an unsupported toolchain."),
    (223, "cudaErrorJitCompilationDisabled", "JIT compilation of PTX is disabled.", _D, False,
     "PTX JIT compilation was disabled"),
    (224, "cudaErrorUnsupportedExecAffinity", "The execution affinity is not supported by the device.", _A,
     False, ""),
    (225, "cudaErrorUnsupportedDevSideSync", "PTX contains an unsupported device-side cudaDeviceSynchronize.",
     _A, False, ""),
    (226, "cudaErrorContained",
     "A device exception was contained by the GPU's error containment (bad peer access over NVLink "
     "or some hardware errors); the process must restart.", _H, True, ""),
    (300, "cudaErrorInvalidSource", "The device kernel source is invalid.", _A, False, ""),
    (301, "cudaErrorFileNotFound", "The file was not found.", _A, False, "file not found"),
    (302, "cudaErrorSharedObjectSymbolNotFound", "A link to a shared object failed to resolve.", _D, False,
     ""),
    (303, "cudaErrorSharedObjectInitFailed", "Initialization of a shared object failed.", _D, False, ""),
    (304, "cudaErrorOperatingSystem", "An OS call failed.", _D, False,
     "OS call failed or operation not supported on this OS"),
    (400, "cudaErrorInvalidResourceHandle", "A stream, event or other handle is not valid.", _A, False,
     "invalid resource handle"),
    (401, "cudaErrorIllegalState", "A resource is not in a valid state for the operation.", _A, False, ""),
    (402, "cudaErrorLossyQuery", "Introspection would discard semantically important information.", _A,
     False, ""),
    (500, "cudaErrorSymbolNotFound", "A named symbol was not found.", _A, False, "named symbol not found"),
    (600, "cudaErrorNotReady", "Asynchronous work has not completed yet (not an error for queries).", _A,
     False, "device not ready"),
    (700, "cudaErrorIllegalAddress",
     "A kernel loaded or stored at an invalid memory address; the process must restart.", _A, True,
     "an illegal memory access was encountered"),
    (701, "cudaErrorLaunchOutOfResources",
     "Launch lacks resources: too many registers for the block size, or too many arguments.", _R, False,
     "too many resources requested for launch"),
    (702, "cudaErrorLaunchTimeout", "The kernel ran past the watchdog timeout; the process must restart.",
     _A, True, "the launch timed out and was terminated"),
    (703, "cudaErrorLaunchIncompatibleTexturing", "The launch uses an incompatible texturing mode.", _A,
     False, ""),
    (704, "cudaErrorPeerAccessAlreadyEnabled", "Peer access is already enabled.", _A, False,
     "peer access is already enabled"),
    (705, "cudaErrorPeerAccessNotEnabled", "Peer access has not been enabled.", _A, False,
     "peer access has not been enabled"),
    (708, "cudaErrorSetOnActiveProcess", "Device flags set after the runtime was initialized.", _A, False,
     "cannot set while device is active in this process"),
    (709, "cudaErrorContextIsDestroyed", "The current context was destroyed or is not initialized.", _A,
     False, "context is destroyed"),
    (710, "cudaErrorAssert", "A device-side assert fired; the process must restart.", _A, True,
     "device-side assert triggered"),
    (711, "cudaErrorTooManyPeers", "Hardware resources for peer access are exhausted.", _R, False,
     "peer mapping resources exhausted"),
    (712, "cudaErrorHostMemoryAlreadyRegistered", "The host memory range is already registered.", _A, False,
     "part or all of the requested memory range is already mapped"),
    (713, "cudaErrorHostMemoryNotRegistered", "The host pointer is not a registered region.", _A, False,
     "pointer does not correspond to a registered memory region"),
    (714, "cudaErrorHardwareStackError",
     "Call-stack error during a kernel (stack corruption or overflow); the process must restart.", _A, True,
     "hardware stack error"),
    (715, "cudaErrorIllegalInstruction", "A kernel hit an illegal instruction; the process must restart.",
     _A, True, "an illegal instruction was encountered"),
    (716, "cudaErrorMisalignedAddress", "A kernel accessed a misaligned address; the process must restart.",
     _A, True, "misaligned address"),
    (717, "cudaErrorInvalidAddressSpace",
     "A kernel used an address outside the space an instruction allows; the process must restart.", _A,
     True, "operation not supported on global/shared address space"),
    (718, "cudaErrorInvalidPc", "The device hit an invalid program counter; the process must restart.", _A,
     True, "invalid program counter"),
    (719, "cudaErrorLaunchFailure",
     "A device exception during a kernel (often an invalid pointer or out-of-bounds shared memory); "
     "the process must restart.", _A, True, "unspecified launch failure"),
    (720, "cudaErrorCooperativeLaunchTooLarge", "A cooperative launch has more blocks than can be resident.",
     _R, False, "too many blocks in cooperative launch"),
    (721, "cudaErrorTensorMemoryLeak", "A kernel exited without freeing its tensor memory; the process must "
     "restart.", _A, True, ""),
    (800, "cudaErrorNotPermitted", "The operation is not permitted.", _A, False, "operation not permitted"),
    (801, "cudaErrorNotSupported", "The operation is not supported on this system or device.", _D, False,
     "operation not supported"),
    (802, "cudaErrorSystemNotReady",
     "The system is not ready for CUDA work (e.g. fabric manager or other daemon not running).", _D, False,
     "system not yet initialized"),
    (803, "cudaErrorSystemDriverMismatch", "Display driver and CUDA driver versions do not match.", _D, False,
     "system has unsupported display driver / cuda driver combination"),
    (804, "cudaErrorCompatNotSupportedOnDevice", "Forward compatibility is not supported on this hardware.",
     _D, False, "forward compatibility was attempted on non supported HW"),
    (805, "cudaErrorMpsConnectionFailed", "The MPS client failed to connect to the MPS daemon or server.", _D,
     False, "MPS client failed to connect to the MPS control daemon or the MPS server"),
    (806, "cudaErrorMpsRpcFailure", "An RPC between the MPS server and client failed.", _D, False,
     "the remote procedural call between the MPS server and the MPS client failed"),
    (807, "cudaErrorMpsServerNotReady", "The MPS server is not ready (possibly recovering).", _D, False,
     "MPS server is not ready to accept new MPS client requests"),
    (808, "cudaErrorMpsMaxClientsReached", "Hardware resources for another MPS client are exhausted.", _R,
     False, "the hardware resources required to create MPS client have been exhausted"),
    (809, "cudaErrorMpsMaxConnectionsReached", "Hardware resources for device connections are exhausted.",
     _R, False, "the hardware resources required to support device connections have been exhausted"),
    (810, "cudaErrorMpsClientTerminated", "The MPS server terminated this client; the process must restart.",
     _D, True, "the MPS client has been terminated by the server"),
    (811, "cudaErrorCdpNotSupported", "CUDA Dynamic Parallelism is not supported in this configuration.", _D,
     False, ""),
    (812, "cudaErrorCdpVersionMismatch", "Unsupported mix of CUDA Dynamic Parallelism versions.", _A, False,
     ""),
    (900, "cudaErrorStreamCaptureUnsupported", "The operation is not permitted while the stream captures.",
     _A, False, "operation not permitted when stream is capturing"),
    (901, "cudaErrorStreamCaptureInvalidated", "The capture sequence was invalidated by an earlier error.",
     _A, False, "operation failed due to a previous error during capture"),
    (902, "cudaErrorStreamCaptureMerge", "The operation would merge two independent capture sequences.", _A,
     False, ""),
    (903, "cudaErrorStreamCaptureUnmatched", "The capture was not started in this stream.", _A, False, ""),
    (904, "cudaErrorStreamCaptureUnjoined", "The capture forked without joining back to the origin stream.",
     _A, False, ""),
    (905, "cudaErrorStreamCaptureIsolation", "A dependency would cross the capture sequence boundary.", _A,
     False, ""),
    (906, "cudaErrorStreamCaptureImplicit", "Implicit dependency on a capture from cudaStreamLegacy.", _A,
     False, ""),
    (907, "cudaErrorCapturedEvent", "The event was last recorded in a capturing stream.", _A, False, ""),
    (908, "cudaErrorStreamCaptureWrongThread", "A non-relaxed capture was ended from another thread.", _A,
     False, ""),
    (909, "cudaErrorTimeout", "The wait operation timed out.", _R, False, "wait operation timed out"),
    (910, "cudaErrorGraphExecUpdateFailure", "The graph update violates instantiated-graph constraints.", _A,
     False, ""),
    (911, "cudaErrorExternalDevice",
     "A device outside CUDA signalled an error for shared data; the process must restart.", _H, True, ""),
    (912, "cudaErrorInvalidClusterSize", "The launch uses a misconfigured thread-block cluster.", _A, False,
     ""),
    (913, "cudaErrorFunctionNotLoaded", "The function handle is not loaded.", _A, False, ""),
    (914, "cudaErrorInvalidResourceType", "A resource passed in is not a valid type for the operation.", _A,
     False, ""),
    (915, "cudaErrorInvalidResourceConfiguration",
     "The resources passed in are insufficient or not applicable for the operation.", _R, False, ""),
    (917, "cudaErrorStreamDetached",
     "The stream is detached (its green context was destroyed).", _A, False, ""),
    (918, "cudaErrorGraphRecaptureFailure", "Re-capturing a graph for update failed.", _A, False, ""),
    (999, "cudaErrorUnknown", "An unknown internal error.", _D, False, "unknown error"),
    (10000, "cudaErrorApiFailureBase", "Deprecated since CUDA 4.1: base of unhandled driver errors.", _D,
     False, ""),
)

# Driver-API (CUresult) names of the same numbers where they are not the runtime name in upper
# snake case.
_DRIVER_NAMES: dict[int, str] = {
    0: "CUDA_SUCCESS",
    2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED",
    46: "CUDA_ERROR_DEVICE_UNAVAILABLE",
    200: "CUDA_ERROR_INVALID_IMAGE",
    201: "CUDA_ERROR_INVALID_CONTEXT",
    205: "CUDA_ERROR_MAP_FAILED",
    206: "CUDA_ERROR_UNMAP_FAILED",
    209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
    214: "CUDA_ERROR_ECC_UNCORRECTABLE",
    216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
    219: "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
    220: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
    225: "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
    400: "CUDA_ERROR_INVALID_HANDLE",
    500: "CUDA_ERROR_NOT_FOUND",
    708: "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
    719: "CUDA_ERROR_LAUNCH_FAILED",
}

_ERRORS: tuple[CudaError, ...] = tuple(
    CudaError(code, name, meaning, category, sticky, message)
    for code, name, meaning, category, sticky, message in _TABLE
)
_BY_CODE: dict[int, CudaError] = {e.code: e for e in _ERRORS}


def _key(name: str) -> str:
    """Spelling-insensitive key: `cudaErrorIllegalAddress` and `CUDA_ERROR_ILLEGAL_ADDRESS` agree."""
    flat = name.strip().replace("_", "").lower()
    for prefix in ("cudaerror", "cuda"):
        if flat.startswith(prefix) and len(flat) > len(prefix):
            return flat[len(prefix):]
    return flat


_BY_KEY: dict[str, CudaError] = {}
for _err in _ERRORS:
    _BY_KEY.setdefault(_key(_err.name), _err)
    _BY_KEY.setdefault(_key(_err.driver_name), _err)

_BY_MESSAGE: dict[str, CudaError] = {e.message.lower(): e for e in _ERRORS if e.message}
# Longest messages first so that "out of memory" does not shadow a longer message containing it.
_MESSAGES_BY_LENGTH = sorted(_BY_MESSAGE.items(), key=lambda kv: -len(kv[0]))
_NAME_RE = re.compile(r"\b(cudaError[A-Za-z]+|cudaSuccess|CUDA_ERROR_[A-Z_]+|CUDA_SUCCESS)\b")


def all_errors() -> tuple[CudaError, ...]:
    """Every catalogued error, ordered by code."""
    return _ERRORS


def by_code(code: int) -> CudaError | None:
    """The error with this numeric value, or None."""
    return _BY_CODE.get(int(code))


def by_name(name: str) -> CudaError | None:
    """The error named `name` in runtime or driver-API spelling, case-insensitive, or None."""
    if not name or not name.strip():
        return None
    return _BY_KEY.get(_key(name))


def from_text(text: str) -> CudaError | None:
    """The error an exception or log text names: by enum name first, then by its error string.

    Recognises e.g. "CUDA error: an illegal memory access was encountered", "Triton Error [CUDA]:
    misaligned address", "CUDA_ERROR_ILLEGAL_ADDRESS" and "cudaErrorMemoryAllocation".
    """
    for match in _NAME_RE.finditer(text):
        found = by_name(match.group(1))
        if found is not None:
            return found
    lowered = text.lower()
    for message, error in _MESSAGES_BY_LENGTH:
        if error.code == 0:
            continue
        if message in lowered:
            return error
    return None
