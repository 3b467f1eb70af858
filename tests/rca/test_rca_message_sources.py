"""Failure wordings taken from the tools' own sources and documentation must name the right cause.

The real-text corpus showed the engine reading little in text whose wording it was not written beside
(issue 11). This file lists, per source, the messages as the producing project prints them: the NVIDIA
Xid catalogue and driver, NVML / nvidia-smi, cudaGetErrorString, NCCL's WARN and error strings,
PyTorch's c10d watchdog and allocator, vLLM / SGLang / TGI, kube-scheduler and kubelet, the NVIDIA
container toolkit, device plugin and dcgm-exporter, TensorRT / Triton and the Linux kernel (AER, MCE,
panics, OOM killer, file systems, NIC link messages). Each section names where its strings come from;
none was taken from the corpus excerpts. Variable parts (PCI addresses, pids, sizes, ranks) are filled
in with plausible values. Healthy start-up and status lines of the same tools must give no cause.
`test_rca_message_variants.py` holds the wrapped and multi-tool variants; this file is breadth.
"""

# ruff: noqa: E501  (log lines are quoted whole, as tools print them)

from __future__ import annotations

from pathlib import Path

import pytest
from support.pasted import pasted_causes

from gpuobs.names import gpu as g
from gpuobs.rca.parsers import parse_text
from gpuobs.rca.parsers.document import parse_document

# (expected root cause or None for healthy text, the text)
# fmt: off
SOURCE_WORDINGS: list[tuple[str | None, str]] = [
    # --- NVIDIA driver: the Xid catalogue (docs.nvidia.com/deploy/xid-errors) names each code; the lines
    # are NVRM's "Xid (PCI:...): N, pid=..., name=..., <text>" with the text the driver prints for it
    # (open-gpu-kernel-modules: MMU fault, ESR, DBE, NVLink, Contained/Uncontained, GSP RPC timeout,
    # Xid 154 recovery action).
    ("xid_13_graphics_exception", "[  312.456789] NVRM: Xid (PCI:0000:3b:00): 13, pid=2345, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 1): Out Of Range Address\n"),
    ("xid_13_graphics_exception", "NVRM: Xid (PCI:0000:3b:00): 13, pid=2345, name=python3, Graphics Exception: ESR 0x50e648=0x1000e 0x50e650=0x24 0x50e644=0xd3eff2 0x50e64c=0x17f\n"),
    ("xid_13_graphics_exception", "NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception: Class 0xc7c0 Subchannel 0x0 Mismatch\n"),
    ("xid_31_mmu_fault", "NVRM: Xid (PCI:0000:65:00): 31, pid=1896, name=python, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_2 faulted @ 0x7f3a_12345000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n"),
    ("xid_31_mmu_fault", "NVRM: Xid (PCI:0000:65:00): 31, pid=1896, name=python, Ch 00000010, intr 10000000. MMU Fault: ENGINE CE3 HUBCLIENT_CE1 faulted @ 0x1_00000000. Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_WRITE\n"),
    ("xid_48_double_bit_ecc", "NVRM: Xid (PCI:0000:86:00): 48, pid=3110, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.\n"),
    ("xid_48_double_bit_ecc", "NVRM: Xid (PCI:0000:86:00): 48, pid='<unknown>', name=<unknown>, DBE (double bit error) ECC error\n"),
    ("ecc_row_remap_failure", "NVRM: Xid (PCI:0000:86:00): 64, pid='<unknown>', name=<unknown>, Row Remapper Error: failed to remap row (0x1f0)\n"),
    ("ecc_row_remap_failure", "NVRM: Xid (PCI:0000:86:00): 64, pid=1234, name=python, ECC page retirement or row remapper recording failure\n"),
    ("nvlink_error", "NVRM: Xid (PCI:0000:07:00): 74, pid=1234, name=python, NVLink: fatal error detected on link 5(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n"),
    ("nvlink_error", "NVRM: Xid (PCI:0000:07:00): 74, pid='<unknown>', name=<unknown>, NVLink: Link 11 fatal error: MINION Link DL interrupt (0x3)\n"),
    ("nvlink_error", "NVRM: Xid (PCI:0000:1b:00): 145, RLW_REMAP Nonfatal XC0 i0 Link -1 (0x00000000 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"),
    ("xid_79_fallen_off_bus", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1522, name=python, GPU has fallen off the bus.\n"),
    ("xid_79_fallen_off_bus", "NVRM: GPU at PCI:0000:3b:00: GPU-6bb9e2a3-4c0f-8fd8-d2a1-03c7b0e1e8b8\nNVRM: GPU Board Serial Number: 1322021002344\nNVRM: Xid (PCI:0000:3b:00): 79, pid=1522, name=python, GPU has fallen off the bus.\nNVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"),
    ("xid_79_fallen_off_bus", "NVRM: The NVIDIA GPU 0000:3b:00.0\nNVRM: (PCI ID: 10de:2330) installed in this system has\nNVRM: fallen off the bus and is not responding to commands.\n"),
    ("xid_94_contained_ecc", "NVRM: Xid (PCI:0000:ca:00): 94, pid=52121, name=python, Contained: SM (0x1). RST: No, D-RST: No\n"),
    ("xid_95_uncontained_ecc", "NVRM: Xid (PCI:0000:ca:00): 95, pid=52121, name=python, Uncontained: FBHUB. RST: Yes, D-RST: No\n"),
    ("xid_119_gsp_timeout", "NVRM: Xid (PCI:0000:41:00): 119, pid=3520, name=nvidia-smi, Timeout waiting for RPC from GSP0! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8).\n"),
    ("xid_119_gsp_timeout", "NVRM: Xid (PCI:0000:41:00): 119, pid='<unknown>', name=<unknown>, Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 10 (FREE) (0xa55a0040 0x0).\n"),
    ("xid_119_gsp_timeout", "NVRM: Xid (PCI:0000:41:00): 120, pid=3520, name=python, GSP task timeout @ pc:0x4bd36ec, task: 1\n"),
    ("gpu_reset_required", "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)\n"),
    ("gpu_reset_required", "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)\n"),
    # the reset a GSP timeout leaves behind is its consequence, also when the timeout is known only by wording
    ("xid_119_gsp_timeout", "NVRM: _kgspRpcRecvPoll: GSP RM heartbeat timed out after 6000ms\nNVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)\n"),
    ("launch_timeout_watchdog", "NVRM: Xid (PCI:0000:01:00): 8, pid=1234, name=python, Channel 00000010\n"),
    # --- NVML / nvidia-smi: nvmlErrorString texts (nvml.h: GPU_IS_LOST "GPU is lost", RESET_REQUIRED "GPU
    # requires reset", DRIVER_NOT_LOADED "Driver Not Loaded") as nvidia-smi prints them; NVRM's
    # RmInitAdapter and probe messages.
    ("xid_79_fallen_off_bus", "$ nvidia-smi\nUnable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU\n"),
    ("gpu_reset_required", "$ nvidia-smi\nUnable to determine the device handle for gpu 0000:3B:00.0: GPU requires reset\n"),
    ("gpu_driver_failure", "$ nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n"),
    ("gpu_driver_failure", "$ nvidia-smi\nFailed to initialize NVML: Driver Not Loaded\n"),
    ("gpu_driver_failure", "NVRM: RmInitAdapter failed! (0x26:0xffff:1511)\nNVRM: rm_init_adapter failed, device minor number 0\n"),
    # The module failed to build for the running kernel (kbuild's error for an object of the nvidia tree,
    # DKMS's "Bad return status for module build" about nvidia, nvidia-installer), so it cannot load.
    ("gpu_driver_failure", "make[2]: *** [scripts/Makefile.build:243: /var/lib/dkms/nvidia/535.104.05/build/nvidia/nv-pat.o] Error 1\nmake[1]: *** [Makefile:1911: /var/lib/dkms/nvidia/535.104.05/build] Error 2\n"),
    ("gpu_driver_failure", "Error! Bad return status for module build on kernel: 6.5.0-14-generic (x86_64)\nConsult /var/lib/dkms/nvidia/535.104.05/build/make.log for more information.\n"),
    ("gpu_driver_failure", "ERROR: Unable to build the NVIDIA kernel module.\n"),
    # near misses: another module's build error; a DKMS build of nvidia that completed
    ("gpu_driver_failure", "make[3]: *** [scripts/Makefile.build:251: /tmp/NVIDIA-Linux-x86_64-550.90.07/kernel-open/nvidia-uvm/uvm_va_space.o] Error 1\n"),
    (None, "make[2]: *** [scripts/Makefile.build:243: /var/lib/dkms/v4l2loopback/0.12.7/build/v4l2loopback.o] Error 1\n"),
    (None, "make[1]: *** [Makefile:42: /home/ci/src/nvidia-apex/build/temp.linux-x86_64/csrc/fused_dense.o] Error 1\n"),
    (None, "Error! Bad return status for module build on kernel: 6.5.0-14-generic (x86_64)\nConsult /var/lib/dkms/zfs/2.1.5/build/make.log for more information.\n"),
    (None, "Building module:\ncleaning build area...\n'make' -j16 NV_EXCLUDE_BUILD_MODULES='' KERNEL_UNAME=6.5.0-14-generic modules....\nSigning module:\n - /var/lib/dkms/nvidia/535.104.05/6.5.0-14-generic/x86_64/module/nvidia.ko\nDKMS: install completed.\n"),
    ("gpu_driver_failure", "NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x62:0x55:2477)\nNVRM: GPU 0000:3b:00.0: rm_init_adapter failed, device minor number 0\n"),
    ("gpu_driver_failure", "NVRM: The NVIDIA probe routine was not called for 1 device(s).\nNVRM: No NVIDIA devices probed.\n"),
    ("cuda_driver_mismatch", "$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\n"),
    ("gpu_not_visible", "$ nvidia-smi\nNo devices were found\n"),
    # --- CUDA runtime: cudaGetErrorString texts of the cudaError values the catalog covers (CUDA Runtime
    # API, enum cudaError), as PyTorch's C10_CUDA_CHECK, deviceQuery and the driver API print them;
    # PyTorch's CUDACachingAllocator OOM message in its 1.x and 2.x wording; TensorFlow's BFC allocator
    # and XLA's RESOURCE_EXHAUSTED.
    ("illegal_memory_access", "RuntimeError: CUDA error: an illegal memory access was encountered\n"),
    ("illegal_memory_access", "RuntimeError: CUDA error: misaligned address\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"),
    ("illegal_memory_access", "CUDA error: an illegal instruction was encountered\n"),
    ("illegal_memory_access", "RuntimeError: CUDA error: hardware stack error\n"),
    ("illegal_memory_access", "cudaErrorIllegalAddress: an illegal memory access was encountered\n"),
    ("illegal_memory_access", "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered\n"),
    ("launch_timeout_watchdog", "RuntimeError: CUDA error: the launch timed out and was terminated\n"),
    ("gpu_not_visible", "RuntimeError: CUDA error: no CUDA-capable device is detected\n"),
    ("gpu_not_visible", "cudaGetDeviceCount returned 100\n-> no CUDA-capable device is detected\nResult = FAIL\n"),
    ("cuda_driver_mismatch", "cudaGetDeviceCount returned 35\n-> CUDA driver version is insufficient for CUDA runtime version\nResult = FAIL\n"),
    ("cuda_driver_mismatch", "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version\n"),
    ("cuda_driver_mismatch", "RuntimeError: CUDA error: system has unsupported display driver / cuda driver combination\n"),
    ("cuda_driver_mismatch", "CUDA error: forward compatibility was attempted on non supported HW\n"),
    ("cuda_driver_mismatch", "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non supported HW\n"),
    ("cuda_driver_mismatch", "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx\n"),
    ("cuda_arch_unsupported", "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"),
    ("cuda_arch_unsupported", "CUDA error: invalid device function\n"),
    ("cuda_arch_unsupported", "UserWarning: \nNVIDIA H100 80GB HBM3 with CUDA capability sm_90 is not compatible with the current PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86.\n"),
    ("xid_48_double_bit_ecc", "RuntimeError: CUDA error: uncorrectable ECC error encountered\n"),
    ("xid_48_double_bit_ecc", "CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered\n"),
    ("nvlink_error", "RuntimeError: CUDA error: uncorrectable NVLink error was detected during the execution\n"),
    ("nvswitch_fatal_error", "RuntimeError: CUDA error: system not yet initialized\n"),
    ("nvswitch_fatal_error", "cudaGetDeviceCount returned 802\n-> system not yet initialized\nResult = FAIL\n"),
    ("cuda_oom_capacity", "RuntimeError: CUDA error: out of memory\n"),
    ("cuda_oom_capacity", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free. Process 1234 has 78.08 GiB memory in use. Of the allocated memory 75.50 GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"),
    ("cuda_oom_capacity", "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.56 GiB already allocated; 3.44 MiB free; 14.62 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n"),
    ("cuda_oom_capacity", "RuntimeError: CUDA out of memory. Tried to allocate 128.00 MiB (GPU 0; 10.76 GiB total capacity; 9.61 GiB already allocated; 46.56 MiB free; 9.79 GiB reserved in total by PyTorch)\n"),
    ("cuda_oom_capacity", "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"),
    ("cuda_oom_capacity", "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n"),
    ("cuda_oom_capacity", "2024-01-01 10:00:00.000000: W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824)requested by op MatMul\n"),
    ("cuda_oom_capacity", "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.\n"),
    # --- NCCL: WARN lines of transport/net_ib.cc (old and 2.19+ completion errors), transport/net_socket.cc,
    # misc/socket.cc, misc/ibvwrap.cc, include/shm.h and misc/shmutils.cc, proxy.cc ("[Proxy Service %d]
    # Failed to execute operation %s from rank %d, retcode %d"), CUDACHECK's "Cuda failure %d '%s'", and
    # ncclGetErrorString texts as PyTorch wraps them; PyTorch's ProcessGroupNCCL.cpp watchdog, heartbeat
    # monitor and TCPStore messages.
    ("nccl_network_error", "node1:1234:5678 [0] NCCL INFO transport/net_ib.cc:1295 -> 6\nnode1:1234:5678 [0] transport/net_ib.cc:1290 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<46787> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n"),
    ("nccl_network_error", "node1:1234:5678 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<46787> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) reqSize=0 vendor_err=129 req_type=Send localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2 hca mlx5_0\n"),
    ("nccl_network_error", "node1:1234:5678 [3] transport/net_socket.cc:420 NCCL WARN NET/Socket : peer 10.0.0.2<43215> shutdown\n"),
    ("nccl_network_error", "node1:1234:5678 [3] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer node2<56340>\n"),
    ("nccl_network_error", "node1:1234:5678 [3] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer 10.0.0.2<34567>\n"),
    ("nccl_network_error", "node1:1234:5678 [3] misc/socket.cc:50 NCCL WARN socketProgressOpt: Call to recv from 10.0.0.2<39013> failed : Connection reset by peer\n"),
    ("nccl_network_error", "node1:1234:5678 [0] misc/ibvwrap.cc:160 NCCL WARN Call to ibv_create_qp failed with error Cannot allocate memory\n"),
    ("nccl_network_error", "node1:1234:5678 [0] misc/ibvwrap.cc:185 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out\n"),
    ("nccl_network_error", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, remote process exited or there was a network error, NCCL version 2.19.3\nncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\nLast error:\nNET/IB : Got completion from peer 10.0.0.2<46787> with error 12, opcode 32753, len 0, vendor err 129 (Recv)\n"),
    ("nccl_network_error", "RuntimeError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, unhandled system error, NCCL version 2.18.1\nncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\nLast error:\nsocketStartConnect: Connect to 10.0.0.2<35287> failed : Software caused connection abort\n"),
    ("nccl_network_error", "node1:1234:5678 [0] proxy.cc:1393 NCCL WARN [Proxy Service 3] Failed to execute operation Connect from rank 3, retcode 3\n"),
    ("nccl_network_error", "node1:1234:5678 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<35287> failed : Connection refused\n"),
    ("nccl_shm_unavailable", "node1:1234:5678 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\nnode1:1234:5678 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-1234 (size 9637888)\n"),
    ("nccl_shm_unavailable", "node1:1234:5678 [0] misc/shmutils.cc:77 NCCL WARN Error: failed to extend /dev/shm/nccl-abcd to 9637892 bytes\nnode1:1234:5678 [0] misc/shmutils.cc:113 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-abcd (size 9637888)\n"),
    ("nccl_shm_unavailable", "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.14.3\nncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\nLast error:\nError while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)\n"),
    ("cuda_oom_capacity", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\nncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 'out of memory'\n"),
    ("cuda_oom_capacity", "node1:1234:5678 [0] init.cc:1165 NCCL WARN Cuda failure 2 'out of memory'\n"),
    ("nccl_p2p_hang", "node1:1234:5678 [0] NCCL WARN Cuda failure 'peer access is not supported between these two devices'\n"),
    ("nccl_timeout", "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1153, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800426 milliseconds before timing out.\n"),
    ("nccl_timeout", "[rank0]:[E1010 10:00:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=_ALLGATHER_BASE, NumelIn=1, NumelOut=8, Timeout(ms)=600000) ran for 600062 milliseconds before timing out.\n"),
    ("nccl_timeout", "[rank3]:[E1010 10:00:00.000000 1234 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600008 milliseconds before timing out.\n"),
    ("nccl_timeout", "[rank0]:[E1010 ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Timeout at NCCL work: 12, last enqueued NCCL work: 12, last completed NCCL work: 11.\n[rank0]:[E1010 ProcessGroupNCCL.cpp:577] [Rank 0] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n"),
    ("nccl_timeout", "[rank2]:[E1010 ProcessGroupNCCL.cpp:1316] [PG 0 Rank 2] Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=1\n"),
    ("nccl_timeout", "[rank2]:[F1010 ProcessGroupNCCL.cpp:1153] [PG 0 Rank 2] [PG 0 Rank 2] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives. This typically indicates a NCCL/CUDA API hang blocking the watchdog, and could be triggered by another thread holding the GIL inside a CUDA api, or other deadlock-prone behaviors.\n"),
    ("nccl_timeout", "RuntimeError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n"),
    ("nccl_timeout", "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.\n"),
    ("nccl_segfault", "node1:1234:5678 [0] NCCL INFO Channel 00/02 :    0   1\n*** Process received signal ***\nSignal: Segmentation fault (11)\nSignal code: Address not mapped (1)\n[ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x42520)\n[ 1] /usr/lib/x86_64-linux-gnu/libnccl.so.2(+0x5d6a1)\n"),
    # --- serving engines: vLLM (worker / kv_cache_utils max-seq-len checks, scheduler preemption warning,
    # AsyncEngineDeadError, V1 EngineDeadError and core_client.py "Engine core proc %s died unexpectedly,
    # shutting down client."), SGLang ("Not enough memory. Please try to increase --mem-fraction-static.",
    # KV pool retraction), TGI launcher (ShardCannotStart / ShardFailed) and router warmup.
    ("kv_cache_exhausted", "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (16384). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"),
    ("kv_cache_exhausted", "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.45 GiB). Based on the available memory, the estimated maximum model length is 77392. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"),
    ("kv_cache_exhausted", "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n"),
    ("kv_cache_exhausted", "WARNING 05-01 10:00:00 [scheduler.py:1057] Sequence group 0 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=51\n"),
    ("kv_cache_exhausted", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"),
    ("kv_cache_exhausted", "[2024-10-01 10:00:00 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.5000 -> 1.0000\n"),
    ("engine_dead", "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.\n"),
    ("engine_dead", "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n"),
    ("engine_dead", "ERROR 01-01 10:00:00 [core_client.py:350] Engine core proc EngineCore_0 died unexpectedly, shutting down client.\n"),
    ("engine_dead", "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_0': 1}\n"),
    ("engine_dead", "2024-01-01T10:00:00.000000Z ERROR shard-manager: text_generation_launcher: Shard complete standard error output:\n2024-01-01T10:00:00.000000Z ERROR text_generation_launcher: Shard 0 failed to start\nError: ShardCannotStart\n"),
    ("engine_dead", "2024-01-01T10:00:00.000000Z ERROR text_generation_launcher: Shard 1 crashed\n2024-01-01T10:00:00.000000Z  INFO text_generation_launcher: Terminating webserver\nError: ShardFailed\n"),
    ("kv_cache_exhausted", "2024-01-01T10:00:00.000000Z ERROR warmup{max_input_length=4095 max_prefill_tokens=4096}:warmup: text_generation_client: router/client/src/lib.rs:33: Server error: Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`\n"),
    ("cuda_arch_unsupported", "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.\n"),
    # --- Kubernetes and the NVIDIA stack around it: kube-scheduler's "Insufficient nvidia.com/gpu", kubelet
    # (OOMKilled, BackOff "Back-off restarting failed container", UnexpectedAdmissionError "Allocate failed
    # due to requested number of devices unavailable for %s"), the container toolkit's nvidia-container-cli
    # errors, and the k8s device plugin (internal/plugin/factory.go hint block, main.go "No devices found.
    # Waiting indefinitely.", internal/rm/health.go "XidCriticalError: Xid=%d on Device=%s; marking device
    # as unhealthy." and its pre-0.15 ", the device will go unhealthy.").
    ("gpu_not_visible", "  Warning  FailedScheduling  3m  default-scheduler  0/4 nodes are available: 4 Insufficient nvidia.com/gpu.\n"),
    ("gpu_not_visible", "Warning  FailedScheduling  10s  default-scheduler  0/5 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 4 Insufficient nvidia.com/gpu. preemption: 0/5 nodes are available: 1 Preemption is not helpful for scheduling, 4 No preemption victims found for incoming pod.\n"),
    ("oom_killed_container", "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n"),
    ("oom_killed_container", "NAME       READY   STATUS      RESTARTS   AGE\ntrainer-0  0/1     OOMKilled   3          5m\n"),
    ("crash_loop", "  Warning  BackOff  2m (x25 over 7m)  kubelet  Back-off restarting failed container trainer in pod trainer-0_default(0a1b2c3d)\n"),
    ("crash_loop", "NAME       READY   STATUS             RESTARTS      AGE\ntrainer-0  0/1     CrashLoopBackOff   5 (30s ago)   5m\n"),
    ("gpu_not_visible", "  Warning  UnexpectedAdmissionError  30s  kubelet  Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected\n"),
    # the hook finds no NVML library where it runs (Docker Desktop's VM, WSL without passthrough): no GPU given
    ("gpu_not_visible", "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown.\n"),
    ("gpu_not_visible", "docker: Error response from daemon: unknown or invalid runtime name: nvidia.\n"),
    # the same hook error wrapped by a terminal at a colon: the NVML answer on the next line is the cause
    ("cuda_driver_mismatch", "ERROR: for api  Cannot start service api: failed to create shim: OCI runtime create\nfailed: runc create failed: unable to start container process: error during container init: error running\nhook #0: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: initialization error:\nnvml error: driver/library version mismatch: unknown\n"),
    ("gpu_driver_failure", "stderr: nvidia-container-cli: initialization error:\nnvml error: driver not loaded: unknown\n"),
    # kubelet's OOM watcher: a kill outside every pod's cgroup is the node's SystemOOM, not a container's limit
    ("host_oom_killer", "  Warning  SystemOOM  12m  kubelet  System OOM encountered, victim process: java, pid: 17173\n"),
    ("host_oom_killer", "Events:\n  Type     Reason     Age   From     Message\n  Warning  SystemOOM  3m    kubelet  System OOM encountered, victim process: python3, pid: 2211\n  Normal   NodeNotReady  1m  node-controller  Node gpu-7 status is now: NodeNotReady\n"),
    # go-nvml's "could not load NVML library", printed by the containerised agents (device plugin, dcgm-exporter,
    # GPU feature discovery): the runtime did not inject the driver's files into the container
    ("gpu_not_visible", "I0101 10:00:00.000000 1 main.go:256] Retreiving plugins.\nE0101 10:00:00.000000 1 factory.go:77] Failed to initialize NVML: could not load NVML library.\nE0101 10:00:00.000000 1 factory.go:78] If this is a GPU node, did you set the docker default runtime to `nvidia`?\n"),
    ("gpu_not_visible", "time=\"2024-01-01T10:00:00Z\" level=info msg=\"Starting gpu-feature-discovery\"\n2024/01/01 10:00:00 Failed to initialize NVML: could not load NVML library.\n"),
    ("gpu_not_visible", "I0101 10:00:00.000000 1 main.go:256] Retreiving plugins.\nE0101 10:00:00.000000 1 factory.go:87] Incompatible strategy detected auto\nE0101 10:00:00.000000 1 factory.go:88] If this is a GPU node, did you configure the NVIDIA Container Toolkit?\nE0101 10:00:00.000000 1 factory.go:89] You can check the prerequisites at: https://github.com/NVIDIA/k8s-device-plugin#prerequisites\nI0101 10:00:00.000000 1 main.go:287] No devices found. Waiting indefinitely.\n"),
    ("xid_79_fallen_off_bus", "I0101 10:00:00.000000 1 health.go:159] Processing event {Device:{Handle:0x7f} EventType:8 EventData:79 GpuInstanceId:4294967295 ComputeInstanceId:4294967295}\nI0101 10:00:00.000000 1 health.go:185] XidCriticalError: Xid=79 on Device=GPU-6bb9e2a3-4c0f-8fd8-d2a1-03c7b0e1e8b8; marking device as unhealthy.\n"),
    ("xid_48_double_bit_ecc", "I0101 health.go:185] XidCriticalError: Xid=48 on Device=GPU-6bb9e2a3-4c0f-8fd8-d2a1-03c7b0e1e8b8, the device will go unhealthy.\n"),
    # --- dcgm-exporter (pkg/cmd/app.go fatal messages).
    ("telemetry_exporter_failure", "time=\"2024-01-01T10:00:00Z\" level=fatal msg=\"Error connecting to nv-hostengine: Host engine connection invalid/disconnected\"\n"),
    ("telemetry_exporter_failure", "time=\"2024-01-01T10:00:00Z\" level=fatal msg=\"Failed to watch metrics: Error watching fields: The third-party Profiling module returned an unrecoverable error\"\n"),
    ("telemetry_exporter_failure", "time=\"2024-01-01T10:00:00Z\" level=info msg=\"Starting dcgm-exporter\"\ntime=\"2024-01-01T10:00:00Z\" level=fatal msg=\"Error starting nv-hostengine: DCGM initialization error\"\n"),
    # The exporter's own pod crash-looping: its container's fatal (here a bad flag value, which no exporter
    # pattern names) explains the loop, and the node's GPU telemetry is down. Near miss: a workload pod
    # crash-looping beside a running exporter is a plain crash loop.
    ("telemetry_exporter_failure", "NAME                       READY   STATUS             RESTARTS      AGE\nnvidia-dcgm-exporter-7xk2p   0/1     CrashLoopBackOff   4 (20s ago)   2m\n$ kubectl logs nvidia-dcgm-exporter-7xk2p\ntime=\"2024-03-02T08:00:00Z\" level=fatal msg=\"invalid value \\\"abc\\\" for flag -collect-interval: parse error\"\n"),
    ("crash_loop", "NAME                       READY   STATUS             RESTARTS      AGE\ndcgm-exporter-q8d9s        1/1     Running            0             3d\nllm-server-5c9f7-abcde     0/1     CrashLoopBackOff   6 (1m ago)    9m\n"),
    # kubectl describe names the pod and container only in its header (the state line's entity)
    ("telemetry_exporter_failure", "Name:             nvidia-dcgm-exporter-7xk2p\nNamespace:        gpu-operator\nContainers:\n  nvidia-dcgm-exporter:\n    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    1\n"),
    ("crash_loop", "Name:             llm-server-0\nNamespace:        serving\nContainers:\n  server:\n    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    1\n"),
    # --- TensorRT runtime deserialisation and ONNX parser errors, Triton's model_lifecycle.cc.
    ("tensorrt_engine_incompatible", "E0101 10:00:00.000 1 logging.cc:43] 1: [stdArchiveReader.cpp::StdArchiveReader::42] Error Code 1: Serialization (Serialization assertion stdVersionRead == serializationVersion failed.Version tag does not match. Note: Current Version: 236, Serialized Engine Version: 213)\n"),
    ("tensorrt_engine_incompatible", "[TRT] [E] 6: The engine plan file is not compatible with this version of TensorRT, expecting library version 8.6.1.6 got 8.5.3.1, please rebuild.\n"),
    ("tensorrt_engine_incompatible", "E0101 10:00:00.000 1 model_lifecycle.cc:621] failed to load 'resnet50' version 1: Internal: unable to create TensorRT engine\n"),
    ("tensorrt_engine_incompatible", "[TRT] [E] 1: [runtime.cpp::parsePlan::314] Error Code 1: Serialization (Serialization assertion plan->header.magicTag == rt::kPLAN_MAGIC_TAG failed.)\n"),
    ("tensorrt_parse_error", "[TRT] [E] ModelImporter.cpp:726: While parsing node number 12 [NonZero -> \"onnx::Gather_123\"]:\n[TRT] [E] ModelImporter.cpp:729: --- End node ---\n[TRT] [E] ModelImporter.cpp:732: ERROR: builtin_op_importers.cpp:4890 In function importFallbackPluginImporter:\n[8] Assertion failed: creator && \"Plugin not found, are the plugin name, version, and namespace correct?\"\n"),
    # --- Linux kernel: drivers/pci/pcie/aer.c, drivers/pci/pci.c ("%u.%03u Gb/s available PCIe bandwidth,
    # limited by %s x%d link at %s (capable of ...)"), arch/x86/kernel/cpu/mce, drivers/edac, APEI GHES,
    # kernel/panic.c, mm/oom_kill.c (4.x "Kill process" and 5.x "Killed process"), mm/memcontrol.c,
    # systemd-oomd, fs/ext4, fs/xfs, fs/btrfs ("forced readonly"), block layer; NIC drivers' link
    # messages: mlx5 "Link down", Intel e1000e/igb/ixgbe/i40e/ice "NIC Link is Down" (and the older
    # "e1000e: eth0 NIC Link is Down" form), bnxt_en, tg3, bonding.
    ("pcie_link_degraded", "[ 1234.5678] pcieport 0000:00:03.1: AER: Uncorrected (Fatal) error received: 0000:3b:00.0\n[ 1234.5679] nvidia 0000:3b:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Inaccessible, (Unregistered Agent ID)\n"),
    # pcie_report_downtraining prints this for any device whose slot is narrower than the device, by design
    # for many NVMe drives and NICs; the line does not say the device is a GPU, so alone it names no cause
    (None, "pci 0000:3b:00.0: 31.504 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x4 link at 0000:3a:00.0 (capable of 63.008 Gb/s with 8.0 GT/s PCIe x8 link)\n"),
    ("host_machine_check", "mce: [Hardware Error]: Machine check events logged\nmce: [Hardware Error]: CPU 12: Machine Check: 0 Bank 7: cc00008000010090\n"),
    # EDAC's corrected errors: one is no failure (ECC did its job); a module that keeps correcting is failing.
    (None, "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x12345 offset:0x0 grain:32 syndrome:0x0)\n"),
    ("host_machine_check", "".join(f"May  7 06:45:{10 + i} errol kernel: EDAC MC0: {n} CE memory read error on CPU_SrcID#0_MC#0_Chan#2_DIMM#0 (channel:2 slot:0 page:0x0 offset:0x0 grain:8 syndrome:0x0)\n" for i, n in enumerate((4, 2, 6, 1)))),
    # an uncorrectable host memory error, as EDAC, an HPE Integrated Management Log and a Dell iDRAC (MEM0001)
    # report it: the host's RAM, not a GPU's
    ("host_machine_check", "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x1234 offset:0x0 grain:32)\n"),
    ("host_machine_check", "0012 Critical 03/14/2024 09:21 Uncorrectable Memory Error (Processor 2, DIMM 3)\n"),
    ("host_machine_check", "MEM0001: Multi-bit memory errors detected on a memory device at location(s) DIMM_A1.\n"),
    # the same capitalised words with no module, processor or board named are not a host memory report
    (None, "GPU 0: Uncorrectable Memory Error count rose\n"),
    ("host_machine_check", "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 1\n{1}[Hardware Error]: event severity: fatal\n{1}[Hardware Error]:  Error 0, type: fatal\n{1}[Hardware Error]:   section_type: memory error\n"),
    ("host_machine_check", "Kernel panic - not syncing: Fatal machine check\n"),
    ("host_kernel_panic", "Kernel panic - not syncing: Fatal exception\n"),
    # FreeBSD's trap handler (sys/amd64/amd64/trap.c trap_fatal) before its panic; in user mode it is a
    # process's fault, not the kernel's
    ("host_kernel_panic", "Fatal trap 12: page fault while in kernel mode\ncpuid = 3; apic id = 03\nfault virtual address\t= 0x18\nfault code\t\t= supervisor write data, page not present\n"),
    ("host_kernel_panic", "Fatal trap 9: general protection fault while in kernel mode\ncpuid = 3; apic id = 03\ninstruction pointer\t= 0x20:0xffffffff80b1c2d4\n"),
    (None, "Fatal trap 12: page fault while in user mode\ncpuid = 0; apic id = 00\n"),
    ("host_kernel_panic", "BUG: kernel NULL pointer dereference, address: 0000000000000008\n#PF: supervisor read access in kernel mode\nOops: 0000 [#1] SMP NOPTI\nRIP: 0010:_nv012345rm+0x1f/0x40 [nvidia]\n"),
    ("host_oom_killer", "[123456.789] python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0\n[123456.790] Out of memory: Killed process 12345 (python) total-vm:123456789kB, anon-rss:98765432kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:200000kB oom_score_adj:0\n"),
    ("host_oom_killer", "Out of memory: Kill process 12345 (python) score 912 or sacrifice child\nKilled process 12345 (python) total-vm:123456789kB, anon-rss:98765432kB, file-rss:0kB\n"),
    # 4.x names a cgroup's victim on its own line; the unscoped "Killed process" after it is the cgroup's kill
    ("oom_killed_container", "Memory cgroup out of memory: Kill process 8812 (tritonserver) score 1003 or sacrifice child\nKilled process 8812 (tritonserver) total-vm:9123456kB, anon-rss:4194304kB, file-rss:512kB, shmem-rss:0kB\n"),
    ("host_oom_killer", "oom_reaper: reaped process 12345 (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB\n"),
    ("host_oom_killer", "systemd-oomd[789]: Killed /user.slice/user-1000.slice/session-3.scope due to memory pressure for /user.slice/user-1000.slice being 92.31% > 50.00% for > 20s with reclaim activity\n"),
    ("oom_killed_container", "Memory cgroup out of memory: Killed process 12345 (python) total-vm:123456kB, anon-rss:98765kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:2000kB oom_score_adj:-997\n"),
    ("filesystem_readonly", "EXT4-fs error (device nvme0n1p2): ext4_journal_check_start:83: comm python: Detected aborted journal\nEXT4-fs (nvme0n1p2): Remounting filesystem read-only\n"),
    ("filesystem_readonly", "XFS (dm-0): metadata I/O error in \"xfs_trans_read_buf_map\" at daddr 0x1234 len 8 error 5\nXFS (dm-0): Corruption of in-memory data detected.  Shutting down filesystem\nXFS (dm-0): Please unmount the filesystem and rectify the problem(s)\n"),
    ("filesystem_readonly", "OSError: [Errno 30] Read-only file system: '/data/ckpt/step_1000.pt'\n"),
    ("filesystem_readonly", "BTRFS error (device sda1): bdev /dev/sda1 errs: wr 1, rd 0, flush 0, corrupt 0, gen 0\nBTRFS: error (device sda1) in btrfs_commit_transaction:2418: errno=-5 IO failure (Error while writing out transaction)\nBTRFS info (device sda1): forced readonly\n"),
    ("filesystem_readonly", "blk_update_request: I/O error, dev sda, sector 123456 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0\nBuffer I/O error on dev sda1, logical block 15432, lost async page write\n"),
    ("network_link_flap", "mlx5_core 0000:5e:00.0 ens1f0np0: Link down\nmlx5_core 0000:5e:00.0 ens1f0np0: Link up\nmlx5_core 0000:5e:00.0 ens1f0np0: Link down\nmlx5_core 0000:5e:00.0 ens1f0np0: Link up\nmlx5_core 0000:5e:00.0 ens1f0np0: Link down\n"),
    ("network_link_flap", "ixgbe 0000:01:00.0 eth0: NIC Link is Down\nixgbe 0000:01:00.0 eth0: NIC Link is Up 10 Gbps, Flow Control: RX/TX\nixgbe 0000:01:00.0 eth0: NIC Link is Down\nixgbe 0000:01:00.0 eth0: NIC Link is Up 10 Gbps, Flow Control: RX/TX\nixgbe 0000:01:00.0 eth0: NIC Link is Down\n"),
    ("network_link_flap", "e1000e: eth0 NIC Link is Down\ne1000e: eth0 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: Rx/Tx\ne1000e: eth0 NIC Link is Down\ne1000e: eth0 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: Rx/Tx\ne1000e: eth0 NIC Link is Down\n"),
    ("network_link_flap", "bnxt_en 0000:3b:00.0 ens1f0np0: NIC Link is Down\nbnxt_en 0000:3b:00.0 ens1f0np0: NIC Link is Up, 100000 Mbps full duplex, Flow control: none\nbnxt_en 0000:3b:00.0 ens1f0np0: NIC Link is Down\nbnxt_en 0000:3b:00.0 ens1f0np0: NIC Link is Up, 100000 Mbps full duplex, Flow control: none\nbnxt_en 0000:3b:00.0 ens1f0np0: NIC Link is Down\n"),
    ("network_link_flap", "tg3 0000:02:00.0 eth0: Link is down\ntg3 0000:02:00.0 eth0: Link is up at 1000 Mbps, full duplex\ntg3 0000:02:00.0 eth0: Link is down\ntg3 0000:02:00.0 eth0: Link is up at 1000 Mbps, full duplex\ntg3 0000:02:00.0 eth0: Link is down\n"),
    ("network_link_flap", "bond0: (slave eth0): link status definitely down, disabling slave\nbond0: (slave eth0): link status definitely up, 10000 Mbps full duplex\nbond0: (slave eth0): link status definitely down, disabling slave\nbond0: (slave eth0): link status definitely up, 10000 Mbps full duplex\nbond0: (slave eth0): link status definitely down, disabling slave\n"),
    ("network_link_flap", "mlx5_core 0000:5e:00.0: mlx5_port_module_event:1145:(pid 0): Port module event: module 0, Cable unplugged\nmlx5_core 0000:5e:00.0 ens1f0: Link down\nmlx5_core 0000:5e:00.0 ens1f0: Link up\nmlx5_core 0000:5e:00.0 ens1f0: Link down\nmlx5_core 0000:5e:00.0 ens1f0: Link up\nmlx5_core 0000:5e:00.0 ens1f0: Link down\n"),
    ("network_link_flap", "i40e 0000:3b:00.0 ens1f0: NIC Link is Down\ni40e 0000:3b:00.0 ens1f0: NIC Link is Up, 25 Gbps Full Duplex, Requested FEC: None, Negotiated FEC: None, Autoneg: False, Flow Control: None\ni40e 0000:3b:00.0 ens1f0: NIC Link is Down\ni40e 0000:3b:00.0 ens1f0: NIC Link is Up, 25 Gbps Full Duplex, Requested FEC: None, Negotiated FEC: None, Autoneg: False, Flow Control: None\ni40e 0000:3b:00.0 ens1f0: NIC Link is Down\n"),
    ("network_link_flap", "ice 0000:ca:00.0 ens1f0: NIC Link is Down\nice 0000:ca:00.0 ens1f0: NIC Link is up 100 Gbps Full Duplex, Requested FEC: RS-FEC, Negotiated FEC: RS-FEC, Autoneg Advertised: On, Autoneg Negotiated: False, Flow Control: None\nice 0000:ca:00.0 ens1f0: NIC Link is Down\nice 0000:ca:00.0 ens1f0: NIC Link is up 100 Gbps Full Duplex, Requested FEC: RS-FEC, Negotiated FEC: RS-FEC, Autoneg Advertised: On, Autoneg Negotiated: False, Flow Control: None\nice 0000:ca:00.0 ens1f0: NIC Link is Down\n"),
    ("host_file_max_reached", "VFS: file-max limit 65536 reached\n"),
    ("host_file_max_reached", "OSError: [Errno 24] Too many open files: '/data/shard_0001.bin'\n"),
    # --- x86 thermal interrupt, NVSwitch SXid and Fabric Manager fatal errors, Ray's memory monitor
    # (node_manager.cc, ray.exceptions.OutOfMemoryError), Triton gRPC deadline, TGI queue, PyTorch's
    # Indexing.cu assert.
    ("thermal_throttling", "CPU0: Core temperature above threshold, cpu clock throttled (total events = 1)\n"),
    ("nvswitch_fatal_error", "nvidia-nvswitch3: SXid (PCI:0000:c8:00.0): 24007, Fatal, Link 44 sourcetrack TCEN0 crumbstore ECC DBE Error\n"),
    ("nvswitch_fatal_error", "[ERROR] [tid 1234] detected NVSwitch fatal error 24007 on fid 0 on NVSwitch pci bus id 00000000:c8:00.0 physical id 3 port 44\n"),
    ("ray_oom_killer", "(raylet) [2024-01-01 10:00:00,000 E 1234 1234] (raylet) node_manager.cc:3084: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: abc, IP: 10.0.0.1) over the last time period.\n"),
    ("ray_oom_killer", "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\nMemory on the node (IP: 10.0.0.1, ID: abc) where the task (task ID: def, name=train, pid=1234, memory used=12.3GB) was running was 30.1GB / 31.3GB (0.961), which exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: ghi) because it was the most recently scheduled task;\n"),
    ("grpc_deadline_exceeded", "tritonclient.utils.InferenceServerException: [StatusCode.DEADLINE_EXCEEDED] Deadline Exceeded\n"),
    ("queue_saturation", "HTTP 503: Exceeds maximum queue size\n"),
    # Ollama's scheduler past OLLAMA_MAX_QUEUE (as a client shows it), Knative's queue-proxy.
    ("queue_saturation", 'Ollama embed error (503): {"error":"server busy, please try again.  maximum pending requests exceeded"}\n'),
    ("queue_saturation", "HTTP 503 Service Unavailable: pending request queue full\n"),
    # TorchServe's frontend when it cannot queue a job (ApiUtils: its job queue full, or no worker up), as a
    # client prints the JSON body; Azure ML online endpoints past their pending-request limit.
    ("queue_saturation", '{\n  "code": 503,\n  "type": "ServiceUnavailableException",\n  "message": "Model \\"resnet-18\\" Version 1.0 has no worker to serve inference request. Please use scale workers API to add workers."\n}\n'),
    # the same refusal from a model whose worker died at start: the refusal is no full queue
    (None, "2024-01-01T10:00:01,000 [INFO ] W-9000-resnet_1.0-stdout MODEL_LOG - ModuleNotFoundError: No module named 'timm'\n2024-01-01T10:00:01,600 [ERROR] W-9000-resnet_1.0 org.pytorch.serve.wlm.WorkerThread - Backend worker error\norg.pytorch.serve.wlm.WorkerInitializationException: Backend worker process died.\n{\"code\": 503, \"type\": \"ServiceUnavailableException\", \"message\": \"Model \\\"resnet\\\" Version 1.0 has no worker to serve inference request. Please use scale workers API to add workers.\"}\n"),
    ("queue_saturation", "requests.exceptions.HTTPError: 429 Client Error: Too many pending requests for url: https://ep.westus2.inference.ml.azure.com/score\n"),
    (None, "time=2024-05-05T10:00:00.000Z level=INFO source=sched.go:120 msg=\"new model will fit in available VRAM\" OLLAMA_MAX_QUEUE=512\n"),
    ("tokenizer_mismatch", "../aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [12,0,0], thread: [64,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\nRuntimeError: CUDA error: device-side assert triggered\n"),
    ("tokenizer_mismatch", "IndexError: index out of range in self\n"),
    ("tokenizer_mismatch", "ValueError: Non-consecutive added token '<unk>' found. Should have index 32000 but has index 0 in saved vocabulary.\n"),
    # --- healthy start-ups and status lines of the same tools: no cause.
    (None, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nnvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  550.54.15\nnvidia-uvm: Loaded the UVM driver, major device number 510.\n"),
    (None, "node1:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\nnode1:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>\nnode1:1234:1234 [0] NCCL INFO Using network IB\nnode1:1234:1234 [0] NCCL INFO comm 0x5555 rank 0 nranks 16 cudaDev 0 busId 18000 - Init COMPLETE\n"),
    (None, "mlx5_core 0000:5e:00.0 ens1f0np0: Link up\nIPv6: ADDRCONF(NETDEV_CHANGE): ens1f0np0: link becomes ready\n"),
    (None, "ixgbe 0000:01:00.0 eth0: NIC Link is Up 10 Gbps, Flow Control: RX/TX\n"),
    (None, "EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode. Opts: (null). Quota mode: none.\n"),
    (None, "INFO 05-01 10:00:00 [gpu_executor.py:122] # GPU blocks: 27000, # CPU blocks: 2048\nINFO 05-01 10:00:00 [model_runner.py:1000] Graph capturing finished in 12 secs.\nINFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"),
    (None, "2024-01-01T10:00:00.000000Z  INFO text_generation_launcher: Starting shard rank=0\n2024-01-01T10:00:10.000000Z  INFO text_generation_launcher: Shard ready in 10.0s rank=0\n2024-01-01T10:00:11.000000Z  INFO text_generation_router: router/src/main.rs:300: Connected\n"),
    (None, "I0101 10:00:00.000000 1 main.go:256] Retreiving plugins.\nI0101 10:00:00.000000 1 server.go:165] Starting GRPC server for 'nvidia.com/gpu'\nI0101 10:00:00.000000 1 server.go:117] Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock\nI0101 10:00:00.000000 1 server.go:125] Registered device plugin for 'nvidia.com/gpu' with Kubelet\n"),
    (None, "  Normal  Scheduled  10s  default-scheduler  Successfully assigned default/trainer-0 to node1\n  Normal  Pulled     8s   kubelet            Container image \"nvcr.io/nvidia/pytorch:24.01-py3\" already present on machine\n  Normal  Created    8s   kubelet            Created container trainer\n  Normal  Started    7s   kubelet            Started container trainer\n"),
    # a person asking about the exporter (no log level, ends in a question mark) is no exporter failure, while the
    # same words from the exporter's logger, at any level, are
    (None, "Is there a way to clear xid errors in the dcgm-exporter?\n"),
    ("telemetry_exporter_failure", "time=\"2024-01-01T10:00:00Z\" level=error msg=\"Failed to watch metrics: Error watching fields: Host engine is not valid?\"\n"),
    (None, "time=\"2024-01-01T10:00:00Z\" level=info msg=\"Starting dcgm-exporter\"\ntime=\"2024-01-01T10:00:00Z\" level=info msg=\"DCGM successfully initialized!\"\ntime=\"2024-01-01T10:00:00Z\" level=info msg=\"Collecting DCP Metrics\"\ntime=\"2024-01-01T10:00:00Z\" level=info msg=\"Starting webserver\"\n"),
    (None, "nvidia-nvswitch: Probing device 0000:c8:00.0, Vendor Id = 0x10de, Device Id = 0x22a3, Class = 0x68000\nnv-fabricmanager[1234]: Successfully configured all the available GPUs and NVSwitches to route NVLink traffic.\n"),
    (None, "pcieport 0000:00:01.0: AER: enabled with IRQ 26\nmce: CPU0: Thermal monitoring enabled (TM1)\nEDAC MC: Ver: 3.0.0\n"),
    (None, "[rank0]:[W1010 ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank 0]  using GPU 0 to perform barrier as devices used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect.\n"),
    # --- DCGM health and diagnostic messages (dcgm_errors.h DCGM_FR_*_MSG: NVLINK_DOWN, GPU_EXPECTED_NVLINKS_UP,
    # NVLINK_ERROR_THRESHOLD, ROW_REMAP_FAILURE, PENDING_ROW_REMAP, PCIE_WIDTH, PCIE_H_REPLAY_VIOLATION,
    # PCI_REPLAY_RATE, CLOCK_THROTTLE_POWER/THERMAL, NVSWITCH_FATAL_ERROR, VOLATILE_DBE_DETECTED,
    # HOSTENGINE_CONN) and dcgmi health's report; nvidia-smi's clock event reasons.
    ("xid_48_double_bit_ecc", "Health Monitor Report\n+----------------------------------------------------------------------------+\n| Overall Health:  Failure                                                   |\n| GPU ID: 0        | Memory system: Failure                                  |\n|                  | A volatile double-bit ECC error has occurred on GPU 0.  |\n"),
    ("thermal_throttling", "Warning: Clocks are being throttled for GPU 0 because of clock event reasons: HW Thermal Slowdown\n"),
    ("xid_79_fallen_off_bus", "Error: GPU 0 has fallen off the bus\n"),
    ("nvlink_error", "Only 10 NvLinks are up out of the expected 18\n"),
    ("nvlink_error", "GPU 0's NvLink link 3 is currently down Run a field diagnostic on the GPU.\n"),
    ("nvlink_error", "Detected 12 nvlink_flit_crc_error_count_total NvLink errors on GPU 3's NVLink which exceeds threshold of 100\n"),
    ("ecc_row_remap_failure", "GPU 0 had uncorrectable memory errors and row remapping failed. Run a field diagnostic on the GPU.\n"),
    ("gpu_reset_required", "GPU 0 had memory errors and row remappings are pending\n"),
    ("pcie_link_degraded", "GPU 0 is running at PCI link width 8X, which is below the minimum allowed link generation of 16 (parameter 'pcie.min_pci_width')\n"),
    ("pcie_link_degraded", "GPU 0 host-side PCIe replay violation, see dmesg for more information\n"),
    ("power_throttling", "Clocks are being throttled for GPU 0 because of clock event reasons: SW Power Cap, HW Power Brake Slowdown\n"),
    # --- nvidia-smi -q: "Clocks Throttle Reasons" (before 535) / "Clocks Event Reasons".
    ("thermal_throttling", "    Clocks Throttle Reasons\n        Idle                              : Not Active\n        HW Slowdown                       : Active\n            HW Thermal Slowdown           : Active\n            HW Power Brake Slowdown       : Not Active\n        SW Thermal Slowdown               : Active\n"),
    # --- PyTorch: TCPStore / store-based barrier (distributed_c10d.py), the 2.x allocator message,
    # DataLoader's shared-memory hints, IndexKernel.cu's assert, c10::Error from CUDAException.cpp.
    ("nccl_timeout", "torch.distributed.DistBackendError: [2] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: wait timeout after 600000ms, keys: /default_pg/0//cuda//0\n"),
    ("nccl_timeout", "RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key: store_based_barrier_key:1 (world_size=8, worker_count=4, timeout=0:30:00)\n"),
    ("nccl_timeout", "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError\n"),
    ("cuda_oom_capacity", "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 23.65 GiB total capacity; 21.02 GiB already allocated; 1.01 GiB free; 21.55 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n"),
    ("nccl_shm_unavailable", "RuntimeError: DataLoader worker (pid 1234) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.\n"),
    ("nccl_shm_unavailable", "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"),
    ("host_oom_killer", "RuntimeError: DataLoader worker (pid(s) 1234) exited unexpectedly\ntorch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 1234) of binary: /usr/bin/python\n"),
    ("tokenizer_mismatch", "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.\n"),
    ("illegal_memory_access", "terminate called after throwing an instance of 'c10::Error'\n  what():  CUDA error: an illegal memory access was encountered\nException raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most recent call first):\n"),
    ("illegal_memory_access", "[rank0]:[E1010 ProcessGroupNCCL.cpp:1595] [PG 0 Rank 0] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n"),
    # --- vLLM: kv_cache_utils / worker checks, AsyncEngineDeadError, V1 EngineDeadError, MQEngineDeadError,
    # multiproc_executor.py's worker death, the quantization capability check. An engine death that carries
    # its cause (an illegal memory access) names the cause.
    ("kv_cache_exhausted", "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (45136). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"),
    ("kv_cache_exhausted", "ValueError: Insufficient memory for KV cache: 2.50 GiB needed, 1.20 GiB available\n"),
    # vLLM v1 gpu_worker.py's start-up check, before the engine holds anything: most of the device already
    # taken is another process's (a second server, an orphaned EngineCore); a little taken is a utilization
    # set too high for what the device has free. Wrapped as a Ray or notebook log wraps it, too.
    ("noisy_neighbor", "(EngineCore_DP0 pid=811) ValueError: Free memory on device cuda:2 (5.31/23.56 GiB) on startup is less than desired GPU memory utilization (0.8, 18.85 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n"),
    ("noisy_neighbor", "    raise ValueError(\n  ValueError: Free memory on device cuda:0 (2.02/63.59\n  GiB) on startup is less than\n  desired GPU memory utilization (0.92, 58.51 GiB).\n  Decrease GPU memory utilization or\n  reduce GPU memory used by other processes.\n"),
    ("cuda_oom_capacity", "ValueError: Free memory on device (61.05/119.7 GiB) on startup is less than desired GPU memory utilization (0.52, 62.24 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n"),
    (None, "(EngineCore_DP0 pid=3413) DEBUG 12-01 19:49:03 [v1/worker/gpu_worker.py:484] Free memory on device (43.91/44.4 GiB) on startup. Desired GPU memory utilization is (0.9, 39.96 GiB). Actual usage is 13.72 GiB for weight, 1.83 GiB for peak activation.\n"),
    ("cuda_oom_capacity", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 0 has a total capacity of 23.68 GiB of which 98.56 MiB is free. Including non-PyTorch memory, this process has 23.57 GiB memory in use. Of the allocated memory 23.14 GiB is allocated by PyTorch, and 11.73 MiB is reserved by PyTorch but unallocated.\n"),
    ("engine_dead", "ERROR 06-01 10:00:00 async_llm_engine.py:61] Engine background task failed\nvllm.engine.async_llm_engine.AsyncEngineDeadError: Task finished unexpectedly. This should never happen! Please open an issue on Github. See stack trace above for the actual cause.\n"),
    ("engine_dead", "ERROR 06-01 10:00:00 [async_llm.py:420] AsyncLLM output_handler failed.\nvllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n"),
    ("illegal_memory_access", "RuntimeError: Worker failed with error 'CUDA error: an illegal memory access was encountered', please check the stack trace above for the root cause\n"),
    ("engine_dead", "ERROR 06-01 10:00:00 [multiproc_executor.py:140] Worker proc VllmWorker-1 died unexpectedly, shutting down executor.\n"),
    ("illegal_memory_access", "vllm.engine.multiprocessing.MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find the original error: RuntimeError('CUDA error: an illegal memory access was encountered').\n"),
    ("cuda_arch_unsupported", "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 89. Current capability: 80.\n"),
    ("cuda_arch_unsupported", "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n"),
    ("tokenizer_mismatch", "ValueError: Token id 151643 is out of vocabulary\n"),
    # --- SGLang: scheduler exceptions, "Prefill out of memory. Try to lower your batch size." (token-to-KV
    # pool allocation), "Not enough memory. Please try to increase --mem-fraction-static.", decode retraction.
    ("illegal_memory_access", "[2025-01-01 10:00:00] Scheduler hit an exception: Traceback (most recent call last):\n  File \"/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py\", line 1800, in run_scheduler_process\nRuntimeError: CUDA error: an illegal memory access was encountered\n[2025-01-01 10:00:00] Received sigquit from a child process. It usually means the child failed.\n"),
    ("kv_cache_exhausted", "RuntimeError: Prefill out of memory. Try to lower your batch size.\nTry to allocate 512.00 MiB\n"),
    ("kv_cache_exhausted", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.5\n"),
    ("kv_cache_exhausted", "[2025-01-01 10:00:00 TP0] Decode out of memory happened. #retracted_reqs: 3, #new_token_ratio: 0.7000 -> 1.0000\n"),
    # --- TGI launcher: warmup OOM, shard signalled.
    ("cuda_oom_capacity", "2024-01-01T10:00:00.000000Z ERROR text_generation_launcher: Method Warmup encountered an error.\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 22.05 GiB of which 1.47 GiB is free.\n"),
    ("engine_dead", "2024-01-01T10:00:00.000000Z ERROR shard-manager: text_generation_launcher: Shard process was signaled to shutdown with signal 9 rank=0\nError: ShardCannotStart\n"),
    # --- Triton Inference Server: client gRPC status, model_lifecycle.cc load failures (TensorRT plan, ONNX
    # Runtime BFC arena), pinned_memory_manager.cc with a too-old driver.
    ("grpc_deadline_exceeded", "tritonclient.utils.InferenceServerException: [StatusCode.DEADLINE_EXCEEDED] Deadline Exceeded\n"),
    ("tensorrt_engine_incompatible", "E0101 10:00:00.000 1 model_lifecycle.cc:626] failed to load 'detector' version 1: Internal: unable to load plan file to auto complete config: /models/detector/1/model.plan\n"),
    ("cuda_oom_capacity", "E0101 10:00:00.000 1 model_lifecycle.cc:626] failed to load 'llm' version 1: Internal: onnx runtime error 6: Exception during initialization: /onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:376 void* onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of size 268435456\n"),
    ("queue_saturation", "tritonclient.utils.InferenceServerException: [StatusCode.UNAVAILABLE] Exceeds maximum queue size\n"),
    ("cuda_driver_mismatch", "W0101 10:00:00.000 1 pinned_memory_manager.cc:271] Unable to allocate pinned system memory, pinned memory pool will not be available: CUDA driver version is insufficient for CUDA runtime version\nI0101 10:00:00.000 1 cuda_memory_manager.cc:117] CUDA memory pool disabled\n"),
    # --- NVRM and nvidia-smi: RmInitAdapter, fallen off the bus, reset required, Remapped Rows.
    ("gpu_driver_failure", "NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x25:0xffff:1601)\n"),
    ("gpu_driver_failure", "nvidia: module verification failed: signature and/or required key missing - tainting kernel\nNVRM: No NVIDIA GPU found.\n"),
    ("xid_79_fallen_off_bus", "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\nNVRM: GPU 0000:3b:00.0: GPU serial number is 1320221012345.\n"),
    ("gpu_reset_required", "GPU 00000000:3B:00.0: GPU Reset required. Please reset the GPU by running 'nvidia-smi -r' or reboot the system.\n"),
    ("ecc_row_remap_failure", "    Remapped Rows\n        Correctable Error                 : 0\n        Uncorrectable Error               : 8\n        Pending                           : No\n        Remapping Failure Occurred        : Yes\n"),
    ("gpu_reset_required", "    Remapped Rows\n        Correctable Error                 : 0\n        Uncorrectable Error               : 2\n        Pending                           : Yes\n        Remapping Failure Occurred        : No\n"),
    ("xid_79_fallen_off_bus", "nvidia-smi\nUnable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU\n"),
    ("container_gpu_access_lost", "$ nvidia-smi\nFailed to initialize NVML: Unknown Error\n"),
    # nvidia-smi's per-GPU handle failure: NVML initialised and enumerated that GPU (a container that lost its
    # devices fails at NVML init, the line above), so the GPU itself is in trouble, not the container.
    ("xid_79_fallen_off_bus", "$ nvidia-smi\nUnable to determine the device handle for GPU 0000:41:00.0: Unknown Error\n"),
    # NVML_ERROR_GPU_IS_LOST after CUDA found no device: the GPU was there and fell off, not never given
    ("xid_79_fallen_off_bus", "RuntimeError: CUDA error: no CUDA-capable device is detected\n$ nvidia-smi\nUnable to determine the device handle for GPU 0000:41:00.0: GPU is lost.  Reboot the system to recover this GPU\n"),
    ("gpu_not_visible", "RuntimeError: CUDA error: no CUDA-capable device is detected\n$ nvidia-smi\nNo devices were found\n"),
    # --- Kubernetes: kubectl describe sections (Last State / Reason / Exit Code), probes, nvidia-container-cli
    # device errors; dcgm-exporter fatals.
    ("gpu_not_visible", "  Warning  FailedScheduling  5s  default-scheduler  0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod..\n"),
    ("oom_killed_container", "    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n"),
    ("crash_loop", "    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    1\n"),
    ("gpu_not_visible", "  Warning  Failed  10s  kubelet  Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: device error: 1: unknown device: unknown\n"),
    ("model_load_slow", "  Warning  Unhealthy  10s (x12 over 2m)  kubelet  Startup probe failed: Get \"http://10.0.0.5:8000/health\": dial tcp 10.0.0.5:8000: connect: connection refused\n  Normal   Killing    10s  kubelet  Container vllm failed startup probe, will be restarted\n"),
    ("model_load_slow", "  Warning  Unhealthy  5s (x3 over 25s)  kubelet  Liveness probe failed: Get \"http://10.0.0.5:8080/v2/health/live\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)\n  Normal   Killing    5s  kubelet  Container triton failed liveness probe, will be restarted\n"),
    ("telemetry_exporter_failure", "time=\"2024-01-01T10:00:00Z\" level=fatal msg=\"Error watching fields: The third-party Profiling module returned an unrecoverable error\"\n"),
    # --- Linux kernel: panic.c, BUG/GPF oopses, MCE and EDAC (UE), AMD MCA, AER (uncorrected CmpltTO),
    # OOM killer, ext4, Errno 30/24, IPoIB and systemd-networkd carrier loss, x86 package thermal, NVSwitch
    # SXid, systemd's view of a failed Fabric Manager.
    ("host_kernel_panic", "Kernel panic - not syncing: softlockup: hung tasks\n"),
    ("host_kernel_panic", "Kernel panic - not syncing: hung_task: blocked tasks\n"),
    ("host_kernel_panic", "general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] SMP NOPTI\nRIP: 0010:os_release_spinlock+0x1a/0x30 [nvidia]\n"),
    ("host_kernel_panic", "kernel BUG at mm/slub.c:305!\ninvalid opcode: 0000 [#1] SMP PTI\n"),
    ("host_machine_check", "mce: [Hardware Error]: Machine check events logged\nmce: [Hardware Error]: CPU 4: Machine Check Exception: 5 Bank 17: bea0000000000108\nmce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff8102c0f1> {intel_idle+0xb1/0x170}\n"),
    ("host_machine_check", "EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#2_DIMM#0 (channel:2 slot:0 page:0x1234 offset:0x0 grain:32 - err_code:0x00a0:0x0090)\n"),
    ("host_machine_check", "[Hardware Error]: Uncorrected, software restartable error.\n[Hardware Error]: CPU:0 (19:1:1) MC17_STATUS[Over|UE|MiscV|AddrV|-|-|SyndV|UECC|-|-|-]: 0xbc00000000010092\n"),
    ("pcie_link_degraded", "pcieport 0000:00:03.1: AER: Multiple Uncorrected (Non-Fatal) error received: 0000:3b:00.0\nnvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)\nnvidia 0000:3b:00.0:   device [10de:2330] error status/mask=00004000/00000000\nnvidia 0000:3b:00.0:    [14] CmpltTO                (First)\n"),
    ("host_oom_killer", "Out of memory: Killed process 4321 (pt_main_thread) total-vm:80123456kB, anon-rss:60123456kB, file-rss:65536kB, shmem-rss:0kB, UID:0 pgtables:123456kB oom_score_adj:0\n"),
    ("filesystem_readonly", "EXT4-fs warning (device sdb1): ext4_end_bio:343: I/O error 10 writing to inode 1234 starting block 5678)\nEXT4-fs error (device sdb1): ext4_find_entry:1455: inode #2: comm python: reading directory lblock 0\nEXT4-fs (sdb1): Remounting filesystem read-only\n"),
    ("filesystem_readonly", "PermissionError: [Errno 30] Read-only file system: '/root/.cache/huggingface'\n"),
    ("filesystem_readonly", "OSError: [Errno 30] Read-only file system\n"),
    ("host_file_max_reached", "OSError: [Errno 24] Too many open files\n"),
    ("host_file_max_reached", "RuntimeError: unable to open shared memory object </torch_1234_5678_0> in read-write mode: Too many open files (24)\n"),
    ("network_link_flap", "mlx5_core 0000:5e:00.0: mlx5_ib_event:... ib0: Lost carrier\nmlx5_core 0000:5e:00.0 ib0: Lost carrier\nib0: Lost carrier\nib0: Lost carrier\n"),
    ("network_link_flap", "systemd-networkd[812]: enp65s0f0: Lost carrier\nsystemd-networkd[812]: enp65s0f0: Gained carrier\nsystemd-networkd[812]: enp65s0f0: Lost carrier\nsystemd-networkd[812]: enp65s0f0: Gained carrier\nsystemd-networkd[812]: enp65s0f0: Lost carrier\n"),
    ("thermal_throttling", "CPU3: Package temperature above threshold, cpu clock throttled (total events = 12345)\nCPU3: Core temperature above threshold, cpu clock throttled (total events = 12345)\n"),
    ("nvswitch_fatal_error", "nvidia-nvswitch1: SXid (PCI:0000:86:00.0): 20034, Fatal, Link 28 LTSSM Fault Up\nnvidia-nvswitch1: SXid (PCI:0000:86:00.0): 20034, Severity 5 Engine instance 28 Sub-engine instance 00\n"),
    ("nvswitch_fatal_error", "[ERROR] [tid 1234] NVSwitch fatal error detected on GPU, need to reset the GPU\n"),
    ("nvswitch_fatal_error", "systemd[1]: nvidia-fabricmanager.service: Main process exited, code=exited, status=1/FAILURE\nsystemd[1]: nvidia-fabricmanager.service: Failed with result 'exit-code'.\nsystemd[1]: Failed to start NVIDIA fabric manager service.\n"),
    ("power_throttling", "Detected clock throttling due to power violation in GPU 2.\n"),
    ("nvswitch_fatal_error", "Detected fatal errors on NvSwitch 3 link 44\n"),
    # nv-fabricmanager's version check against the loaded driver stops the service (older "don't match",
    # later "doesn't match ... with the matching"): the fabric is never set up
    ("nvswitch_fatal_error", "nv-fabricmanager[2211]: fabric manager NVIDIA GPU driver interface version 535.183.01 don't match with driver version 535.161.08. Please update with matching NVIDIA driver package.\n"),
    ("nvswitch_fatal_error", "Mar 02 09:10:11 node3 nv-fabricmanager[4012]: fabric manager NVIDIA GPU driver interface version 570.124.06 doesn't match with driver version 570.86.15. Please update with the matching NVIDIA driver package.\n"),
    (None, "nv-fabricmanager[2211]: Fabric Manager version 535.183.01 is running with the following configuration options\n"),
    ("telemetry_exporter_failure", "Error: Could not connect to the host engine: 'Host engine connection invalid/disconnected'\n"),
    ("pcie_link_degraded", "Detected more than 8 PCIe replays per minute for GPU 1 : 40\n"),
    ("xid_48_double_bit_ecc", "Detected 2 volatile double-bit ECC error(s) in GPU 0.\n"),
    ("thermal_throttling", "Detected clock throttling due to thermal violation in GPU 5.\n"),
    # --- healthy start-ups: device plugin, SGLang, vLLM V1, Fabric Manager, persistenced, boot dmesg, NCCL
    # over sockets, kubelet image pulls, nvidia-smi reasons all inactive, mlx5 at full PCIe width.
    (None, "I0101 10:00:00.000000 1 main.go:317] Starting FS watcher.\nI0101 10:00:00.000000 1 main.go:324] Starting OS watcher.\nI0101 10:00:00.000000 1 main.go:339] Starting Plugins.\nI0101 10:00:00.000000 1 health.go:124] Ignoring the following XIDs for health checks: map[13:true 31:true 43:true 45:true 68:true 109:true]\n"),
    (None, "[2025-01-01 10:00:00] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.12 GB, mem usage=15.02 GB.\n[2025-01-01 10:00:01] KV Cache is allocated. #tokens: 400000, K size: 20.00 GB, V size: 20.00 GB\n[2025-01-01 10:00:05] The server is fired up and ready to roll!\n"),
    (None, "INFO 06-01 10:00:00 [kv_cache_utils.py:634] GPU KV cache size: 1,234,567 tokens\nINFO 06-01 10:00:00 [kv_cache_utils.py:637] Maximum concurrency for 32,768 tokens per request: 37.68x\nINFO 06-01 10:00:05 [core.py:159] init engine (profile, create kv cache, warmup model) took 30.12 seconds\n"),
    (None, "nvidia-fabricmanager[1234]: Successfully configured all the available NVSwitches to route GPU NVLink traffic. NVLink Peer-to-Peer support will be enabled once the GPUs are successfully registered with the NVLink fabric.\nsystemd[1]: Started NVIDIA fabric manager service.\n"),
    (None, "NVRM: GPU 0000:3b:00.0: RmInitAdapter succeeded\nnvidia-persistenced[1234]: Started (1234)\nnvidia-persistenced[1234]: device 0000:3b:00.0 - registered\n"),
    (None, "[    0.000000] Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #101-Ubuntu SMP\n[    1.234567] pci 0000:3b:00.0: [10de:2330] type 00 class 0x030200\n[    2.345678] nvidia: loading out-of-tree module taints kernel.\n[    3.456789] EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro. Quota mode: none.\n"),
    (None, "node1:1234:1234 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\nnode1:1234:1234 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\nnode1:1234:1234 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\nnode1:1234:1234 [0] NCCL INFO Using network Socket\nnode1:1234:1234 [0] NCCL INFO ncclCommInitRank comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0xabc - Init COMPLETE\n"),
    (None, "  Normal  Pulling  2m  kubelet  Pulling image \"vllm/vllm-openai:latest\"\n  Normal  Pulled   30s kubelet  Successfully pulled image \"vllm/vllm-openai:latest\" in 1m30s\n  Normal  Created  30s kubelet  Created container vllm\n  Normal  Started  29s kubelet  Started container vllm\n"),
    (None, "    Clocks Event Reasons\n        Idle                              : Not Active\n        Applications Clocks Setting       : Not Active\n        SW Power Cap                      : Not Active\n        HW Slowdown                       : Not Active\n            HW Thermal Slowdown           : Not Active\n            HW Power Brake Slowdown       : Not Active\n        Sync Boost                        : Not Active\n        SW Thermal Slowdown               : Not Active\n        Display Clock Setting             : Not Active\n"),
    (None, "mlx5_core 0000:5e:00.0: firmware version: 28.39.1002\nmlx5_core 0000:5e:00.0: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)\nmlx5_core 0000:5e:00.0 ens1f0np0: Link up\n"),

    # --- third pass, by source: NCCL net_ib.cc async port event and flush errors, socket.cc, proxy.cc service
    # thread, shmutils.cc; PyTorch ProcessGroupNCCL.cpp (1.x and 2.x watchdog / abort / heartbeat wording),
    # CUDACachingAllocator, CUDAException.cpp; compute-sanitizer memcheck and cuda-gdb; NVRM Xid 13/31/48/94/
    # 119/149 variants; nvidia-container-cli requirement; nvcc; kernel OOM killer and memcg; node-problem-
    # detector's OOMKilling event; Ray raylet; gRPC status; TensorRT runtime/parser; kernel panics.
    ("nccl_network_error", "node1:1234:5678 [1] transport/net_ib.cc:1001 NCCL WARN NET/IB : Got async event : port error\n"),
    ("nccl_network_error", "node1:1234:5678 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1234> with error 5, opcode 129, len 0, vendor err 249 (Recv)\n"),
    ("nccl_network_error", "node1:1234:5678 [0] transport/net_ib.cc:1688 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<1234> with status=IBV_WC_WR_FLUSH_ERR(5) opcode=IBV_WC_RECV(128) reqSize=0 vendor_err=249 req_type=Recv localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2 hca mlx5_2\n"),
    ("nccl_network_error", "node1:1234:5678 [0] misc/socket.cc:47 NCCL WARN socketProgressOpt: Call to recv from 10.0.0.2<55555> failed : Broken pipe\n"),
    ("nccl_network_error", "node1:1234:5678 [0] NCCL WARN NET/IB : ibv_poll_cq failed with error 1\n"),
    ("nccl_network_error", "node1:1234:5678 [0] NCCL WARN NET/IB : Unable to open device mlx5_0\n"),
    ("nccl_network_error", "node1:1234:5678 [3] NCCL WARN [Service thread] Error encountered progressing operation=Connect, res=3, closing connection\n"),
    ("nccl_timeout", "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 3.  Original reason for failure was: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=99, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600541 milliseconds before timing out.\n"),
    ("nccl_timeout", "RuntimeError: NCCL communicator was aborted on rank 1.  Original reason for failure was: NCCL error: unhandled system error, NCCL version 2.10.3\n"),
    ("nccl_timeout", "[E ProcessGroupNCCL.cpp:737] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1806415 milliseconds before timing out.\n"),
    ("nccl_timeout", "[E ProcessGroupNCCL.cpp:414] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. To avoid this inconsistency, we are taking the entire process down.\n"),
    ("nccl_timeout", "[rank7]:[E ProcessGroupNCCL.cpp:1414] [PG 0 (default_pg) Rank 7] Process group watchdog thread terminated with exception: [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.\n"),
    ("nccl_timeout", "[rank0]:[E ProcessGroupNCCL.cpp:1250] [PG ID 0 PG GUID 0(default_pg) Rank 0] First PG on this rank that detected no heartbeat of its watchdog.\n"),
    ("nccl_segfault", "[node1:01234] *** Process received signal ***\n[node1:01234] Signal: Segmentation fault (11)\n[node1:01234] Signal code: Address not mapped (1)\n[node1:01234] Failing at address: 0x10\n[node1:01234] [ 1] /usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2(+0x71a2b)[0x7f00]\n"),
    ("nccl_segfault", "python[12345]: segfault at 8 ip 00007f1234567890 sp 00007ffd12345678 error 4 in libnccl.so.2.18.1[7f1234500000+d000000]\n"),
    # NCCL maps its intra-node buffers from /dev/shm files (misc/shmutils.cc): a mapped page tmpfs cannot back
    # (a full 64 MiB container /dev/shm) faults with SIGBUS (mmap(2)); a crash in its shm code is the same.
    ("nccl_shm_unavailable", "[worker-0:812  :0:840] Caught signal 7 (Bus error: nonexistent physical address)\n==== backtrace (tid:    840) ====\n 0 0x0000000000042520 __sigaction()  ???:0\n 1 0x00000000000a1b2c ncclProxyService()  ???:0\n 2 0x0000000000094ac3 start_thread()  ???:0\n"),
    ("nccl_shm_unavailable", "[trainer:04321] *** Process received signal ***\n[trainer:04321] Signal: Bus error (7)\n[trainer:04321] Signal code: Non-existant physical address (2)\n[trainer:04321] [ 1] /opt/conda/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2(+0x5f1e0)[0x7f3a]\n"),
    ("nccl_shm_unavailable", "[trainer:04321] *** Process received signal ***\n[trainer:04321] Signal: Segmentation fault (11)\n[trainer:04321] [ 1] /usr/lib/libnccl.so.2(ncclShmOpen+0x1a2)[0x7f3a]\n"),
    # near miss: a segfault in NCCL's other code stays an NCCL crash
    ("nccl_segfault", "[worker-0:812  :0:840] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)\n==== backtrace (tid:    840) ====\n 0 0x0000000000042520 __sigaction()  ???:0\n 1 0x00000000000a1b2c ncclCommInitRank()  ???:0\n"),
    ("nccl_shm_unavailable", "node1:1234:5678 [0] NCCL WARN Error: failed to extend /dev/shm/nccl-ABCDEF to 33030148 bytes, error: No space left on device (28)\n"),
    ("nccl_shm_unavailable", "node1:1234:5678 [0] misc/shmutils.cc:62 NCCL WARN Call to open failed : Permission denied\nnode1:1234:5678 [0] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-1234 (size 5767520)\n"),
    ("cuda_oom_capacity", "RuntimeError: CUDA error: out of memory\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"),
    ("cuda_oom_capacity", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.33 GiB of which 6.81 MiB is free.\n"),
    ("cuda_oom_fragmentation", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 5.21 GiB is free. Including non-PyTorch memory, this process has 73.93 GiB memory in use. Of the allocated memory 52.30 GiB is allocated by PyTorch, and 20.98 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n"),
    # PyTorch's allocator (c10/cuda/CUDACachingAllocator.cpp) reports "free" as the device's free memory after
    # releasing its whole free segments: with enough of it, or enough stranded in split segments with it,
    # the OOM is fragmentation; old format ("reserved in total") and new format.
    ("cuda_oom_fragmentation", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacity of 7.79 GiB of which 3.10 GiB is free. Of the allocated memory 3.95 GiB is allocated by PyTorch, and 40.12 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n"),
    ("cuda_oom_fragmentation", "RuntimeError: CUDA out of memory. Tried to allocate 3.50 GiB (GPU 0; 15.90 GiB total capacity; 1.20 GiB already allocated; 2.10 GiB free; 3.70 GiB reserved in total by PyTorch)\n"),
    # near misses: free memory and the stranded pool together short of the request is a shortage; so is a
    # stranded pool that is a small share of what is reserved (not PyTorch's "reserved >> allocated")
    ("cuda_oom_capacity", "RuntimeError: CUDA out of memory. Tried to allocate 3.00 GiB (GPU 1; 31.75 GiB total capacity; 26.40 GiB already allocated; 2.60 GiB free; 28.10 GiB reserved in total by PyTorch)\n"),
    ("cuda_oom_capacity", "RuntimeError: CUDA out of memory. Tried to allocate 6.00 GiB (GPU 0; 15.90 GiB total capacity; 12.90 GiB already allocated; 1.10 GiB free; 13.80 GiB reserved in total by PyTorch)\n"),
    ("cuda_oom_capacity", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 300.00 MiB is free. Of the allocated memory 22.80 GiB is allocated by PyTorch, and 150.00 MiB is reserved by PyTorch but unallocated.\n"),
    # An OOM on a device something else had filled: what is neither free nor this process's ("this process
    # has N memory in use", or what its allocator reserved, 1.x "N cached" being the unallocated part of it)
    # is most of the GPU and clearly more than the process holds: a second job or a leftover process.
    ("noisy_neighbor", "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.69 GiB total capacity; 1.10 GiB already allocated; 11.56 MiB free; 1.16 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n"),
    ("noisy_neighbor", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 18.00 MiB is free. Process 4242 has 75.02 GiB memory in use. Including non-PyTorch memory, this process has 4.10 GiB memory in use. Of the allocated memory 3.52 GiB is allocated by PyTorch, and 60.00 MiB is reserved by PyTorch but unallocated.\n"),
    ("noisy_neighbor", "RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 10.92 GiB total capacity; 512.00 MiB already allocated; 9.25 MiB free; 20.00 MiB cached)\n"),
    # near misses: the process itself holds most of the device (its context included), or a per-process
    # limit capped the allocator
    ("cuda_oom_capacity", "RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 7.93 GiB total capacity; 6.19 GiB already allocated; 40.00 MiB free; 151.04 MiB cached)\n"),
    ("cuda_oom_capacity", "RuntimeError: CUDA out of memory. Tried to allocate 338.00 MiB (GPU 0; 3.95 GiB total capacity; 1.62 GiB already allocated; 23.00 MiB free; 1.63 GiB reserved in total by PyTorch)\n"),
    ("cuda_oom_capacity", "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 79.15 GiB total capacity; 3.80 GiB already allocated; 1.20 GiB free; 4.00 GiB allowed; 3.90 GiB reserved in total by PyTorch)\n"),
    ("illegal_memory_access", "RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"),
    ("illegal_memory_access", "CUDA Exception: Warp Illegal Address\nThe exception was triggered at PC 0x7fff1234 (kernel.cu:42)\n"),
    ("illegal_memory_access", "========= Invalid __global__ read of size 4 bytes\n=========     at 0x70 in kernel(float*)\n=========     by thread (0,0,0) in block (0,0,0)\n=========     Address 0x7f1200000000 is out of bounds\n"),
    ("xid_13_graphics_exception", "NVRM: Xid (PCI:0000:01:00): 13, pid=12345, name=python, Graphics SM Global Exception on (GPC 0, TPC 2, SM 0): Multiple Warp Errors\n"),
    ("xid_31_mmu_fault", "NVRM: Xid (PCI:0000:41:00): 31, pid=1234, name=python, channel 0x00000012, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC0 GPCCLIENT_T1_0 faulted @ 0x7f52_1c000000. Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_READ\n"),
    ("xid_94_contained_ecc", "NVRM: Xid (PCI:0000:18:00): 94, pid=9876, name=python, Ch 00000008\n"),
    ("xid_48_double_bit_ecc", "NVRM: Xid (PCI:0000:18:00): 48, pid=9876, name=python, Ch 00000008\n"),
    ("xid_119_gsp_timeout", "NVRM: _kgspLogXid119: ********************************* GSP Timeout **********************************\nNVRM: _kgspLogXid119: Note: Please also check logs above.\nNVRM: GPU at PCI:0000:3b:00: GPU-abc\nNVRM: Xid (PCI:0000:3b:00): 119, pid=1234, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5).\n"),
    ("nvlink_error", "NVRM: Xid (PCI:0000:b7:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 05 (0x004505c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"),
    ("launch_timeout_watchdog", "CUDA error: the launch timed out and was terminated\n"),
    ("launch_timeout_watchdog", "cudaErrorLaunchTimeout: the launch timed out and was terminated\n"),
    ("cuda_driver_mismatch", "RuntimeError: The NVIDIA driver on your system is too old (found version 11020). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver.\n"),
    ("cuda_driver_mismatch", "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.6, please update your driver to a newer version, or use an earlier cuda container: unknown\n"),
    ("cuda_arch_unsupported", "RuntimeError: CUDA error: no kernel image is available for execution on the device\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"),
    ("cuda_arch_unsupported", "nvcc fatal   : Unsupported gpu architecture 'compute_90'\n"),
    ("cuda_arch_unsupported", "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n"),
    ("host_oom_killer", "kernel: Out of memory: Killed process 2222 (python3) total-vm:6543210kB, anon-rss:5432100kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:10000kB oom_score_adj:0\nkernel: oom_reaper: reaped process 2222 (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB\n"),
    ("oom_killed_container", "kernel: python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=999\nkernel: memory: usage 16777216kB, limit 16777216kB, failcnt 1234\nkernel: Memory cgroup out of memory: Killed process 4567 (python) total-vm:20000000kB, anon-rss:16000000kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:33000kB oom_score_adj:999\n"),
    ("oom_killed_container", "  Warning  OOMKilling  2m  kernel-monitor  Memory cgroup out of memory: Killed process 4567 (python) total-vm:20000000kB, anon-rss:16000000kB\n"),
    ("crash_loop", "  Warning  BackOff  1m (x7 over 3m)  kubelet  Back-off restarting failed container vllm in pod vllm-0_default(abc)\n"),
    ("ray_oom_killer", "(raylet) node_manager.cc:3040: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: abc, IP: 10.0.0.1) over the last time period. To see more information about the Workers killed on this node, use `ray logs raylet.out -ip 10.0.0.1`\n"),
    ("grpc_deadline_exceeded", "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.DEADLINE_EXCEEDED\n\tdetails = \"Deadline Exceeded\"\n"),
    ("tensorrt_engine_incompatible", "[TRT] [E] 1: [stdArchiveReader.cpp::StdArchiveReader::54] Error Code 1: Serialization (Serialization assertion sizeRead == static_cast<uint64_t>(mEnd - mCurrent) failed.Size specified in header does not match archive size)\n"),
    ("tensorrt_engine_incompatible", "[TRT] [E] IRuntime::deserializeCudaEngine: Error Code 1: Serialization (Serialization assertion safeVersionRead == kSAFE_SERIALIZATION_VERSION failed.Version tag does not match. Note: Current Version: 0, Serialized Engine Version: 239)\n"),
    ("tensorrt_parse_error", "[TRT] [E] ModelImporter.cpp:771: While parsing node number 0 [Resize -> \"output\"]:\n[TRT] [E] ModelImporter.cpp:774: ERROR: builtin_op_importers.cpp:3422 In function importResize:\n[8] Assertion failed: scales.is_weights() && \"Resize scales must be an initializer!\"\n"),
    ("tensorrt_parse_error", "[TRT] [E] [checkMacros.cpp::catchCudaError::272] Error Code 1: Cuda Runtime (invalid argument)\nERROR: Failed to parse the ONNX file.\nIn node -1 (importModel): INVALID_VALUE: Assertion failed: !_importer_ctx.network()->hasImplicitBatchDimension() && \"This version of the ONNX parser only supports TensorRT INetworkDefinitions with an explicit batch dimension.\"\n"),
    ("filesystem_readonly", "sqlite3.OperationalError: attempt to write a readonly database\nOSError: [Errno 30] Read-only file system: '/var/lib/app/db.sqlite'\n"),
    ("host_kernel_panic", "Kernel panic - not syncing: Out of memory and no killable processes...\n"),
    ("host_kernel_panic", "---[ end Kernel panic - not syncing: Fatal exception in interrupt ]---\n"),
    # --- healthy, third pass: NCCL INFO set-up, a ProcessGroupNCCL warning, vLLM memory profiling, driver
    # load, ext4 mount, mlx5 cable plugged.
    (None, "node1:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\nnode1:1234:1234 [0] NCCL INFO Connected all rings\nnode1:1234:1234 [0] NCCL INFO Connected all trees\nnode1:1234:1234 [0] NCCL INFO NCCL_WORK_FIFO_DEPTH set by environment to 4194304.\n"),
    (None, "[rank0]:[W ProcessGroupNCCL.cpp:1234] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for point-to-point collectives. (function operator())\n"),
    (None, "INFO 06-01 10:00:00 [worker.py:267] Memory profiling takes 5.12 seconds\nINFO 06-01 10:00:00 [worker.py:267] the current vLLM instance can use total_gpu_memory (79.15GiB) x gpu_memory_utilization (0.90) = 71.24GiB\nINFO 06-01 10:00:00 [worker.py:267] model weights take 14.99GiB; non_torch_memory takes 0.25GiB; PyTorch activation peak memory takes 1.23GiB; the rest of the memory reserved for KV Cache is 54.77GiB.\n"),
    (None, "kernel: nvidia-nvlink: Nvlink Core is being initialized, major device number 235\nkernel: NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.90.07\nkernel: nvidia_uvm: module uses symbols nvUvmInterfaceDisableAccessCntr from proprietary module nvidia, inheriting taint.\n"),
    (None, "Jan 01 10:00:00 node1 kernel: EXT4-fs (sda1): mounted filesystem 1234-5678 r/w with ordered data mode. Quota mode: none.\nJan 01 10:00:01 node1 systemd[1]: Mounted /data.\n"),
    (None, "mlx5_core 0000:5e:00.0: E-Switch: Total vports 2, per vport: max uc(128) max mc(2048)\nmlx5_core 0000:5e:00.0: Port module event: module 0, Cable plugged\nmlx5_core 0000:5e:00.0 ens1f0np0: Link up\n"),
    # --- abseil's failure signal handler (absl/debugging/failure_signal_handler.cc: "*** %s received at
    # time=%ld on cpu %d ***", then "PC: @ <addr> <size> <symbol>"): NCCL's crash when the frames name NCCL,
    # its shm failure when the signal is SIGBUS; the peer's watchdog timeout is the crash's symptom.
    ("nccl_segfault", "*** SIGSEGV received at time=1700000000 on cpu 7 ***\nPC: @     0x7f3a2b1c4d10  (unknown)  ncclProxyProgress()\n    @     0x7f3a2b1c0000        144  (unknown)\n[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600015 milliseconds before timing out.\n"),
    ("nccl_shm_unavailable", "*** SIGBUS received at time=1700000000 on cpu 5 ***\nPC: @     0x7f3a2b1c4d10  (unknown)  ncclShmOpen()\n"),
    (None, "*** SIGSEGV received at time=1700000000 on cpu 2 ***\nPC: @     0x55d1c0a1b2c3  (unknown)  xla::cpu::CpuCompiler::RunBackend()\n    @     0x55d1c0a10000        208  (unknown)\n"),
    # glog's failure signal handler (PaddlePaddle, Caffe): NCCL's when a frame below is NCCL's
    ("nccl_segfault", "*** Aborted at 1560000000 (unix time) try \"date -d @1560000000\" if you are using GNU date ***\nPC: @                0x0 (unknown)\n*** SIGSEGV (@0x50) received by PID 12833 (TID 0x7f56686c9700) from PID 80; stack trace: ***\n    @     0x7f56682a0160 (unknown)\n    @     0x7f54bff14ea7 freeRing()\n    @     0x7f54bff10cc5 ncclCommInitAll\n    @     0x7f561a1cd190 paddle::platform::NCCLContextMap::NCCLContextMap()\n"),
    (None, "*** SIGSEGV (@0x0) received by PID 4242 (TID 0x7f00aa000700) from PID 0; stack trace: ***\n    @     0x7f00ab0f4390 (unknown)\n    @     0x7f00a9e1c2d0 caffe::Blob<>::Reshape()\n    @     0x7f00a9e30000 caffe::Net<>::Init()\n"),
    # --- PyTorch's DataLoader names the signal a worker died of (strsignal: SIGKILL is "Killed"): a SIGKILL
    # with no other sender named is the kernel's OOM killer; a segfault there is not.
    ("host_oom_killer", "RuntimeError: DataLoader worker (pid 4321) is killed by signal: Killed.\n"),
    (None, "RuntimeError: DataLoader worker (pid 4321) is killed by signal: Segmentation fault.\n"),
    # --- TensorRT 5-7's Engine::deserialize size assertion: a plan serialized by another TensorRT version.
    ("tensorrt_engine_incompatible", "python3: engine.cpp:868: bool nvinfer1::rt::Engine::deserialize(const void*, std::size_t, nvinfer1::IGpuAllocator&, nvinfer1::IPluginFactory*): Assertion `size >= bsize && \"Mismatch between allocated memory size and expected size of serialized engine.\"' failed.\nAborted (core dumped)\n"),
    (None, "[TRT] Loaded engine size: 153 MiB\n[TRT] [MemUsageChange] TensorRT-managed allocation in engine deserialization: CPU +0, GPU +150, now: CPU 0, GPU 150 (MiB)\n"),
    # --- NVIDIA's Xid catalogue: Xid 31 is the driver's report of the fault the process sees as
    # cudaErrorIllegalAddress; told in words beside that CUDA error, the Xid is the cause. The CUDA error alone
    # stays an illegal memory access.
    ("xid_31_mmu_fault", "The worker dies with CUDA_ERROR_ILLEGAL_ADDRESS at the first denoising step.\nThe kernel log has a matching Xid 31 page fault for that pid each time.\n"),
    ("illegal_memory_access", "RuntimeError: CUDA error: an illegal memory access was encountered\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"),
    # The same of Xid 13, the driver's report of an SM exception (out-of-range address, illegal instruction).
    ("xid_13_graphics_exception", "Serving the AWQ model with tensor parallelism on two GPUs reliably triggers NVIDIA Xid 13: Out Of Range Address during CUDA graph replay.\nRuntimeError: CUDA error: an illegal memory access was encountered\n"),
    # --- FreeBSD and NetBSD (sys/net/if.c) log "<ifname>: link state changed to DOWN|UP" for every carrier
    # change, whatever the driver: repeated downs are flaps; one down and up is not.
    ("network_link_flap", "Mar  3 01:10:00 gw kernel: ix0: link state changed to DOWN\nMar  3 01:10:40 gw kernel: ix0: link state changed to UP\nMar  3 04:22:10 gw kernel: ix0: link state changed to DOWN\nMar  3 04:22:55 gw kernel: ix0: link state changed to UP\nMar  3 09:01:30 gw kernel: ix0: link state changed to DOWN\nMar  3 09:02:02 gw kernel: ix0: link state changed to UP\n"),
    (None, "Mar  3 01:10:00 gw kernel: em0: link state changed to DOWN\nMar  3 01:10:04 gw kernel: em0: link state changed to UP\n"),
    # --- Markdown inside a sentence (GitHub renders `code` and **bold** away): a phrase is read across the
    # marks; mounting something read-only on purpose is not the filesystem going read-only.
    ("filesystem_readonly", "Every few days the root filesystem went **read-only** and only a reboot fixed it.\n"),
    (None, "We mount the weights volume **read-only** on purpose so pods cannot modify it.\n"),
    ("nvswitch_fatal_error", "On the HGX H100 node `nvidia-fabric`manager is **not installed**, so every CUDA call fails at init.\n"),
    # --- PyTorch's extension builder (torch/utils/cpp_extension.py) prints "No CUDA runtime is found, using
    # CUDA_HOME=..." when torch.cuda.is_available() is False; beside a container started without the NVIDIA
    # runtime it names the missing GPU (alone, as an image build without a GPU prints it, the text tier does
    # not read it as one: test_rca_text_tier.py).
    ("gpu_not_visible", "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\nThe container was started with plain docker run, without --runtime=nvidia.\n"),
    # the same notice in an image build on a machine without a GPU (a Dockerfile's `pip install -e .` of an
    # extension): healthy, and counted as a healthy case by the text fit, which otherwise sees the notice only
    # beside the runtime flag
    (None, "Step 7/12 : RUN pip install -e .\n ---> Running in 3f2a1b0c9d8e\nNo CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\nSuccessfully built flash-ext\n"),
    # --- the kernel's system-wide file handles (Documentation/admin-guide/sysctl/fs.rst: file-max, file-nr)
    ("host_file_max_reached", "After two days nobody can log in: too many files opened. The first number in /proc/sys/fs/file-nr keeps climbing.\n"),
    (None, "We set fs.file-max = 2097152 in sysctl.conf as the tuning guide recommends.\n"),
    # --- gRPC C++'s sync server (src/cpp/server/server_cc.cc kServerThreadpoolExhausted); a message-size
    # RESOURCE_EXHAUSTED is another limit (test_rca_text_readers.py).
    ("grpc_threadpool_exhaustion", "E1201 10:00:00.000 client.cc:88] RPC failed: status 8 (RESOURCE_EXHAUSTED): Server Threadpool Exhausted\n"),
    # --- the kernel's OOM killer answers the machine running out of RAM (Documentation/admin-guide/mm):
    # "the system runs out of memory" is host memory even on a line that names the GPU; the GPU's is CUDA's.
    ("host_oom_killer", "While the dataset is tokenised (no GPU in use yet) the RSS climbs until the system runs out of memory and the job is killed.\n"),
    ("cuda_oom_capacity", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.10 GiB is free. Of the allocated memory 21.90 GiB is allocated by PyTorch, and 120.00 MiB is reserved by PyTorch but unallocated.\n"),
    # --- people's words for known states: an overheated card, GPU memory that keeps on growing, a model that
    # takes too long to load, Windows' TDR registry values (Microsoft "TDR registry keys")
    ("thermal_throttling", "Throughput halves after twenty minutes: the card overheated and its clocks fell.\n"),
    ("cuda_oom_leak", "Serving one request at a time, the GPU memory keeps on growing with every request.\n"),
    (None, "Serving one request at a time, the GPU memory stays flat at 6 GB.\n"),
    ("model_load_slow", "The 70B checkpoint takes far too long to load from the network share, about 25 minutes.\n"),
    (None, "Loading took 40 seconds, which is what we expect for this size.\n"),
    ("launch_timeout_watchdog", "Long kernels are killed on this Windows box; setting TdrLevel to 0 in the registry stopped it.\n"),
    # --- a crash told in a sentence that places it in NCCL's API (nccl.h camel-case symbols, libnccl); an
    # environment name such as NCCL_DEBUG does not place it there (test_rca_text_readers.py).
    ("nccl_segfault", "With NCCL 2.21 every rank dies with a segfault inside ncclCommInitRank, before any debug output.\n"),
    ("nccl_segfault", "Segmentation fault in libnccl.so.2 as soon as the second communicator is created\n"),
    ("nccl_shm_unavailable", "Without --ipc=host the tutorial would segfault in `ncclShmOpen` on the first collective.\n"),
    # --- nvidia-smi's clock event reasons (--help-query-gpu: clocks_event_reasons.sw_power_cap,
    # .sw_thermal_slowdown) written as states; the same names as a query's columns are no reading.
    ("power_throttling", "Under steady load the card hits sw_power_cap at only 60% of its TDP and the clocks drop.\n"),
    ("thermal_throttling", "After ten minutes nvidia-smi reports hw_thermal_slowdown and the step time doubles.\n"),
    (None, "$ nvidia-smi --query-gpu=index,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_thermal_slowdown --format=csv\nindex, clocks_event_reasons.sw_power_cap, clocks_event_reasons.hw_thermal_slowdown\n0, Not Active, Not Active\n"),
    # --- Kubernetes restarts an exited container per the pod's restartPolicy, with back-off (CrashLoopBackOff);
    # the setting alone is no failure.
    ("crash_loop", "The job pods show CrashLoopBackOff: they finish their work and the restart policy starts them again.\n"),
    (None, "spec:\n  restartPolicy: Always\n  containers:\n  - name: server\n"),
    # --- the straggler as the catalog defines it: one member slower than its peers in the same job (slower
    # than before is a slowdown over time: test_rca_text_tier.py).
    ("straggler_gpu", "On the 8-node run two nodes are about 4x slower than the other nodes, and every step waits for them.\n"),
    # --- 128 + SIGKILL as Go's os/exec ("exit status 137"), Docker Compose ("exited with code 137") and
    # container tools ("status code 137") say it: in a container it is the container's memory limit, on the
    # machine the OOM killer (an unexplained SIGKILL).
    ("oom_killed_container", "Status code 137 means the docker container hit its memory limit during training.\n"),
    ("oom_killed_container", "The inference pod's container exited with code 137 while the model was loading.\n"),
    ("host_oom_killer", "Error: command failed: exit status 137\n"),
    # --- fourth pass, by source. vLLM: v1 gpu_worker.py's start-up free-memory check, the sampler warm-up OOM
    # (gpu_model_runner.py), core.py's run_engine_core ("EngineCore failed to start." / "EngineCore encountered a
    # fatal error."), v0 mp engine start-up, v0 scheduler's SWAP preemption, pynccl_wrapper's "NCCL error: %s"
    # (ncclGetErrorString); healthy: graph capture, torch.compile, API server start, loggers.py's engine stats.
    ("cuda_oom_capacity", "ValueError: Free memory on device (7.34/15.49 GiB) on startup is less than desired GPU memory utilization (0.8, 12.39 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n"),
    ("cuda_oom_capacity", "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.\n"),
    ("engine_dead", "ERROR 06-01 10:00:00 [core.py:586] EngineCore failed to start.\n"),
    ("engine_dead", "RuntimeError: Engine process failed to start. See stack trace for the root cause.\n"),
    ("engine_dead", "ERROR 06-01 10:00:00 [core.py:400] EngineCore encountered a fatal error.\n"),
    ("kv_cache_exhausted", "WARNING 05-01 10:00:00 scheduler.py:1089] Sequence group 12 is preempted by PreemptionMode.SWAP mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=101\n"),
    ("nccl_network_error", "RuntimeError: NCCL error: remote process exited or there was a network error\n"),
    (None, "INFO 06-01 10:00:00 [gpu_model_runner.py:1595] Graph capturing finished in 12 secs, took 0.50 GiB\nINFO 06-01 10:00:00 [monitor.py:34] torch.compile takes 20.51 s in total\nINFO 06-01 10:00:00 [api_server.py:1024] Starting vLLM API server on http://0.0.0.0:8000\n"),
    (None, "INFO 06-01 10:00:10 [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 12.3 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.5%, Prefix cache hit rate: 0.0%\n"),
    (None, "INFO 06-01 10:00:00 [gpu_model_runner.py:1329] Model loading took 14.9919 GiB and 12.345 seconds\nINFO 06-01 10:00:00 [backends.py:459] Dynamo bytecode transform time: 5.12 s\nINFO 06-01 10:00:00 [gpu_worker.py:232] Available KV cache memory: 54.77 GiB\n"),
    # --- SGLang cuda_graph_runner.py: "Capture cuda graph failed: %s" with its stock "Possible solutions" advice
    # (the cause is the wrapped error); healthy capture and the scheduler's Prefill/Decode batch lines.
    ("cuda_oom_capacity", "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 512.00 MiB is free.\nPossible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n3. disable torch compile by not using --enable-torch-compile\n4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\nOpen an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"),
    ("illegal_memory_access", "Exception: Capture cuda graph failed: CUDA error: an illegal memory access was encountered\nPossible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"),
    (None, "[2025-01-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes.\n[2025-01-01 10:00:12 TP0] Capture cuda graph end. Time elapsed: 12.31 s\n[2025-01-01 10:00:20 TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0\n[2025-01-01 10:00:21 TP0] Decode batch. #running-req: 1, #token: 40, token usage: 0.00, gen throughput (token/s): 50.12, #queue-req: 0\n"),
    # --- TensorRT runtime (runtime.cpp deserializeCudaEngine, the "generated on an incompatible device" error of
    # the TensorRT troubleshooting guide) and builder/execution-context OOM (Error Code 2: OutOfMemory).
    ("tensorrt_engine_incompatible", "[07/14/2023-11:41:43] [TRT] [E] 6: The engine plan file is generated on an incompatible device, expecting compute 8.0 got compute 9.0, please rebuild.\n[07/14/2023-11:41:43] [TRT] [E] 4: [runtime.cpp::deserializeCudaEngine::50] Error Code 4: Internal Error (Engine deserialization failed.)\n"),
    ("tensorrt_engine_incompatible", "[TRT] [E] 4: [runtime.cpp::deserializeCudaEngine::66] Error Code 4: Internal Error (Engine deserialization failed.)\n"),
    ("cuda_oom_capacity", "[TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: OutOfMemory (no further information)\n[TRT] [E] 2: [builder.cpp::buildSerializedNetwork::751] Error Code 2: Internal Error (Assertion engine != nullptr failed. )\n"),
    ("cuda_oom_capacity", "[TRT] [W] Requested amount of GPU memory (17179869184 bytes) could not be allocated. There may not be enough free memory for allocation to succeed.\n[TRT] [E] 2: [executionContext.cpp::ExecutionContext::410] Error Code 2: OutOfMemory (Requested size was 17179869184 bytes.)\n"),
    # --- Triton Inference Server: server.cc / model_lifecycle.cc start-up lines; a model whose CUDA stream
    # cannot be created (cudaErrorUnsupportedPtxVersion: the driver is older than the toolkit; out of memory),
    # and tritonserver's "failed to load all models".
    (None, "I0101 10:00:00.000 1 model_lifecycle.cc:839] successfully loaded 'resnet50'\nI0101 10:00:00.000 1 grpc_server.cc:2495] Started GRPCInferenceService at 0.0.0.0:8001\nI0101 10:00:00.000 1 http_server.cc:4619] Started HTTPService at 0.0.0.0:8000\nI0101 10:00:00.000 1 http_server.cc:282] Started Metrics Service at 0.0.0.0:8002\n"),
    ("cuda_driver_mismatch", "E0101 10:00:00.000 1 model_lifecycle.cc:638] failed to load 'ensemble_pre' version 1: Internal: unable to create stream: the provided PTX was compiled with an unsupported toolchain.\n"),
    ("cuda_oom_capacity", "E0101 10:00:00.000 1 model_lifecycle.cc:638] failed to load 'bert' version 1: Internal: unable to create stream: out of memory\nerror: creating server: Internal - failed to load all models\n"),
    # --- NVRM (open-gpu-kernel-modules nv.c, nv-pci.c): API mismatch, an unsupported GPU, an invalid BAR;
    # healthy nvidia-drm / nvidia-modeset start-up.
    ("cuda_driver_mismatch", "[2140090.470492] NVRM: API mismatch: the client has the version 470.129.06, but\n                 NVRM: this kernel module has the version 470.103.01.  Please\n                 NVRM: make sure that this kernel module and all NVIDIA driver\n                 NVRM: components have the same version.\n"),
    ("gpu_driver_failure", "NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:2330)\nNVRM: installed in this system is not supported by the\nNVRM: NVIDIA 470.199.02 driver release.\nNVRM: Please see 'Appendix A - Supported NVIDIA GPU Products'\nNVRM: in this release's README, available on the operating system\nNVRM: specific graphics driver download page at www.nvidia.com.\n"),
    ("gpu_driver_failure", "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\nNVRM: BAR1 is 0M @ 0x0 (PCI:0000:0b:00.0)\nNVRM: The system BIOS may have misconfigured your GPU.\n"),
    (None, "[drm] [nvidia-drm] [GPU ID 0x00003b00] Loading driver\n[drm] Initialized nvidia-drm 0.0.0 20160202 for 0000:3b:00.0 on minor 1\nnvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  535.104.05\n"),
    # --- NVIDIA container toolkit (libnvidia-container: nvml / driver rpc errors), moby's "could not select device
    # driver", and the Container Device Interface's "unresolvable CDI devices" (containerd, podman).
    ("gpu_driver_failure", "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.\n"),
    ("gpu_driver_failure", "nvidia-container-cli: initialization error: driver rpc error: timed out: unknown.\n"),
    # its driver service getting no answer from the driver is the driver's failure; the service failing to
    # start (libcuda missing from the image) gives the container no GPU
    ("gpu_driver_failure", "nvidia-container-cli: detection error: driver error: timed out: unknown\n"),
    ("gpu_not_visible", "nvidia-container-cli: initialization error: driver error: failed to process request\n"),
    ("gpu_not_visible", "docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]].\n"),
    ("gpu_not_visible", "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all\n"),
    # a CDI spec gone stale with a driver upgrade (crun, podman): the files it names are gone.
    ("gpu_not_visible", "Error: crun: cannot stat `/lib64/libEGL_nvidia.so.550.54.14`: No such file or directory: OCI runtime attempted to invoke a command that was not found\n"),
    ("gpu_not_visible", 'Error: setting up CDI devices: failed to inject devices: failed to stat CDI host device "/dev/dri/renderD129": no such file or directory\n'),
    (None, "Error: crun: cannot stat `/srv/data/config.yaml`: No such file or directory: OCI runtime attempted to invoke a command that was not found\n"),
    ("gpu_not_visible", "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: could not apply required modification to OCI specification: error modifying OCI spec: failed to inject CDI devices: unresolvable CDI devices nvidia.com/gpu=all: unknown.\n"),
    # --- PyTorch: torch.distributed.elastic's ChildFailedError (errors/__init__.py: exitcode -9, "Signal 9 (SIGKILL)
    # received by PID"), torchrun's OMP_NUM_THREADS notice (healthy), c10d socket.cpp's client connect timeout.
    ("host_oom_killer", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n============================================================\ntrain.py FAILED\n------------------------------------------------------------\nFailures:\n  <NO_OTHER_FAILURES>\n------------------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n  time      : 2024-01-01_10:00:00\n  host      : node1\n  rank      : 0 (local_rank: 0)\n  exitcode  : -9 (pid: 1234)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 1234\n============================================================\n"),
    ("nccl_timeout", "torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying to connect to (10.0.0.1, 29500).\n"),
    # --- NCCL: CUDACHECK's "Cuda failure '%s'" with an illegal access, bootstrap.cc's "Bootstrap : no socket
    # interface found"; healthy: the net plugin fallback, P2P channel set-up, the comm summary line.
    ("illegal_memory_access", "node1:1234:5678 [0] enqueue.cc:1556 NCCL WARN Cuda failure 'an illegal memory access was encountered'\n"),
    ("nccl_network_error", "node1:1234:1234 [0] bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found\n"),
    (None, "node1:1234:1234 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\nnode1:1234:1234 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\nnode1:1234:1234 [0] NCCL INFO comm 0x55d rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n"),
    # --- kubelet: the eviction manager (eviction/helpers.go "The node was low on resource: %v. "); an image pull
    # failure (ErrImagePull / ImagePullBackOff) is outside the catalog and must name no GPU cause.
    ("host_oom_killer", "  Warning  Evicted  2m  kubelet  The node was low on resource: memory. Threshold quantity: 100Mi, available: 95Mi. Container trainer was using 12Gi, request is 8Gi, has larger consumption of memory.\n"),
    (None, "  Warning  Failed   30s (x3 over 1m)  kubelet  Failed to pull image \"nvcr.io/nvidia/tritonserver:24.01-py3\": rpc error: code = NotFound desc = failed to pull and unpack image\n  Warning  Failed   30s (x3 over 1m)  kubelet  Error: ErrImagePull\n  Normal   BackOff  5s (x4 over 1m)   kubelet  Back-off pulling image \"nvcr.io/nvidia/tritonserver:24.01-py3\"\n  Warning  Failed   5s (x4 over 1m)   kubelet  Error: ImagePullBackOff\n"),
    # --- Linux kernel: mm/oom_kill.c's one-line "oom-kill:constraint=..." summary (CONSTRAINT_MEMCG with
    # oom_memcg vs global_oom), mm/memory-failure.c with MCE's user-access report, jbd2's "Aborting journal",
    # xfs_log.c's log I/O error shutdown.
    ("oom_killed_container", "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-abc.scope,mems_allowed=0-1,oom_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice,task_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cri-containerd-abc.scope,task=python,pid=4567,uid=0\n"),
    ("host_oom_killer", "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/user.slice/user-1000.slice/session-3.scope,task=python,pid=4567,uid=1000\n"),
    ("host_machine_check", "mce: Uncorrected hardware memory error in user-access at 3f1a2b3c00\nMemory failure: 0x3f1a2b3: Sending SIGBUS to python:4567 due to hardware memory corruption\nMemory failure: 0x3f1a2b3: recovery action for dirty LRU page: Recovered\n"),
    ("filesystem_readonly", "Aborting journal on device nvme0n1p2-8.\nEXT4-fs error (device nvme0n1p2) in ext4_reserve_inode_write:5780: Journal has aborted\nEXT4-fs (nvme0n1p2): Remounting filesystem read-only\n"),
    ("filesystem_readonly", "XFS (nvme1n1): log I/O error -5\nXFS (nvme1n1): Log I/O Error (0x2) detected at xlog_ioend_work+0x6e/0x70 [xfs] (fs/xfs/xfs_log.c:1378).  Shutting down filesystem.\nXFS (nvme1n1): Please unmount the filesystem and rectify the problem(s)\n"),
    # --- DCGM diagnostic and health messages (dcgmlib/dcgm_errors.h): UNCONTAINED_ERROR, CUDA_DBE,
    # SXID_ERROR, XID_ERROR, PCIE_GENERATION, THERMAL_VIOLATIONS (and its _TS form),
    # NVLINK_CRC_ERROR_THRESHOLD; its BAD_CUDA_ENV advisory reports no failure.
    ("xid_95_uncontained_ecc", "GPU had an uncontained error (XID 95)\n"),
    ("xid_48_double_bit_ecc", "CUDA APIs have indicated that a double-bit ECC error has occured on GPU 0.\n"),
    ("nvswitch_fatal_error", "Detected fatal NvSwitch SXID 24007\n"),
    ("xid_79_fallen_off_bus", "Detected XID 79 for GPU 2\n"),
    ("xid_48_double_bit_ecc", "Detected XID 48 for GPU 0\n"),
    ("pcie_link_degraded", "GPU 1 is running at PCI link generation 1, which is below the minimum allowed link generation of 4 (parameter 'pcie.min_pci_generation')\n"),
    ("xid_48_double_bit_ecc", "Detected 2 volatile double-bit ECC error(s) in GPU 3.\n"),
    ("xid_48_double_bit_ecc", "GPU 2 had uncorrectable memory errors and 3 rows were remapped\n"),
    ("ecc_row_remap_failure", "GPU 2 had uncorrectable memory errors and row remapping failed.\n"),
    ("thermal_throttling", "There were thermal violations totaling 12.5 seconds for GPU 3\n"),
    ("thermal_throttling", "Temperature 92 of GPU 4 exceeded user-specified maximum allowed temperature 87\n"),
    ("thermal_throttling", "Thermal violations totaling 8.0 seconds started at 3.5 seconds into the test for GPU 1\n"),
    ("nvlink_error", "5.0 nvlink_flit_crc_error_count_total NvLink errors found occuring per second on GPU 1, exceeding the limit of 100 per second.\n"),
    (None, "Found CUDA performance-limiting environment variable 'CUDA_LAUNCH_BLOCKING'.\n"),
    # --- Fabric Manager: on a host with no NVSwitch it exits with NV_WARN_NOTHING_TO_DO (expected there, not a
    # fault); an NVSwitch count that matches no supported topology stops it.
    (None, "nvidia-fabricmanager-start.sh: Detected Pre-NVL5 system\n[Jan 30 2025 10:15:30] [ERROR] [tid 12345] request to query NVSwitch device information from NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]\n"),
    ("nvswitch_fatal_error", "[Jan 30 2025 10:15:30] [ERROR] [tid 12345] detected number of NVSwitches don't match with any supported system topology\n"),
    # --- TGI launcher (launcher/src/main.rs): a shard's start-up wait and ready lines, then a graceful
    # shutdown ("Terminating webserver" ... "Shard terminated") with no failure in it.
    (None, "2024-05-07T12:39:20.293016Z  INFO shard-manager: text_generation_launcher: Waiting for shard to be ready... rank=0\n2024-05-07T12:39:30.565722Z  INFO shard-manager: text_generation_launcher: Shard ready in 20.1s rank=0\n2024-05-07T12:39:31.000000Z  INFO text_generation_launcher: Starting Webserver\n2024-05-07T13:00:00.000000Z  INFO text_generation_launcher: Terminating webserver\n2024-05-07T13:00:00.000000Z  INFO text_generation_launcher: Waiting for webserver to gracefully shutdown\n2024-05-07T13:00:01.000000Z  INFO text_generation_launcher: webserver terminated\n2024-05-07T13:00:01.000000Z  INFO text_generation_launcher: Shutting down shards\n2024-05-07T13:00:02.000000Z  INFO shard-manager: text_generation_launcher: Shard terminated rank=0\n"),
    # --- Linux kernel: one corrected AER Data Link Layer timeout (pcie/aer.c) on a GPU is not a degraded
    # link; XFS's log-error shutdown (xfs_log.c).
    (None, "pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0\nnvidia 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)\nnvidia 0000:01:00.0:   device [10de:2330] error status/mask=00001000/0000e000\nnvidia 0000:01:00.0:    [12] Timeout               \n"),
    ("filesystem_readonly", "XFS (sdb1): Filesystem has been shut down due to log error (0x2).\nXFS (sdb1): Please unmount the filesystem and rectify the problem(s).\n"),
    # --- fifth pass. containerd via kubelet (a RuntimeClass "nvidia" with no configured handler: "no runtime for
    # "nvidia" is configured"), systemd's OOM-killer notices ("A process of this unit has been killed by the OOM
    # killer.", "Failed with result 'oom-kill'."), nvidia-persistenced (nvpd_main.c: no /dev/nvidia* nodes).
    ("gpu_not_visible", "  Warning  FailedCreatePodSandBox  8s (x21 over 9m2s)  kubelet  Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for \"nvidia\" is configured\n"),
    ("host_oom_killer", "systemd[1]: docker.service: A process of this unit has been killed by the OOM killer.\n"),
    ("host_oom_killer", "systemd[1]: session-3.scope: A process of this unit has been killed by the OOM killer.\nsystemd[1]: session-3.scope: Failed with result 'oom-kill'.\n"),
    ("gpu_driver_failure", "nvidia-persistenced[887]: Started (887)\nnvidia-persistenced[887]: Failed to query NVIDIA devices. Please ensure that the NVIDIA device files (/dev/nvidia*) exist, and that user 0 has read and write permissions for those files.\nnvidia-persistenced[887]: Shutdown (887)\n"),
    # --- CUDA runtime via PyTorch: cudaErrorInvalidDevice, torch's "Found no NVIDIA driver on your system";
    # TensorRT's default allocator OOM (defaultAllocator.cpp, Error Code 1: Cuda Runtime).
    ("gpu_not_visible", "RuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"),
    ("gpu_not_visible", "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n"),
    ("cuda_oom_capacity", "[TRT] [E] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime (out of memory)\n"),
    # --- Triton server.cc's model status table: READY (healthy), UNAVAILABLE with the TensorRT backend's reason.
    (None, "I0101 10:00:00.000 1 server.cc:674] \n+----------+---------+--------+\n| Model    | Version | Status |\n+----------+---------+--------+\n| resnet50 | 1       | READY  |\n+----------+---------+--------+\n"),
    ("tensorrt_engine_incompatible", "I0101 10:00:00.000 1 server.cc:674] \n+----------+---------+---------------------------------------------------------+\n| Model    | Version | Status                                                  |\n+----------+---------+---------------------------------------------------------+\n| resnet50 | 1       | UNAVAILABLE: Internal: unable to create TensorRT engine |\n+----------+---------+---------------------------------------------------------+\nerror: creating server: Internal - failed to load all models\n"),
    # --- Linux PCIe DPC (pcie/dpc.c) containing the GPU's port, the nvidia driver unable to recover (err.c).
    ("pcie_link_degraded", "pcieport 0000:00:03.0: DPC: containment event, status:0x1f01 source:0x0000\npcieport 0000:00:03.0: DPC: unmasked uncorrectable error detected\npcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)\nnvidia 0000:3b:00.0: AER: can't recover (no error_detected callback)\n"),
    # --- healthy NCCL INFO start-up and vLLM V1 start-up lines; SGLang's launcher when a child process dies
    # (entrypoints/engine.py "Received sigquit from a child process. It usually means the child failed.").
    (None, "node1:1234:1234 [0] NCCL INFO cudaDriverVersion 12020\nnode1:1234:1234 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\nnode1:1234:1290 [0] NCCL INFO Setting affinity for GPU 0 to ffff,ffffffff\nnode1:1234:1290 [0] NCCL INFO P2P Chunksize set to 524288\nnode1:1234:1290 [0] NCCL INFO Connected all rings\n"),
    (None, "INFO 06-01 10:00:00 [parallel_state.py:1102] rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0\nINFO 06-01 10:00:00 [cuda.py:244] Using Flash Attention backend on V1 engine.\nINFO 06-01 10:00:00 [core.py:69] Initializing a V1 LLM engine (v0.9.1) with config: model='meta-llama/Llama-3.1-8B-Instruct'\n"),
    ("engine_dead", "[2025-01-01 10:00:00] Received sigquit from a child process. It usually means the child failed.\n"),
    # --- sixth pass. vLLM's DeviceConfig with no accelerator platform ("Failed to infer device type"); Triton's
    # metrics.cc warning on GPUs whose power limit NVML reports as 0 (harmless); NVRM's RmInitAdapter stopped at
    # NV_ERR_INSUFFICIENT_POWER (nv.c); dcgm-exporter on a GPU without the profiling module (an info line).
    ("gpu_not_visible", "RuntimeError: Failed to infer device type\n"),
    (None, "I0223 08:55:17.884119 1 http_server.cc:270] Started Metrics Service at 0.0.0.0:8002\nW0223 08:55:18.836390 1 metrics.cc:582] Unable to get power limit for GPU 0. Status:Success, value:0.000000\nW0223 08:55:19.842893 1 metrics.cc:582] Unable to get power limit for GPU 0. Status:Success, value:0.000000\n"),
    ("gpu_driver_failure", "NVRM: GPU 0000:01:00.0: GPU does not have the necessary power cables connected.\nNVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x24:0x1c:1603)\nNVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0\n"),
    ("gpu_driver_failure", "NVRM: GPU 0000:01:00.0: GPU does not have the necessary power cables connected.\n"),
    (None, "time=\"2024-01-01T10:00:00Z\" level=info msg=\"DCGM successfully initialized!\"\ntime=\"2024-01-01T10:00:00Z\" level=info msg=\"Not collecting DCP metrics: This request is serviced by a module of DCGM that is not currently loaded\"\ntime=\"2024-01-01T10:00:00Z\" level=info msg=\"Starting webserver\"\n"),
    # --- torch.distributed.elastic: the agent's SIGTERM to the surviving workers carries no cause; a worker
    # that died of SIGSEGV with no library named names none either; vLLM's input processor rejecting a prompt
    # longer than max_model_len is one request refused, not a KV cache shortage.
    (None, "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 1235 closing signal SIGTERM\n"),
    (None, "ValueError: The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number of text tokens.\n"),
    (None, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n============================================================\ntrain.py FAILED\n------------------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n  time      : 2024-01-01_10:00:00\n  host      : node1\n  rank      : 0 (local_rank: 0)\n  exitcode  : -11 (pid: 1234)\n  error_file: <N/A>\n  traceback : Signal 11 (SIGSEGV) received by PID 1234\n============================================================\n"),
    # --- seventh pass. GPU Operator's driver container (gpu-driver-container nvidia-driver script): no kernel
    # headers for the running kernel, so no driver.
    ("gpu_driver_failure", "========== NVIDIA Software Installer ==========\n\nStarting installation of NVIDIA driver version 535.104.05 for Linux kernel version 5.15.0-1050-aws\n\nStopping NVIDIA persistence daemon...\nUnloading NVIDIA driver kernel modules...\nUnmounting NVIDIA driver rootfs...\nResolving Linux kernel version...\nCould not resolve Linux kernel version\n"),
    # --- PyTorch: the allocator config's once-per-process notice that expandable_segments is not available
    # in this build (CUDAAllocatorConfig.h, as TORCH_WARN and as a Python UserWarning) is a setting ignored,
    # not fragmentation; a 2.x OOM naming another process's memory stays a capacity OOM.
    (None, "[W1001 01:18:06.108184462 CUDAAllocatorConfig.h:28] Warning: expandable_segments not supported on this platform (function operator())\n"),
    (None, "UserWarning: expandable_segments not supported on this platform (Triggered internally at /pytorch/c10/cuda/CUDAAllocatorConfig.h:29.)\n"),
    ("cuda_oom_capacity", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.20 GiB is free. Process 5678 has 10.00 GiB memory in use. Including non-PyTorch memory, this process has 12.40 GiB memory in use. Of the allocated memory 11.80 GiB is allocated by PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated.\n"),
    # --- eighth pass. SGLang's scheduler watchdog and the tokenizer manager's SIGQUIT handler
    # ("SIGQUIT received. signum=..., frame=.... It usually means one child failed."); TensorRT-LLM's
    # check_cuda_error (cudaUtils.h: "[TensorRT-LLM][ERROR] CUDA runtime error in %s: %s").
    ("engine_dead", "[2025-01-01 10:05:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\n[2025-01-01 10:05:00] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n"),
    ("cuda_oom_capacity", "RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMalloc(ptr, n): out of memory (/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:124)\n"),
    ("illegal_memory_access", "RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in cudaStreamIsCapturing(stream, &status): an illegal memory access was encountered (../include/tensorrt_llm/common/cudaUtils.h:157)\n"),
    # --- Linux block layer and jbd2 (fs/jbd2/commit.c "JBD2: Detected IO errors while flushing file data on
    # %s") under ext4's journal abort; the 5.16+ block-layer I/O error line.
    ("filesystem_readonly", "JBD2: Detected IO errors while flushing file data on sdb1-8\nAborting journal on device sdb1-8.\nEXT4-fs error (device sdb1) in ext4_reserve_inode_write: Journal has aborted\n"),
    ("filesystem_readonly", "I/O error, dev nvme1n1, sector 123456 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2\nBuffer I/O error on dev nvme1n1p1, logical block 15432, lost async page write\n"),
    # --- k8s-device-plugin internal/rm/health.go: NVML's event wait failing with GPU_IS_LOST ("Error waiting for
    # event: %v; marking all devices as unhealthy"); a GPU too old for event health checks is only a warning.
    ("xid_79_fallen_off_bus", "I0101 10:00:00.000000       1 health.go:152] Error waiting for event: GPU is lost; marking all devices as unhealthy\n"),
    (None, "W0101 10:00:00.000000       1 health.go:287] Device GPU-6bb9e2a3-4c0f-8fd8-d2a1-03c7b0e1e8b8 is too old to support healthchecking.\nI0101 10:00:00.000000       1 health.go:176] Health monitoring started for 1 devices\n"),
    # --- NVRM (open-gpu-kernel-modules nv-pci.c / nv.c): a 64-bit BAR with no matching bridge window, the module's
    # init giving up, RmInitAdapter after the VBIOS copy failed; an MSI fallback is only a warning.
    ("gpu_driver_failure", "NVRM: This is a 64-bit BAR mapped above 4GB by the system\nNVRM: BIOS or the Linux kernel, but the PCI bridge\nNVRM: immediately upstream of this GPU does not define\nNVRM: a matching prefetchable memory window.\nNVRM: This may be due to a known Linux kernel bug.  Please\nNVRM: see the README section on 64-bit BARs for additional\nNVRM: information.\nNVRM: NVIDIA init module failed!\n"),
    ("gpu_driver_failure", "NVRM: This is a 64-bit BAR mapped above 4GB by the system\nNVRM: BIOS or the Linux kernel, but the PCI bridge\nNVRM: immediately upstream of this GPU does not define\nNVRM: a matching prefetchable memory window.\n"),
    ("gpu_driver_failure", "NVRM: GPU 0000:07:00.0: Failed to copy vbios to system memory.\nNVRM: GPU 0000:07:00.0: RmInitAdapter failed! (0x30:0xffff:794)\nNVRM: GPU 0000:07:00.0: rm_init_adapter failed, device minor number 0\n"),
    (None, "NVRM: GPU 0000:07:00.0: Failed to enable MSI; falling back to PCIe virtual-wire interrupts.\n"),
    # --- NCCL transport/net_ib.cc async-event thread in its 2.1x form ("NET/IB : %s:%d Got async event : %s", device
    # and port named; ibv_event_type_str texts).
    ("nccl_network_error", "node1:1234:5690 [0] transport/net_ib.cc:118 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error\n"),
    ("nccl_network_error", "node1:1234:5690 [0] transport/net_ib.cc:118 NCCL WARN NET/IB : mlx5_3:1 Got async event : local catastrophic error\n"),
    # --- kubelet's kuberuntime ("Stopping container %s" on a graceful stop, healthy) and the pod status as
    # `kubectl get pod -o yaml` prints it (lastState.terminated.reason OOMKilled); vLLM's platform detection
    # and dtype cast notice (healthy).
    (None, "  Normal  Killing  30s  kubelet  Stopping container vllm\n"),
    ("oom_killed_container", "    lastState:\n      terminated:\n        containerID: containerd://0a1b2c3d4e5f\n        exitCode: 137\n        finishedAt: \"2024-01-01T10:00:00Z\"\n        reason: OOMKilled\n        startedAt: \"2024-01-01T09:00:00Z\"\n"),
    (None, "INFO 06-01 10:00:00 [__init__.py:244] Automatically detected platform cuda.\nWARNING 06-01 10:00:00 [config.py:3266] Casting torch.bfloat16 to torch.float16.\n"),
    # --- PyTorch c10d: NCCLUtils / ProcessGroupNCCL errors with NCCL's "Last error:" (2.21 remote-exit, 2.14 CUDA
    # P2P), c10d_cuda's out-of-memory with its full hint block, and ProcessGroupNCCL's constructor on a host
    # with no GPU ("ProcessGroupNCCL is only supported with GPUs, no GPUs found!", ValueError since 2.2).
    ("cuda_oom_capacity", "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"),
    ("nccl_network_error", "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, remote process exited or there was a network error, NCCL version 2.21.5\nncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\nLast error:\nsocketProgress: Connection closed by remote peer node2<39016>\n"),
    ("nccl_p2p_hang", "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled cuda error, NCCL version 2.14.3\nncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 'peer access is not supported between these two devices'\n"),
    ("gpu_not_visible", "ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!\n"),
    ("gpu_not_visible", "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!\n"),
    # --- Telegraf's nvidia_smi input failing a whole gather (its "E!" level; also inside the CloudWatch agent),
    # and Telegraf's start-up line listing that input (healthy).
    ("telemetry_exporter_failure", "Jun 09 17:04:40 gpuhost telegraf[96243]: 2020-06-09T21:04:40Z E! [inputs.nvidia_smi] Error in plugin: strconv.ParseInt: parsing \"[N/A]\": invalid syntax\n"),
    ("telemetry_exporter_failure", "2023-05-25T12:36:38Z E! [inputs.nvidia_smi] Error in plugin: nvidia-smi binary not at path /usr/bin/nvidia-smi, cannot gather GPU data\n"),
    ("telemetry_exporter_failure", "2023-05-25T12:36:38Z E! [telegraf] Error running agent: validate input plugin nvidia_smi failed because of Cannot get file's stat /usr/bin/nvidia-smi: no such file or directory\n"),
    # --- a GPU exporter seen from outside: its registration panic (client_golang) on a metric name a new
    # driver's field gave it, nvidia_gpu_exporter's [N/A] parse failure, kube-prometheus's TargetDown alert
    # and a Prometheus targets-page row for its job. Near misses: the same about an exporter of something else.
    ("telemetry_exporter_failure", 'panic: descriptor Desc{fqName: "nvidia_smi_clocks_event_reasons_counters_sw_power_cap [us]", help: "clocks_event_reasons_counters.sw_power_cap [us]", constLabels: {}, variableLabels: {uuid}} is invalid: "nvidia_smi_clocks_event_reasons_counters_sw_power_cap [us]" is not a valid metric name\n\ngoroutine 1 [running]:\ngithub.com/prometheus/client_golang/prometheus.(*Registry).MustRegister(0xc0001a2000, {0xc000216000, 0x1, 0x1})\n'),
    ("telemetry_exporter_failure", 'ts=2024-01-01T10:00:00.000Z caller=exporter.go:180 level=error error="couldn\'t parse number from: [n/a]"\n'),
    ("telemetry_exporter_failure", "[FIRING:1] TargetDown (dcgm-exporter gpu-operator warning)\n50% of the nvidia-dcgm-exporter/nvidia-dcgm-exporter targets in gpu-operator namespace are down.\n"),
    ("telemetry_exporter_failure", 'http://10.0.3.7:9400/metrics | DOWN | instance="10.0.3.7:9400" job="dcgm" | 12.1s ago | 10.000s | Get "http://10.0.3.7:9400/metrics": context deadline exceeded\n'),
    ('telemetry_exporter_failure', 'ts=2023-03-14T11:29:48.011Z caller=exporter.go:121 level=warn msg="Failed to auto-determine query field names, falling back to the built-in list" error="error running command: exit status 12: command failed. code: 12 | command: nvidia-smi --help-query-gpu | stdout: NVIDIA-SMI couldn\'t find libnvidia-ml.so library in your system. | stderr: "\n'),
    ("telemetry_exporter_failure", "Sep 19 16:23:52 gpu-59 categraf[79833]: 2024/09/19 16:23:52 metrics_agent.go:276: E! failed to init input: local.nvidia_smi error: unexpected query field: vgpu_driver_capability.heterogenous_multivGPU\n"),
    ("telemetry_exporter_failure", 'ts=2024-01-01T10:00:00.000Z level=error source=main.go:180 msg="couldn\'t initialize collector" err="error build collector gpu: failed to find matching device for device ID PCI\\\\VEN_1414&DEV_008C"\n'),
    (None, 'ts=2024-01-01T10:00:00.000Z level=error msg="backup step" error="command failed. code: 1 | command: rsync -a /data /backup"\n'),
    (None, "ERROR: deploy: command failed. stderr: permission denied\n"),
    ("telemetry_exporter_failure", 'ts=2024-01-01T10:00:00.000Z caller=exporter.go:180 level=error error="command failed. stderr: err: exit status 12"\n'),
    (None, 'panic: descriptor Desc{fqName: "node_disk_io_time [s]", help: "io time", constLabels: {}, variableLabels: {device}} is invalid: "node_disk_io_time [s]" is not a valid metric name\n'),
    (None, "100% of the kube-state-metrics/kube-state-metrics targets in monitoring namespace are down.\n"),
    (None, "2020-06-09T21:04:30Z I! Loaded inputs: cpu disk mem nvidia_smi\n2020-06-09T21:04:30Z I! [agent] Config: Interval:10s, Quiet:false, Hostname:\"gpuhost\", Flush Interval:10s\n"),
    # --- the banner of NVIDIA's CUDA container images when no driver was mounted in (nvidia_entrypoint.sh),
    # alone and after a `docker run` that asked for no GPU; the banner of a container that has its GPU (healthy).
    ("gpu_not_visible", "==========\n== CUDA ==\n==========\nCUDA Version 11.4.3\nWARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n   Use the NVIDIA Container Toolkit to start this container with GPU support; see\n"),
    ("gpu_not_visible", "$ docker run --rm -it -v $(pwd):/data nvcr.io/nvidia/pytorch:24.01-py3 python train.py\n==========\n== PyTorch ==\n==========\nWARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"),
    (None, "==========\n== CUDA ==\n==========\nCUDA Version 12.4.1\nContainer image Copyright (c) 2016-2023, NVIDIA CORPORATION & AFFILIATES. All rights reserved.\n"),
    # --- TensorRT stdArchiveReader's magic-tag assertion (a file that is not a plan of this TensorRT) and the 10.x
    # API-usage form of the version check; ONNX Runtime's CUDA EP (CudaCall "CUDA failure %d: %s ; GPU=%d ;
    # hostname=%s ; expr=%s") out of memory; nvidia-smi with no NVML library (ld.so's message).
    ("tensorrt_engine_incompatible", "[TRT] [E] 1: [stdArchiveReader.cpp::StdArchiveReader::32] Error Code 1: Serialization (Serialization assertion magicTagRead == kMAGIC_TAG failed.Magic tag does not match)\n[TRT] [E] 4: [runtime.cpp::deserializeCudaEngine::66] Error Code 4: Internal Error (Engine deserialization failed.)\n"),
    ("tensorrt_engine_incompatible", "[TRT] [E] IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The engine plan file is not compatible with this version of TensorRT, expecting library version 10.0.1.6 got 8.6.1.6, please rebuild.)\n"),
    ("cuda_oom_capacity", "onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running MatMul node. Name:'/model/MatMul' Status Message: CUDA failure 2: out of memory ; GPU=0 ; hostname=node1 ; expr=cudaMalloc((void**)&p, size);\n"),
    # no NVML library where nvidia-smi runs: the driver's files were not given to it (not a failing driver)
    ("gpu_not_visible", "nvidia-smi: error while loading shared libraries: libnvidia-ml.so.1: cannot open shared object file: No such file or directory\n"),
    # go-nvml's error name, as dcgm-exporter's NVML provider logs it when its pod runs without the NVIDIA runtime
    # class (or before the driver installer finished): what broke is the node's GPU telemetry, as the threads of
    # the corpus conclude (the exporter's remediation checks the pod's runtime class)
    ("telemetry_exporter_failure", 'time=2026-11-02T08:14:03.211Z level=ERROR msg="Cannot init NVML library; err: ERROR_LIBRARY_NOT_FOUND"\n'),
    # a workload's own NVML failure beside it is not the exporter's
    ("gpu_not_visible", 'time=2026-11-02T08:14:03.211Z level=ERROR msg="Cannot init NVML library; err: ERROR_LIBRARY_NOT_FOUND"\nnvidia-smi: error while loading shared libraries: libnvidia-ml.so.1: cannot open shared object file: No such file or directory\n'),
    # dcgm-exporter giving up on the GPUs at start-up; its NvSwitch and NvLink notices are normal without them
    ("telemetry_exporter_failure", 'time="2024-12-02T08:18:27Z" level=info msg="Not collecting GPU metrics; Error getting devices count: Cannot perform the requested operation because NVML doesn\'t exist on this system."\n'),
    (None, 'time="2024-12-02T08:18:27Z" level=info msg="Not collecting NvSwitch metrics; no fields to watch for device type: 3"\ntime="2024-12-02T08:18:27Z" level=info msg="Not collecting NvLink metrics; no fields to watch for device type: 3"\n'),
    # --- frameworks that find no usable GPU: PyTorch's text for cudaErrorInitializationError, JAX's xla_bridge
    # falling back to the CPU, TensorFlow's dso_loader / gpu_device.cc ("Cannot dlopen some GPU libraries ...
    # Skipping registering GPU devices...") and its cuInit failure.
    ("gpu_not_visible", "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.\n"),
    ("gpu_not_visible", "WARNING:jax._src.xla_bridge:An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.\n"),
    ("gpu_not_visible", "2024-01-01 10:00:00.000000: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory\n2024-01-01 10:00:00.000000: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1850] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup the required libraries for your platform.\nSkipping registering GPU devices...\n"),
    ("gpu_not_visible", "2024-01-01 10:00:00.000000: E tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:268] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected\n"),
    # --- healthy or below failure: a non-fatal NVSwitch SXid (the driver's "Non-fatal" severity) and DCGM's
    # DCGM_FR_NVSWITCH_NON_FATAL_ERROR ("Monitor the NVSwitch. It can still perform workload."); nvidia-smi -q's
    # fabric state completed; kernel perf-sampling and audit rate notices; nvidia-persistenced's start.
    (None, "nvidia-nvswitch0: SXid (PCI:0000:c8:00.0): 12028, Non-fatal, Link 04 egress non-posted PRIV error (First)\nnvidia-nvswitch0: SXid (PCI:0000:c8:00.0): 12028, Severity 0 Engine instance 04 Sub-engine instance 00\n"),
    (None, "Detected nonfatal errors on NvSwitch 3 link 12\n"),
    (None, "    Fabric\n        State                             : Completed\n        Status                            : Success\n"),
    (None, "[ 1234.567890] perf: interrupt took too long (2503 > 2500), lowering kernel.perf_event_max_sample_rate to 79750\n[ 1300.000000] kauditd_printk_skb: 12 callbacks suppressed\n"),
    (None, "systemd[1]: Starting NVIDIA Persistence Daemon...\nnvidia-persistenced[1234]: Verbose syslog connection opened\nnvidia-persistenced[1234]: Started (1234)\nsystemd[1]: Started NVIDIA Persistence Daemon.\n"),
    # --- vLLM / SGLang start-up: the fd-limit warning (utils set_ulimit: "This can cause fd limit errors like
    # `OSError: [Errno 24] Too many open files`.") names an example, not a failure; the real error after it does;
    # Triton-language kernels' driver error ("Triton Error [CUDA]: %s"); the weight loader's timing (healthy).
    (None, "(APIServer pid=927159) WARNING 11-28 19:08:15 [system_utils.py:222] Found ulimit of 65530 and failed to automatically increase with error current limit exceeds maximum limit. This can cause fd limit errors like `OSError: [Errno 24] Too many open files`. Consider increasing with ulimit -n\n"),
    ("illegal_memory_access", "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered\n"),
    (None, "INFO 06-01 10:00:00 [default_loader.py:272] Loading weights took 3.22 seconds\n"),
    ("host_file_max_reached", "WARNING 11-28 19:08:15 [system_utils.py:222] Found ulimit of 1024 and failed to automatically increase with error current limit exceeds maximum limit. This can cause fd limit errors like `OSError: [Errno 24] Too many open files`. Consider increasing with ulimit -n\nOSError: [Errno 24] Too many open files: '/root/.cache/huggingface/hub/models--x/blobs/abc'\n"),
    # --- warnings of the same tools that report no failure: c10d socket.cpp's connect retry and IPv6 server
    # socket notices, TensorRT's cuDNN-version warning and the ONNX parser's INT64 cast-down
    # warning (onnx2trt_utils.cpp, in the Python API's "[TRT] [W]" and trtexec's "[W] [TRT]" forms; an [E]
    # parse failure after it still counts), vLLM's chunked-prefill INFO.
    (None, "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot assign requested address).\n"),
    (None, "[W socket.cpp:464] [c10d] The server socket cannot be initialized on [::]:29500 (errno: 97 - Address family not supported by protocol).\n"),
    (None, "[TRT] [W] onnx2trt_utils.cpp:374: Your ONNX model has been generated with INT64 weights, while TensorRT does not natively support INT64. Attempting to cast down to INT32.\n"),
    (None, "[TRT] [W] TensorRT was linked against cuDNN 8.6.0 but loaded cuDNN 8.5.0\n"),
    (None, "INFO 06-01 10:00:00 [config.py:2201] Chunked prefill is enabled with max_num_batched_tokens=2048.\n"),
    (None, "[05/15/2024-10:15:51] [W] [TRT] onnx2trt_utils.cpp:374: Your ONNX model has been generated with INT64 weights, while TensorRT does not natively support INT64. Attempting to cast down to INT32.\n"),
    ("tensorrt_parse_error", "[TRT] [W] onnx2trt_utils.cpp:374: Your ONNX model has been generated with INT64 weights, while TensorRT does not natively support INT64. Attempting to cast down to INT32.\n[TRT] [E] ModelImporter.cpp:726: While parsing node number 12 [NonZero -> \"onnx::Gather_123\"]:\n[TRT] [E] ModelImporter.cpp:729: --- End node ---\n[TRT] [E] ModelImporter.cpp:732: ERROR: builtin_op_importers.cpp:4890 In function importFallbackPluginImporter:\n[8] Assertion failed: creator && \"Plugin not found, are the plugin name, version, and namespace correct?\"\n"),
    # the same notice through onnxruntime's TensorRT execution provider (its logger's "[W:onnxruntime:" severity
    # letter) and pasted with no tag at all: still a warning.
    (None, "2024-03-02 11:20:05.118 [W:onnxruntime:Default, tensorrt_execution_provider.h:63 log] [2024-03-02 11:20:05 WARNING] onnx2trt_utils.cpp:374: Your ONNX model has been generated with INT64 weights, while TensorRT does not natively support INT64. Attempting to cast down to INT32.\n"),
    (None, "onnx2trt_utils.cpp:374: Your ONNX model has been generated with INT64 weights, while TensorRT does not natively support INT64. Attempting to cast down to INT32.\n"),
    # --- start-up warnings that report no failure: vLLM's custom all-reduce disabled (custom_all_reduce.py: more
    # than two PCIe-only GPUs, or no P2P; NCCL carries the all-reduce).
    (None, "WARNING 06-01 10:00:00 [custom_all_reduce.py:137] Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly.\n"),
    (None, "WARNING 06-01 10:00:00 [custom_all_reduce.py:146] Custom allreduce is disabled because your platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.\n"),
    # --- ProcessGroupNCCL's destructor warning at a normal exit without destroy_process_group (PyTorch 2.4+),
    # vLLM's WSL pin_memory notice (healthy); PyTorch's CUDA initialization warning with no driver found.
    (None, "[rank0]:[W1010 10:00:00.000000000 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call destroy_process_group to ensure that any pending NCCL operations have finished in this process. In rare cases this process can exit before this point and block the progress of another member of the process group. This constraint has always been present,  but this warning has only recently been added. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())\n"),
    (None, "WARNING 06-01 10:00:00 [interface.py:315] Using 'pin_memory=False' as WSL is detected. This may slow down the performance.\n"),
    ("gpu_not_visible", "UserWarning: CUDA initialization: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n"),
    # --- kubelet readiness failures while a server is still starting (no restart), kube-scheduler finding no node
    # matching the pod's selector (outside the catalog: no GPU fault), the PCI core enabling the GPU and the
    # ACPI _DSM type-mismatch warning many GPU laptops and servers print at boot.
    (None, "  Warning  Unhealthy  15s (x3 over 35s)  kubelet  Readiness probe failed: Get \"http://10.0.0.5:8000/health\": dial tcp 10.0.0.5:8000: connect: connection refused\n"),
    (None, "  Warning  FailedScheduling  12s  default-scheduler  0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.\n"),
    (None, "[    2.345678] nvidia 0000:3b:00.0: enabling device (0000 -> 0003)\n[    2.456789] ACPI Warning: \\_SB.PCI0.GPP0.PEGP._DSM: Argument #4 type mismatch - Found [Buffer], ACPI requires [Package] (20210730/nsarguments-61)\n"),
    # --- vLLM v0 scheduler: one preemption (running total 1) under a burst is normal, not an exhausted cache.
    (None, "WARNING 05-01 10:00:00 [scheduler.py:1057] Sequence group 3 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=1\n"),
    # --- NVRM Xid 63 on a row-remapping GPU (open-gpu-kernel-modules ECC_ROW_REMAP_PENDING formats, with and
    # without the row): the remap waits for a reset; after the DBE that caused it, the DBE stays the cause.
    ("gpu_reset_required", "NVRM: Xid (PCI:0000:55:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x0000000018f31d80) marked for remapping, reset gpu to activate.\n"),
    ("gpu_reset_required", "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.\n"),
    ("xid_48_double_bit_ecc", "NVRM: Xid (PCI:0000:52:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x18f31d80 partition 16, subpartition 3.\nNVRM: Xid (PCI:0000:52:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x0000000018f31d80) marked for remapping, reset gpu to activate.\n"),
    # --- round 9, by source. Stable Diffusion web UIs (AUTOMATIC1111 / SD.Next modules/sd_models.py) print
    # "Weights loaded in <timer summary>" when the checkpoint is changed: minutes is a slow load, seconds not.
    ("model_load_slow", "Loading weights [6ce0161689] from /models/Stable-diffusion/sdxl_base.safetensors\nWeights loaded in 388.2s (calculate hash: 2.1s, load weights from disk: 351.7s, apply weights to model: 30.3s, move model to device: 4.1s).\n"),
    ("model_load_slow", "Weights loaded in 612.9s (send model to cpu: 1.0s, load weights from disk: 580.4s, apply weights to model: 25.2s, move model to device: 6.3s).\n"),
    (None, "Weights loaded in 4.6s (calculate hash: 1.2s, load weights from disk: 0.8s, apply weights to model: 2.1s, move model to device: 0.5s).\n"),
    # LMDeploy's weight-loading bar (tqdm over the safetensors files): elapsed plus remaining is the load time
    # it is heading for; minutes per file is a slow load, seconds not.
    ("model_load_slow", "Loading weights from safetensors:   5%|▌         | 2/38 [11:58<3:35:24, 359.01s/it]\n"),
    (None, "Loading weights from safetensors:  50%|█████     | 4/8 [00:06<00:06,  1.52s/it]\n"),
    # UCX's mlx5 completion error (uct/ib/mlx5/ib_mlx5_log.c, TRANSPORT_RETRY_EXC_ERR); its set-up lines are healthy.
    ("nccl_network_error", "[gpu-node-3:48122:0:48122] ib_mlx5_log.c:177  Error on QP 0x2c1 wqe[118]: Transport retry count exceeded (synd 0x15 vend 0x81) opcode RDMA_WRITE\n"),
    (None, "[1701423112.551203] [gpu-node-3:48122:0] ucp_worker.c:1783 UCX  INFO  ep_cfg[2]: tag(rc_mlx5/mlx5_0:1 rc_mlx5/mlx5_1:1)\n"),
    (None, "UCX_RC_RETRY_COUNT=7 UCX_RC_TIMEOUT=1s mpirun -np 16 ./train\n"),
    # An IB port down and polling as iproute2's `rdma link` and infiniband-diags' ibstat print it; an up port is healthy.
    ("network_link_flap", "$ ibstat mlx5_2\nCA 'mlx5_2'\n\tCA type: MT4123\n\tPort 1:\n\t\tState: Down\n\t\tPhysical state: Polling\n\t\tRate: 10\n\t\tLink layer: InfiniBand\n"),
    ("network_link_flap", "$ rdma link show mlx5_3/1\nlink mlx5_3/1 subnet_prefix fe80:0000:0000:0000 lid 65535 sm_lid 0 lmc 0 state DOWN physical_state POLLING netdev ib3\n"),
    (None, "link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 12 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP netdev ib0\n"),
    (None, "$ ibstat mlx5_0\nCA 'mlx5_0'\n\tCA type: MT4123\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 200\n\t\tLink layer: InfiniBand\n"),
    # Ray 1.x-2.0's raylet memory monitor killing a task (node_manager.cc "System memory low at node ...").
    ("ray_oom_killer", "(raylet, ip=10.0.3.21) [2023-01-04 09:12:55,001 E 211 211] (raylet) node_manager.cc:2966: System memory low at node with IP 10.0.3.21. Used memory (30.12GB) / total capacity (31.26GB) (0.96353) exceeds threshold 0.95, killing latest task with name train_fn() and actor ID ffffffffffffffff1d2f3a4b01000000\n"),
    # Ray 1.x's memory_monitor.py raising RayOutOfMemoryError in the task it stops (raise_if_low_memory).
    ("ray_oom_killer", '  File "/opt/conda/lib/python3.7/site-packages/ray/memory_monitor.py", line 140, in raise_if_low_memory\n    self.error_threshold))\nray.memory_monitor.RayOutOfMemoryError: More than 95% of the memory on node worker-3 is used (30.47 / 31.3 GB). The top 10 memory consumers are:\n\nPID\tMEM\tCOMMAND\n11474\t26.28GiB\tray::Trainer.train()\n'),
    # The GSP-RM firmware the driver boots the GPU with is missing (osinit.c's RmFetchGspRmImages after the
    # kernel's firmware loader), so the adapter never initialises; the optional GSP log image is no failure.
    ("gpu_driver_failure", "[    5.912345] nvidia 0000:00:1e.0: Direct firmware load for nvidia/565.57.01/gsp_tu10x.bin failed with error -2\n"),
    ("gpu_driver_failure", "nvidia 0000:82:00.0: loading /lib/firmware/nvidia/595.71.05/gsp_ga10x.bin failed with error -4\nNVRM: RmFetchGspRmImages: No firmware image found\nNVRM: GPU 0000:82:00.0: RmInitAdapter failed! (0x61:0x56:2074)\n"),
    (None, "nvidia 0000:05:00.0: firmware: failed to load nvidia/595.71.05/gsp_log_ga10x.bin (-2)\nNVRM: RmFetchGspRmImages: Failed to load gsp_log_*.bin, no GSP-RM logs will be printed (non-fatal)\nNVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  595.71.05\n"),
    (None, "(raylet) node_manager.cc:512: Memory usage on node 10.0.3.21 is 61% (threshold 0.95), nothing to do\n"),
    # A BMC's system event log, IPMI sensor type 0Ch (Memory) offsets 01h and 00h as the IPMI spec's table names
    # them: an uncorrectable DIMM error is the host's; a correctable one alone is no failure.
    ("host_machine_check", "SEL | 04/11/2024 02:13:55 | Memory | Uncorrectable ECC / other uncorrectable memory error @DIMM_A1(CPU1) - Asserted\n"),
    ("host_machine_check", "12 | 2024-04-11 02:13:55 | Memory ECC | Uncorrectable ECC/other uncorrectable memory error | Asserted\n"),
    (None, "SEL | 04/11/2024 02:13:55 | Memory | Correctable ECC / other correctable memory error @DIMM_A1(CPU1) - Asserted\n"),
    # --- round 12: tools that say they found or were built without the GPU, and hashcat's temperature monitor.
    # Slurm's controller (src/common/gres.c) drains a node whose slurmd found fewer GPUs than gres.conf declares;
    # llama.cpp (common/arg.cpp) built without a GPU backend ignores the offload flag; hashcat (src/monitor.c)
    # reports the driver's slowdown temperature. Near misses: a node's healthy gres line, a llama.cpp start-up
    # that offloads its layers, hashcat's hardware-monitor line and its abort trigger setting.
    ("gpu_not_visible", "$ scontrol show node gpu-07\n   State=IDLE+DRAIN ThreadsPerCore=2\n   Reason=gres/gpu count reported lower than configured (0 < 8) [slurm@2024-05-02T10:11:12]\n"),
    (None, "NodeName=gpu-07 Arch=x86_64 CoresPerSocket=32\n   Gres=gpu:h100:8(S:0-1)\n   State=IDLE ThreadsPerCore=2\n"),
    ("gpu_not_visible", "warning: not compiled with GPU offload support, --gpu-layers option will be ignored\nwarning: see main README.md for information on enabling GPU BLAS support\n"),
    (None, "llm_load_tensors: offloading 32 repeating layers to GPU\nllm_load_tensors: offloaded 33/33 layers to GPU\nllm_load_tensors:      CUDA0 buffer size =  3820.94 MiB\n"),
    ("thermal_throttling", "Driver temperature threshold met on GPU #1. Expect reduced performance.\n"),
    (None, "Watchdog: Temperature abort trigger set to 90c\nHardware.Mon.#1..: Temp: 64c Fan: 33% Util:100% Core:1890MHz Mem:9501MHz Bus:16\n"),
    # llama.cpp's vocabulary loader on a GGUF with no pre-tokenizer (src/llama-vocab.cpp), and nvidia-smi's refused
    # reset; near misses: a vocabulary that loads, a reset that succeeds.
    ("tokenizer_mismatch", "llm_load_vocab: missing pre-tokenizer type, using: 'default'\nllm_load_vocab:\nllm_load_vocab: ************************************\nllm_load_vocab: GENERATION QUALITY WILL BE DEGRADED!\nllm_load_vocab: CONSIDER REGENERATING THE MODEL\n"),
    (None, "llm_load_vocab: special tokens cache size = 256\nllm_load_vocab: token to piece cache size = 0.8000 MB\nllm_load_print_meta: vocab type       = BPE\n"),
    ("gpu_reset_required", "$ sudo nvidia-smi --gpu-reset -i 0\nThe following GPUs could not be reset:\n  GPU 00000000:3B:00.0: In use by another client\n\n1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, graphics application such as an X server, or a monitoring application such as another instance of nvidia-smi).\n"),
    (None, "$ sudo nvidia-smi --gpu-reset -i 0\nGPU 00000000:3B:00.0 was successfully reset.\nAll done.\n"),
    # --- round 13: llama.cpp's server when every KV cell of its context is taken (tools/server/server.cpp); near
    # miss: the cache's size announced at start-up.
    ("kv_cache_exhausted", "srv  update_slots: failed to find free space in the KV cache, retrying with smaller batch size - try increasing it via the context size or enable defragmentation, i = 0, n_batch = 1024, ret = 1\n"),
    (None, "llama_kv_cache_unified:      CUDA0 KV buffer size =  1024.00 MiB\nllama_kv_cache_unified: size = 1024.00 MiB (  8192 cells,  32 layers,  4 seqs), K (f16):  512.00 MiB, V (f16):  512.00 MiB\n"),
    # --- round 14: vLLM's preemption warning as its documentation prints the running total
    # ("total_cumulative_preemption_cnt=", docs/configuration/optimization.md) and as a formatter that puts the
    # caller after the message leaves it (" (scheduler.py:1558)"); near miss: the first preemption of a run.
    ("kv_cache_exhausted", "WARNING 05-09 00:49:33 scheduler.py:1057 Sequence group 7 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_cumulative_preemption_cnt=51\n"),
    ("kv_cache_exhausted", "Sequence group 224 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=101 (scheduler.py:1558)\n"),
    (None, "WARNING 05-09 00:49:33 scheduler.py:1057 Sequence group 0 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_cumulative_preemption_cnt=1\n"),    # --- round 15: NCCL's socket layer (misc/socket.cc: a connect that the network refuses, a socket the host
    # cannot create) and bootstrap.cc's interface search (NCCL_SOCKET_IFNAME naming no interface the host has);
    # near miss: the libibverbs notice every NCCL prints on a host without RDMA before it uses sockets.
    ("nccl_network_error", "node1:1234:5678 [0] NCCL INFO NET/Socket : Using [0]eno1:10.0.0.1<0>\nnode1:1234:5679 [0] include/socket.h:403 NCCL WARN Connect to fe80::1c2d:3eff:fe4f:5a6b%6<57335> failed : Network is unreachable\n"),
    ("nccl_network_error", "node1:1234:5678 [0] misc/socket.cc:448 NCCL WARN ncclSocketInit: Socket creation failed : Address family not supported by protocol\n"),
    ("nccl_network_error", "node1:1234:5678 [0] bootstrap.cc:88 NCCL WARN Bootstrap : no socket interface found\n"),
    (None, "node1:1234:5678 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\nnode1:1234:5678 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\nnode1:1234:5678 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\nnode1:1234:5678 [0] NCCL INFO Using network Socket\nNCCL version 2.18.1+cuda12.1\n"),
    # --- round 16: the kubelet's admission of a pod whose GPU is gone (pkg/kubelet/cm/devicemanager: "Allocate
    # failed due to requested number of devices unavailable for %s. Requested: %d, Available: %d, which is
    # unexpected"), as `kubectl get pods` then shows the pod (status reason OutOf<resource>); near miss: the same
    # refusal of another device resource.
    ("gpu_not_visible", "NAME                      READY   STATUS                  RESTARTS   AGE\ntrain-job-7c9f            0/1     OutOfnvidia.com/gpu     0          2m\n"),
    ("gpu_not_visible", "Events:\n  Type     Reason                    Age   From     Message\n  ----     ------                    ----  ----     -------\n  Warning  UnexpectedAdmissionError  12s   kubelet  Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 2, Available: 1, which is unexpected\n"),
    (None, "Events:\n  Type     Reason                    Age   From     Message\n  ----     ------                    ----  ----     -------\n  Warning  UnexpectedAdmissionError  12s   kubelet  Allocate failed due to requested number of devices unavailable for example.com/fpga. Requested: 1, Available: 0, which is unexpected\n"),
    # --- round 17: engines other than vLLM saying the KV cache cannot hold one sequence: TensorRT-LLM's
    # KVCacheManager check at start-up (kvCacheManager.cpp), SGLang's retraction when even the last running
    # request finds no free slot (managers/schedule_batch.py); near misses: the sizes both print when healthy.
    ("kv_cache_exhausted", "[TensorRT-LLM][INFO] Max KV cache pages per sequence: 32\n[TensorRT-LLM][ERROR] Assertion failed: maxTokensInPagedKvCache (693) must be large enough to process at least 1 sequence to completion (i.e. must be larger than beam_width (1) * tokensPerBlock (64) * maxBlocksPerSeq (32)) (/src/tensorrt_llm/cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp:419)\n"),
    ("kv_cache_exhausted", "[2025-03-02 10:11:12 TP0] Scheduler hit an exception: Traceback (most recent call last):\n  File \"/sgl-workspace/sglang/python/sglang/srt/managers/schedule_batch.py\", line 1320, in retract_decode\n    assert (\nAssertionError: No space left for only one request, self.token_to_kv_pool_allocator.available_size()=0\n"),
    (None, "[TensorRT-LLM][INFO] Max KV cache pages per sequence: 32\n[TensorRT-LLM][INFO] Number of tokens per block: 64.\n[TensorRT-LLM][INFO] [MemUsageChange] Allocated 14.25 GiB for max tokens in paged KV cache (233472).\n"),
    (None, "[2025-03-02 10:11:12 TP0] Decode batch. #running-req: 12, #token: 20480, token usage: 0.31, gen throughput (token/s): 812.44, #queue-req: 0\n"),
    # --- round 18: TensorFlow's cuda_diagnostics.cc after cuInit failed: its verdict line, and the two versions
    # it reports (the verdict is missing from some versions); a driver/library mismatch leaves cuInit with no
    # device, and that missing GPU is the mismatch's symptom (NVML's own wording beside CUDA's, too). Near miss:
    # the two versions equal, where no device is the finding.
    ("cuda_driver_mismatch", "2018-09-26 16:20:01.273306: E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: CUDA_ERROR_NO_DEVICE\n2018-09-26 16:20:01.273480: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:189] libcuda reported version is: 375.66.0\n2018-09-26 16:20:01.273659: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:193] kernel reported version is: 384.130.0\n"),
    ("cuda_driver_mismatch", "E tensorflow/stream_executor/cuda/cuda_driver.cc:491] failed call to cuInit: CUDA_ERROR_NO_DEVICE\nE tensorflow/stream_executor/cuda/cuda_diagnostics.cc:296] kernel version 352.63.0 does not match DSO version 361.93.2 -- cannot find working devices in this configuration\n"),
    ("cuda_driver_mismatch", "$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\n$ python -c 'import torch; torch.zeros(1).cuda()'\nRuntimeError: No CUDA GPUs are available\n"),
    ("gpu_not_visible", "E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: CUDA_ERROR_NO_DEVICE\nI tensorflow/stream_executor/cuda/cuda_diagnostics.cc:189] libcuda reported version is: 535.104.5\nI tensorflow/stream_executor/cuda/cuda_diagnostics.cc:193] kernel reported version is: 535.104.5\n"),
    ("gpu_not_visible", "E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: CUDA_ERROR_NO_DEVICE\nI tensorflow/stream_executor/cuda/cuda_diagnostics.cc:189] libcuda reported version is: 384.130.0\nI tensorflow/stream_executor/cuda/cuda_diagnostics.cc:193] kernel reported version is: 384.130\n"),
    # --- round 19: text-embeddings-inference's candle backend refusing, at start-up, a GPU whose compute
    # capability its image was not built for (backends/candle: "Runtime compute cap {} is not compatible with
    # compile time compute cap {}"); near miss: the same backend starting its model on the GPU.
    ("cuda_arch_unsupported", "2024-05-02T10:00:01.812Z  INFO text_embeddings_router: router/src/lib.rs:196: Starting model backend\n2024-05-02T10:00:02.104Z ERROR text_embeddings_backend: backends/src/lib.rs:388: Could not start Candle backend: Could not start backend: Runtime compute cap 75 is not compatible with compile time compute cap 80\nError: Could not create backend\n"),
    ("cuda_arch_unsupported", "Error: Could not create backend\n\nCaused by:\n    Could not start backend: Runtime compute cap 120 is not compatible with compile time compute cap 90\n"),
    (None, "2024-05-02T10:00:01.812Z  INFO text_embeddings_router: router/src/lib.rs:196: Starting model backend\n2024-05-02T10:00:02.931Z  INFO text_embeddings_backend_candle: backends/candle/src/lib.rs:251: Starting FlashBert model on Cuda(CudaDevice(DeviceId(1)))\n2024-05-02T10:00:05.407Z  INFO text_embeddings_router: router/src/lib.rs:248: Warming up model\n"),
    # --- round 21: nvidia_gpu_prometheus_exporter (mindprince) exiting when gonvml cannot start NVML in its pod
    # (main.go's log.Fatalf: no level word); near miss: the device plugin's own go-nvml failure, which leaves
    # the node without nvidia.com/gpu.
    ("telemetry_exporter_failure", "2019/03/04 08:12:45 Couldn't initialize gonvml: could not load NVML library. Make sure NVML is in the shared library search path.\n"),
    ("gpu_not_visible", "I0304 08:12:45.000000       1 main.go:256] Retreiving plugins.\nE0304 08:12:45.000000       1 factory.go:87] Failed to initialize NVML: could not load NVML library.\nE0304 08:12:45.000000       1 factory.go:88] If this is a GPU node, did you set the docker default runtime to `nvidia`?\n"),
    # --- round 22: the device plugin (>= 0.15) wrapping go-nvml's return name without "NVML" in capitals
    # ("nvml init failed: ERROR_LIBRARY_NOT_FOUND"): its container was given no driver library, the node
    # advertises no nvidia.com/gpu.
    ("gpu_not_visible", "I0801 15:26:24.781053       1 factory.go:104] Detected NVML platform: found NVML library\nE0801 15:26:24.781100       1 main.go:132] error starting plugins: error creating plugin manager: unable to create plugin manager: nvml init failed: ERROR_LIBRARY_NOT_FOUND\n"),
    # --- round 20: a MIG mode change waiting for the GPU's reset (nvidia-smi -mig's pending-state warning;
    # mig-manager's reading before it resets); near miss: the reading when nothing waits.
    ("gpu_reset_required", "$ sudo nvidia-smi -i 0 -mig 1\nWarning: MIG mode is in pending enable state for GPU 00000000:0B:00.0:In use by another client\n00000000:0B:00.0 is currently being used by one or more other processes (e.g. CUDA application or a monitoring application such as another instance of nvidia-smi). Please first kill all processes using the device and retry the command or reboot the system to make MIG mode effective.\nAll done.\n"),
    (None, "time=\"2024-02-13T10:21:13Z\" level=debug msg=\"Walking MigConfig for (devices=all)\"\ntime=\"2024-02-13T10:21:13Z\" level=debug msg=\"  GPU 0: 0x20B010DE\"\ntime=\"2024-02-13T10:21:13Z\" level=debug msg=\"    MIG capable: true\"\ntime=\"2024-02-13T10:21:13Z\" level=debug msg=\"    Current MIG mode: Enabled\"\ntime=\"2024-02-13T10:21:13Z\" level=debug msg=\"    Mode change pending: false\"\n"),
    # --- round 23: what the GPU operator's and Kubernetes' own output says when a node never got its GPU. The
    # driver container finding no headers for the running kernel (gpu-driver-container's
    # _resolve_kernel_version, then its cleanup trap); a pod row pasted without the table's header; a node
    # whose Capacity lists no GPU resource at all. Near misses: the same container resolving the version, a
    # running pod's row, a node listing its GPUs.
    ("gpu_driver_failure", "Resolving Linux kernel version...\nCould not resolve Linux kernel version\nStopping NVIDIA persistence daemon...\nUnloading NVIDIA driver kernel modules...\nUnmounting NVIDIA driver rootfs...\n"),
    ("gpu_not_visible", "riva-riva-api-768b77d764-74k4m   0/2     OutOfnvidia.com/gpu   0          5m55s\n"),
    ("crash_loop", "vllm-7d9f8c-abcde   0/1     CrashLoopBackOff   5 (2m ago)   12m\n"),
    (None, "vllm-7d9f8c-abcde   1/1     Running   0          3d\n"),
    ("gpu_not_visible", "Capacity:\n  cpu:                32\n  ephemeral-storage:  1951312988Ki\n  hugepages-2Mi:      0\n  memory:             264074052Ki\n  pods:               110\n"),
    (None, "Capacity:\n  cpu:                32\n  ephemeral-storage:  1951312988Ki\n  memory:             264074052Ki\n  nvidia.com/gpu:     8\n  pods:               110\n"),
]
# fmt: on


# Wordings the prose tier's fit does not train on (bench/fit_prose_tier.py learns from SOURCE_WORDINGS only):
# text of the same primary sources that the fitted model has never seen, so these check that it generalises.
# Training on them instead moved the fit's healthy threshold (mostly the warnings written as sentences). The
# healthy ones do set the score limit (scored, not learned): every healthy tool message held must stay quiet.
# fmt: off
UNSEEN_BY_FIT: list[tuple[str | None, str]] = [
    # torchrun's OMP_NUM_THREADS notice (torch/distributed/run.py)
    (None, "WARNING:torch.distributed.run:\n*****************************************\nSetting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. \n*****************************************\n"),
    # DCGM_FR_PERSISTENCE_MODE (dcgm_errors.h)
    (None, "Persistence mode for GPU 0 is disabled.\n"),
    # TensorRT's lazy-loading warning
    (None, "[TRT] [W] CUDA lazy loading is not enabled. Enabling it can significantly reduce device memory usage and speed up TensorRT initialization. See \"Lazy Loading\" section of CUDA documentation https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#lazy-loading\n"),
    # PyTorch's cuBLAS primary-context notice (CublasHandlePool.cpp)
    (None, "UserWarning: Attempting to run cuBLAS, but there was no current CUDA context! Attempting to set the primary context... (Triggered internally at ../aten/src/ATen/cuda/CublasHandlePool.cpp:135.)\n"),
    # transformers' tokenizer length warning (tokenization_utils_base.py)
    (None, "Token indices sequence length is longer than the specified maximum sequence length for this model (1000 > 512). Running this sequence through the model will result in indexing errors\n"),
    # transformers' unused-checkpoint-weights notice (modeling_utils.py)
    (None, "Some weights of the model checkpoint at bert-base-uncased were not used when initializing BertModel: ['cls.predictions.bias']\n- This IS expected if you are initializing BertModel from the checkpoint of a model trained on another task or with another architecture.\n"),
    # the GPU Operator driver container's old modules still in use (nvidia-driver script)
    ("gpu_driver_failure", "Stopping NVIDIA persistence daemon...\nUnloading NVIDIA driver kernel modules...\nnvidia_modeset       1306624  0\nnvidia              56692736  1 nvidia_modeset\nCould not unload NVIDIA driver kernel modules, driver is in use\n"),
    # the same container resolving the kernel version (healthy)
    (None, "Resolving Linux kernel version...\nProceeding with Linux kernel version 5.15.0-91-generic\n"),
    # --- round 7, by source: TensorRT's runtime warning on a plan built on another GPU model; kube-prometheus
    # (kubernetes-mixin) KubePodCrashLooping's description as Alertmanager delivers it; Flyte's pod plugin
    # reporting a task container's terminated state.
    ("tensorrt_engine_incompatible", "[TRT] [W] Using an engine plan file across different models of devices is not recommended and is likely to affect performance or even cause errors.\n"),
    ("telemetry_exporter_failure", "[FIRING:1] KubePodCrashLooping monitoring\nPod monitoring/dcgm-exporter-7xk2p (dcgm-exporter) is in waiting state (reason: \"CrashLoopBackOff\").\n"),
    ("crash_loop", "[FIRING:1] KubePodCrashLooping serving\nPod serving/vllm-0 (vllm) is in waiting state (reason: \"CrashLoopBackOff\").\n"),
    ("oom_killed_container", "[1/1] currentAttempt done. Last Error: USER::Pod failed. No message received from kubernetes.\n[a1b2c3d4e5f6-n0-0] terminated with exit code (137). Reason [Error]. Message: \n.\n"),
    # --- round 11: the GPU stack's own pods crash-looping (kubectl get pods). The NVIDIA device plugin's: the
    # node advertises no nvidia.com/gpu; the driver installer's (GKE's nvidia-driver-installer, the GPU
    # operator's nvidia-driver-daemonset; an init container's loop is told "Init:CrashLoopBackOff"): the driver
    # was never installed. Near misses: a workload pod's loop beside a running plugin is a plain crash loop; a
    # driver that failed to initialise (NVRM) beside the plugin's loop is the driver's failure, the loop its
    # symptom.
    ("gpu_not_visible", "NAME                                   READY   STATUS             RESTARTS   AGE\nnvidia-device-plugin-daemonset-csjxw   0/1     CrashLoopBackOff   12         39m\nvllm-7d9f8c-abcde                      0/1     Pending            0          39m\n"),
    ("gpu_driver_failure", "NAMESPACE     NAME                            READY   STATUS                  RESTARTS   AGE\nkube-system   nvidia-driver-installer-x7k2p   0/1     Init:CrashLoopBackOff   6          12m\n"),
    ("gpu_driver_failure", "NAMESPACE      NAME                                  READY   STATUS             RESTARTS   AGE\ngpu-operator   nvidia-driver-daemonset-5m2xq         0/1     CrashLoopBackOff   9          30m\ngpu-operator   nvidia-device-plugin-daemonset-8kq2w  0/1     Init:0/1           0          30m\n"),
    ("crash_loop", "NAME                                   READY   STATUS             RESTARTS   AGE\nnvidia-device-plugin-daemonset-csjxw   1/1     Running            0          3d\nvllm-7d9f8c-abcde                      0/1     CrashLoopBackOff   5          12m\n"),
    ("gpu_not_visible", "Name:             nvidia-device-plugin-daemonset-csjxw\nNamespace:        kube-system\nContainers:\n  nvidia-device-plugin-ctr:\n    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    1\n"),
    # the same loop as `kubectl get pods -o json` gives it
    ("gpu_not_visible", "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"nvidia-device-plugin-daemonset-csjxw\",\"namespace\":\"kube-system\"},\"spec\":{\"nodeName\":\"gpu-1\"},\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"nvidia-device-plugin-ctr\",\"restartCount\":12,\"ready\":false,\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":\"back-off 5m0s restarting failed container\"}}}]}}]}\n"),
    ("gpu_driver_failure", "NVRM: RmInitAdapter failed! (0x26:0xffff:1436)\nNVRM: rm_init_adapter failed for device bearing minor number 0\nNAME                                   READY   STATUS             RESTARTS   AGE\nnvidia-device-plugin-daemonset-csjxw   0/1     CrashLoopBackOff   12         39m\n"),
    # --- round 12: a person pastes the CUDA error they saw (PyTorch's cudaErrorIllegalAddress text), then what
    # dmesg showed (NVRM's MMU fault line): the driver's report of the same fault is the cause although it is
    # pasted second; the paste's order across two logs is not time. Within the program's own lines the order
    # still counts (the near miss: a collective timeout printed before the illegal access stays a cause of its
    # own, as test_rca_engine shows on records).
    ("xid_31_mmu_fault", "RuntimeError: CUDA error: an illegal memory access was encountered\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n$ sudo dmesg | tail -n 2\nNVRM: Xid (PCI:0000:41:00): 31, pid=2211, name=python, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_2 faulted @ 0x7f3a_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n"),
    ("xid_13_graphics_exception", "terminate called after throwing an instance of 'c10::Error'\n  what():  CUDA error: an illegal memory access was encountered\nand in the kernel log:\n[ 8812.301245] NVRM: Xid (PCI:0000:17:00): 13, pid=40211, name=python3, Graphics SM Warp Exception on (GPC 2, TPC 1, SM 0): Out Of Range Address\n"),
]
# fmt: on




@pytest.mark.parametrize(
    ("expected", "text"),
    [*SOURCE_WORDINGS, *UNSEEN_BY_FIT],
    ids=[
        *(f"{i:03d}-{exp or 'healthy'}" for i, (exp, _) in enumerate(SOURCE_WORDINGS)),
        *(f"unseen-{i:02d}-{exp or 'healthy'}" for i, (exp, _) in enumerate(UNSEEN_BY_FIT)),
    ],
)
def test_source_wording_names_its_cause(tmp_path: Path, expected: str | None, text: str) -> None:
    causes = pasted_causes(tmp_path, text)
    if expected is None:
        assert causes == []
    else:
        assert causes[:1] == [expected], causes


@pytest.mark.parametrize(
    ("line", "code", "uuid"),
    [
        # k8s-device-plugin >= 0.15 (klog): "XidCriticalError: Xid=%d on Device=%s; marking device as unhealthy."
        (
            "I0101 10:00:00.000000       1 health.go:185] XidCriticalError: Xid=79 on Device=GPU-6bb9e2a3-4c0f-8fd8-d2a1-03c7b0e1e8b8; marking device as unhealthy.",
            79,
            "GPU-6bb9e2a3-4c0f-8fd8-d2a1-03c7b0e1e8b8",
        ),
        # older releases (log.Printf): "XidCriticalError: Xid=%d on Device=%s, the device will go unhealthy."
        (
            "2020/01/01 10:00:00 XidCriticalError: Xid=48 on Device=GPU-0a1b2c3d-0000-1111-2222-333344445555, the device will go unhealthy.",
            48,
            "GPU-0a1b2c3d-0000-1111-2222-333344445555",
        ),
    ],
)
def test_device_plugin_xid_is_an_xid_record(line: str, code: int, uuid: str) -> None:
    xids = [e for e in parse_document("plugin.log", line + "\n") if e.key == "xid"]
    assert [e.value for e in xids] == [code]
    assert xids[0].entity.gpu_uuid == uuid


@pytest.mark.parametrize(
    "line",
    [
        'Ollama embed error (503): {"error":"server busy, please try again.  maximum pending requests exceeded"}',
        "HTTP 503 Service Unavailable: pending request queue full",
    ],
)
def test_queue_refusals_of_ollama_and_knative_are_exact_records(line: str) -> None:
    """The refusal is a fact the exact tier reads, not left to the word tiers (which learned it from one
    tune text)."""
    records = [e for e in parse_document("serve.log", line + "\n") if e.key == "request_rejected"]
    assert [e.value for e in records] == ["queue_full"]


@pytest.mark.parametrize(
    "line",
    [
        "update_slots: failed to find free space in the KV cache, retrying with smaller n_batch = 256",
        "decode: failed to find KV cache slot for ubatch of size 512",
        "init_batch: failed to find a memory slot for batch of size 2048",
        "Input prompt is too big compared to KV size. Please try increasing KV size.",
    ],
)
def test_llama_cpp_kv_cache_full_is_an_exact_record(line: str) -> None:
    """llama.cpp's words for a context whose KV cells are all taken: the fact, not left to the word tiers."""
    assert [e.key for e in parse_document("server.log", line + "\n") if e.key == "kv_cache_insufficient"] == [
        "kv_cache_insufficient"
    ]


def _kv_variant(text: str) -> str | None:
    """The kv_cache_exhausted variant that holds on the text's records (None when none does)."""
    from collections import defaultdict

    from gpuobs.rca import load_catalog
    from gpuobs.rca.entities import EntityIndex
    from gpuobs.rca.ranking import evaluate

    records = parse_document("server.log", text)
    by_key: dict[str, list[int]] = defaultdict(list)
    for pos, ev in enumerate(records):
        by_key[ev.key].append(pos)
    (signature,) = [s for s in load_catalog().signatures if s.id == "kv_cache_exhausted"]
    candidate = evaluate(signature, records, by_key, EntityIndex(records))
    return None if candidate is None else candidate.match.variant


def test_a_context_full_while_serving_is_no_start_up_failure() -> None:
    """llama.cpp's full context happens while serving: the record says so (phase "runtime") and the cause is
    the run-time variant; vLLM's cache too small for one sequence stays the start-up one. (The exact record:
    the words tier, refitted each session, may add a text record of its own beside it.)"""
    full = "srv  update_slots: failed to find free space in the KV cache, retrying with smaller batch size\n"
    exact = [e for e in parse_document("server.log", full) if e.tier == "exact"]
    assert [e.attrs.get("phase") for e in exact] == ["runtime"]
    assert _kv_variant(full) == "context_full"
    startup = (
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
        "stored in KV cache (20000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`\n"
    )
    assert _kv_variant(startup) == "startup"


@pytest.mark.parametrize(
    ("line", "count"),
    [
        ("... total_num_cumulative_preemption=51 (scheduler.py:1558)", 51),
        ("... total_cumulative_preemption_cnt=101", 101),
        ("... total_num_cumulative_preemption=1", 1),
    ],
)
def test_the_preemption_total_is_read_in_each_wording(line: str, count: int) -> None:
    """The running total after the caller a formatter appends, and in the documentation's wording."""
    text = (
        "Sequence group 9 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache "
        "space. " + line.removeprefix("... ") + "\n"
    )
    (record,) = [e for e in parse_document("serve.log", text) if e.key == "vllm_preemption"]
    assert record.attrs["count"] == count


@pytest.mark.parametrize(
    "line",
    [
        "e1000e: eth0 NIC Link is Down",
        "igb 0000:02:00.0 eno1: igb: eno1 NIC Link is Down",
        "bnxt_en 0000:3b:00.0 p1p1: NIC Link is Down",
        "e1000: em1 NIC Link is Down",
    ],
)
def test_nic_link_down_forms_are_link_flaps(line: str) -> None:
    """Older Intel drivers name the interface after the driver; p1p1/em1 are biosdevname's names."""
    assert [e.key for e in parse_document("kern.log", line + "\n")] == ["link_flap"]


@pytest.mark.parametrize(
    "line",
    [
        "mce: CPU0: Thermal monitoring enabled (TM1)",
        "EDAC MC: Ver: 3.0.0",
        "EDAC MC0: Giving out device to module skx_edac controller Skylake_socket_0: DEV 0000:3a:0a.0 (INTERRUPT)",
        "pcieport 0000:00:01.0: AER: enabled with IRQ 26",
    ],
)
def test_boot_announcements_of_error_reporting_are_not_errors(line: str) -> None:
    assert [e.key for e in parse_document("dmesg.txt", line + "\n") if e.key == "text_match"] == []


def test_a_watchdog_setting_is_not_a_boot_announcement() -> None:
    """deviceQuery's "Run time limit on kernels: Yes" sits beside nvidia-smi's "Watchdog: Enabled"; the
    boot-announcement rule must leave a bare "enabled" setting to the launch-timeout phrases."""
    text = "Watchdog: Enabled\nthe training run crashed with launch timed out\n"
    hits = [e for e in parse_document("smi.txt", text) if e.key == "text_match"]
    assert any("watchdog: enabled" in e.attrs.get("phrases", []) for e in hits), hits


@pytest.mark.parametrize(
    ("value", "reset"),
    [
        ("Yes", True),
        ("No", False),
        ("N/A", False),
        ("[N/A]", False),
        ("Not Supported", False),
        ("[Not Supported]", False),
        ("Requested functionality has been deprecated", False),
    ],
)
def test_nvidia_smi_reset_status_field_reads_its_value(value: str, reset: bool) -> None:
    """nvidia-smi -q's "GPU Reset Status" section prints "Reset Required : No" on every healthy GPU (and
    "Requested functionality has been deprecated" on newer drivers): only "Yes" is a GPU asking for a reset,
    whether the field is read alone or joined to its section title as an indented block."""
    text = (
        "    GPU Reset Status\n"
        f"        Reset Required                    : {value}\n"
        "        Drain and Reset Recommended       : No\n"
    )
    for document in (text, text.splitlines()[1] + "\n"):
        records = parse_document("nvidia-smi-q.txt", document)
        assert any(e.key == "gpu_reset_required" for e in records) is reset, records
        assert reset or not [e for e in records if e.key == "text_match"], records


_DBE = g.ECC_DBE_VOLATILE.native


@pytest.mark.parametrize(
    ("text", "gpu", "count"),
    [
        ("Detected 2 volatile double-bit ECC error(s) in GPU 3.", "3", 2.0),
        ("The node reports uncorrectable ECC errors on GPU 3 after the job died.", "3", 1.0),
        ("health check: 4 uncorrectable ECC errors on GPU #5, draining", "5", 4.0),
        ("GPU 2 had uncorrectable memory errors and 3 rows were remapped", "2", 1.0),
        ("After adding a second GPU the node reports uncorrectable ECC errors.", None, 1.0),
    ],
)
def test_an_uncorrectable_ecc_report_about_a_gpu_is_its_dbe_count(text: str, gpu: str | None, count: float) -> None:
    """DCGM's health message and a report of uncorrectable ECC errors bound to a GPU (by its index, or by a
    reporting verb on a line that names a GPU) are the GPU's volatile DBE count, an exact fact."""
    found = [e for e in parse_document("health.log", text + "\n") if e.key == _DBE]
    assert [(e.attrs["labels"].get("gpu"), e.value) for e in found] == [(gpu, count)]


@pytest.mark.parametrize(
    "text",
    [
        # a count read and found empty, a question, a supposition: nothing told
        "The node check reports zero uncorrectable ECC errors on GPU 3.",
        "0 uncorrectable ECC errors on GPU 1 after the burn-in.",
        "Do you see uncorrectable ECC errors on GPU 3 as well?",
        "GPU 3 has no uncorrectable ECC errors.",
        "If the node reports uncorrectable ECC errors on GPU 3, drain it.",
        # a host DIMM's uncorrectable ECC, on a line that names no GPU; documentation of the words
        "The server has a failed DIMM throwing uncorrectable ECC errors.",
        "Certain uncorrectable ECC errors (e.g. a double-bit ECC error) can be contained to one application.",
    ],
)
def test_ecc_words_without_a_report_about_a_gpu_are_no_dbe_count(text: str) -> None:
    """The words alone are ambiguous in real text (a host DIMM, documentation, a question): no DBE count."""
    assert [e for e in parse_document("health.log", text + "\n") if e.key == _DBE] == []


@pytest.mark.parametrize(
    "lines",
    [
        ["The node reports uncorrectable ECC errors on GPU 3 after the job died."],
        ["After adding a second GPU the node reports uncorrectable ECC errors."],
        ["The node reports uncorrectable ECC errors on GPU 3 after the job died.",
         "UserWarning: TypedStorage is deprecated.",
         "You can ignore that warning, it has nothing to do with the crash."],
    ],
)
def test_a_reported_dbe_count_names_the_double_bit_ecc_error(tmp_path: Path, lines: list[str]) -> None:
    """The exact reading reaches the engine: the DBE count names Xid 48's signature first, whatever the text
    tier's fitted weights make of the words (they are ambiguous in the corpus, so the fit keeps them low)."""
    assert pasted_causes(tmp_path, "\n".join(lines) + "\n")[:1] == ["xid_48_double_bit_ecc"]


@pytest.mark.parametrize(
    ("line", "refused"),
    [
        ("Could not start backend: Runtime compute cap 75 is not compatible with compile time compute cap 80", True),
        ("2024-05-02T10:00:02Z ERROR text_embeddings_backend: backends/src/lib.rs:388: Could not start Candle backend:"
         " Could not start backend: Runtime compute cap 120 is not compatible with compile time compute cap 90", True),
        # the backend's start on a GPU it was built for; a sentence about compute capability in general
        ("INFO text_embeddings_backend_candle: backends/candle/src/lib.rs:251: Starting FlashBert model on Cuda", False),
        ("Is compute cap 75 compatible with an image built for compile time compute cap 80?", False),
    ],
)
def test_tei_compute_cap_refusal_is_a_no_kernel_image_record(line: str, refused: bool) -> None:
    """text-embeddings-inference's candle backend refuses a GPU its image was not built for with its own
    wording; it is the same finding as CUDA's "no kernel image": an exact record, whatever the tiers make of
    the words."""
    records = parse_document("tei.log", line + "\n")
    found = [e for e in records if e.key == "driver_error" and e.value == "no_kernel_image"]
    assert bool(found) is refused, records


@pytest.mark.parametrize(
    ("line", "failed"),
    [
        ("Could not resolve Linux kernel version", True),
        ("2024-01-09T10:00:01.000Z stderr F Could not resolve Linux kernel version", True),
        # the same container when its sources hold the headers; a how-to naming the message
        ("Proceeding with Linux kernel version 5.15.0-91-generic", False),
        ("Resolving Linux kernel version...", False),
    ],
)
def test_driver_container_without_kernel_headers_is_a_module_build_record(line: str, failed: bool) -> None:
    """The GPU operator's driver container stops before building the module when its package sources hold
    no headers for the node's kernel; no module is built, as when the build itself fails."""
    records = parse_document("nvidia-driver-ctr.log", line + "\n")
    found = [e for e in records if e.key == "driver_error" and e.value == "module_build"]
    assert bool(found) is failed, records


@pytest.mark.parametrize(
    ("text", "pending", "pci"),
    [
        # nvidia-smi -mig 1 on a GPU a process holds, and on one the hypervisor will not reset
        ("Warning: MIG mode is in pending enable state for GPU 00000001:00:00.0:In use by another client\n"
         "00000001:00:00.0 is currently being used by one or more other processes (e.g. CUDA application or a "
         "monitoring application such as another instance of nvidia-smi).", True, "0001:00:00"),
        ("Warning: MIG mode is in pending disable state for GPU 00000000:07:00.0:Timeout\n"
         "Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU 00000000:07:00.0",
         True, "0000:07:00"),
        # mig-manager (mig-parted) before its reset
        ('time="2024-02-13T10:21:13Z" level=debug msg="    Mode change pending: true"', True, None),
        ('time="2024-02-13T10:21:13Z" level=debug msg="At least one mode change pending"', True, None),
        # the reading when nothing waits; the mode applied at once
        ('time="2024-02-13T10:21:13Z" level=debug msg="    Mode change pending: false"', False, None),
        ("Enabled MIG Mode for GPU 00000000:07:00.0\nAll done.", False, None),
    ],
)
def test_a_pending_mig_mode_change_is_a_reset_required_record(text: str, pending: bool, pci: str | None) -> None:
    """A MIG mode change takes effect only at the GPU's next reset: nvidia-smi's pending-state warning and
    mig-manager's pending reading are the GPU waiting for that reset (gpu_reset_required), with the GPU's
    address (normalised) where nvidia-smi gives it."""
    found = [e for e in parse_document("mig.log", text + "\n") if e.key == "gpu_reset_required"]
    assert bool(found) is pending, found
    if pending:
        assert found[0].entity.pci_bus_id == pci


@pytest.mark.parametrize(
    ("line", "reporter"),
    [
        ("2019/03/04 08:12:45 Couldn't initialize gonvml: could not load NVML library. Make sure NVML is in the"
         " shared library search path.", "nvidia_gpu_prometheus_exporter"),
        ('time=2026-11-02T08:14:03.211Z level=ERROR msg="Cannot init NVML library; err: ERROR_LIBRARY_NOT_FOUND"',
         "dcgm-exporter"),
        # a workload's or the device plugin's own NVML failure names no exporter
        ("E0304 08:12:45.000000       1 factory.go:87] Failed to initialize NVML: could not load NVML library.", None),
        ("E0801 15:26:24.781100       1 main.go:132] error starting plugins: error creating plugin manager: unable to"
         " create plugin manager: nvml init failed: ERROR_LIBRARY_NOT_FOUND", None),
    ],
)
def test_an_exporters_own_nvml_failure_names_the_exporter(line: str, reporter: str | None) -> None:
    """The GPU exporters' own wordings of an NVML start-up failure are the exporter's failure: an exporter
    record beside the NVML record, which names its reporter (the exporter's signature explains it)."""
    records = parse_document("exporter.log", line + "\n")
    nvml = [e for e in records if e.key == "nvml_error"]
    assert [e.attrs.get("reporter") for e in nvml] == [reporter], records
    assert any(e.key == "exporter_error" for e in records) is (reporter is not None), records


@pytest.mark.parametrize(
    ("line", "cls"),
    [
        ("E0801 15:26:24.781100       1 main.go:132] error starting plugins: error creating plugin manager: unable to"
         " create plugin manager: nvml init failed: ERROR_LIBRARY_NOT_FOUND", "library_not_found"),
        ("failed to get remapped rows for GPU-ac896b35-5782-c478-4b2a-a661de07770f: failed to get device remapped"
         " rows: ERROR_GPU_IS_LOST", "gpu_lost"),
        # a person's sentence, not a return name
        ("In some experiments one gpu is lost during the training and I have to restart.", None),
    ],
)
def test_go_nvml_return_names_are_nvml_records(line: str, cls: str | None) -> None:
    """Go agents (the device plugin, gpud) print go-nvml's return names with no "NVML" in capitals on the line:
    they are NVML's own errors all the same."""
    found = [e.value for e in parse_document("agent.log", line + "\n") if e.key == "nvml_error"]
    assert found == ([cls] if cls else [])


def test_an_execution_provider_library_that_fails_to_load_is_no_parse_error(tmp_path: Path) -> None:
    """onnxruntime's FAIL status when it cannot load its CUDA provider's library (a CUDA library missing on the
    host: the session runs on the CPU) says nothing about the model; the same status raised by the model's
    own graph is still a parse error."""
    missing = (
        "[E:onnxruntime:Default, provider_bridge_ort.cc:1744 TryGetProviderInfo_CUDA] "
        "provider_bridge_ort.cc:1426 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() "
        "[ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: "
        "libcublasLt.so.12: cannot open shared object file: No such file or directory\n"
    )
    assert "tensorrt_parse_error" not in pasted_causes(tmp_path, missing)
    graph = "onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : Load model failed\n"
    assert pasted_causes(tmp_path, graph)[:1] == ["tensorrt_parse_error"]


def test_a_parse_failure_after_an_untagged_int64_notice_still_counts(tmp_path: Path) -> None:
    """The INT64 notice is a warning with or without its tag; a failure to parse on the next line is not."""
    notice = (
        "onnx2trt_utils.cpp:374: Your ONNX model has been generated with INT64 weights, while TensorRT does not "
        "natively support INT64. Attempting to cast down to INT32.\n"
    )
    assert pasted_causes(tmp_path, notice) == []
    failure = 'In node 12 (importFallbackPluginImporter): UNSUPPORTED_NODE: Assertion failed: creator && "Plugin"\n'
    assert pasted_causes(tmp_path, notice + "ERROR: Failed to parse the ONNX file.\n" + failure)[:1] == [
        "tensorrt_parse_error"
    ]


def test_a_question_about_the_exporter_is_no_exporter_record() -> None:
    """The exporter reader reads a person's question (no log level, a question mark at the end) as no failure of
    the exporter, even with the exporter's own failure words in it; the same words logged at a level still are.
    (Other tiers may still read the question's words: this checks the exact reader alone.)"""
    question = "Why does dcgm-exporter say Failed to watch metrics after a driver upgrade?"
    assert not [e for e in parse_text(question) if e.key == "exporter_error"]
    logged = f'time="2024-01-01T10:00:00Z" level=error msg="{question}"'
    assert [e.key for e in parse_text(logged) if e.key == "exporter_error"] == ["exporter_error"]
    assert [e.key for e in parse_text(question.rstrip("?")) if e.key == "exporter_error"] == ["exporter_error"]
