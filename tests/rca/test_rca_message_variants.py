"""Known wordings of each failure, across tools and versions, must name the right root cause first.

The real-text corpus (tests/rca/real_corpus) measures the engine on text nobody here wrote; this file
guards what generalises beyond it: the messages as NVIDIA (Xid catalogue, nvidia-smi, the container
toolkit, DCGM, Fabric Manager), PyTorch, NCCL, vLLM, SGLang, TGI, TensorRT, Ray, Kubernetes and the
Linux kernel print them, in several versions' phrasing and in the wrappers people paste them in
(torchrun `[rankN]:` prefixes, compose `svc |` prefixes, journald and dmesg variants, `kubectl describe`
sections). They were written from those projects' sources and documentation, not from the corpus
excerpts. Healthy text of the same tools must get no cause.
"""

# ruff: noqa: E501  (log lines are quoted whole, as tools print them)

from __future__ import annotations

from pathlib import Path

import pytest
from support.pasted import pasted_causes

# (expected root cause or None for healthy text, the text)
VARIANTS: list[tuple[str | None, str]] = [
    # --- container lost its devices / runtime missing -------------------------------------------------
    (
        "container_gpu_access_lost",
        "$ docker exec -it trainer nvidia-smi\nFailed to initialize NVML: Unknown Error\n",
    ),
    (
        "container_gpu_access_lost",
        "After running fine for a few days, the pod can no longer see its GPU:\n"
        "root@pod:/# nvidia-smi\nFailed to initialize NVML: Unknown Error\n"
        "It happens right after systemctl daemon-reload on the host.\n",
    ),
    (
        "gpu_not_visible",
        'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].\n',
    ),
    (
        "gpu_not_visible",
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 12, in <module>\n'
        '    model.to("cuda")\n'
        "RuntimeError: No CUDA GPUs are available\n",
    ),
    (
        "gpu_not_visible",
        "Events:\n  Type     Reason            Age   From               Message\n"
        "  ----     ------            ----  ----               -------\n"
        "  Warning  FailedScheduling  12s   default-scheduler  0/3 nodes are available: "
        "3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims "
        "found for incoming pod.\n",
    ),
    (
        "gpu_not_visible",
        "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:128: UserWarning: CUDA "
        "initialization: Found no NVIDIA driver on your system. Please check that you have an NVIDIA "
        "GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n",
    ),
    (
        "gpu_not_visible",
        "RuntimeError: CUDA error: no CUDA-capable device is detected\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\n",
    ),
    # --- driver / runtime version -------------------------------------------------------------------
    ("cuda_driver_mismatch", "$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\n"),
    (
        "cuda_driver_mismatch",
        "$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\n"
        "NVML library version: 550.54\n",
    ),
    (
        "cuda_driver_mismatch",
        "docker: Error response from daemon: failed to create task for container: failed to create shim "
        "task: OCI runtime create failed: runc create failed: unable to start container process: error "
        "during container init: error running hook #0: error running hook: exit status 1, stdout: , "
        "stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: requirement error: unsatisfied "
        "condition: cuda>=12.4, please update your driver to a newer version, or use an earlier cuda "
        "container: unknown.\n",
    ),
    (
        "cuda_driver_mismatch",
        "ERROR: This container was built for NVIDIA Driver Release 545.23 or later, but\n"
        "       version 470.82.01 was detected and compatibility mode is UNAVAILABLE.\n\n"
        "       [[System has unsupported display driver / cuda driver combination "
        "(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) cuInit()=803]]\n",
    ),
    (
        "cuda_driver_mismatch",
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update "
        "your GPU driver by downloading and installing a new version from the URL: "
        "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
        "PyTorch version that has been compiled with your version of the CUDA driver.\n",
    ),
    (
        "cuda_driver_mismatch",
        "[ 1234.567] NVRM: API mismatch: the client has the version 550.90.07, but\n"
        "NVRM: this kernel module has the version 535.183.01.  Please\n"
        "NVRM: make sure that this kernel module and all NVIDIA driver\n"
        "NVRM: components have the same version.\n",
    ),
    (
        "cuda_driver_mismatch",
        "cudaGetDeviceCount returned 35\n-> CUDA driver version is insufficient for CUDA runtime version\n"
        "Result = FAIL\n",
    ),
    # --- arch ---------------------------------------------------------------------------------------
    (
        "cuda_arch_unsupported",
        "UserWarning:\nNVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the "
        "current PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_50 "
        "sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n",
    ),
    (
        "cuda_arch_unsupported",
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n",
    ),
    ("cuda_arch_unsupported", "nvcc fatal   : Unsupported gpu architecture 'compute_120'\n"),
    # --- CUDA OOM -----------------------------------------------------------------------------------
    (
        "cuda_oom_capacity",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 23.65 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has "
        "22.42 GiB memory in use. Of the allocated memory 21.93 GiB is allocated by PyTorch, and 104.51 "
        "MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
        "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n",
    ),
    (
        "cuda_oom_capacity",
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 3.95 GiB total capacity; "
        "2.90 GiB already allocated; 13.00 MiB free; 2.96 GiB reserved in total by PyTorch) If reserved "
        "memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
        "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n",
    ),
    (
        "cuda_oom_capacity",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
        "shape[64,512,56,56] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
        "allocator GPU_0_bfc\n",
    ),
    (
        "cuda_oom_fragmentation",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
        "capacity of 79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has "
        "78.11 GiB memory in use. Of the allocated memory 52.30 GiB is allocated by PyTorch, and 25.12 "
        "GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
        "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n",
    ),
    (
        "cuda_oom_leak",
        "GPU memory keeps growing every epoch until it crashes with CUDA out of memory:\n"
        "epoch 1: 10.2 GiB allocated\nepoch 2: 12.9 GiB allocated\nepoch 3: 15.5 GiB allocated\n"
        "epoch 4: 18.1 GiB allocated\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
    ),
    # --- illegal memory access ----------------------------------------------------------------------
    (
        "illegal_memory_access",
        "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "[rank3]: CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\n"
        "[rank3]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n",
    ),
    (
        "illegal_memory_access",
        "terminate called after throwing an instance of 'c10::Error'\n"
        "  what():  CUDA error: an illegal memory access was encountered\n"
        "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most "
        "recent call first):\n",
    ),
    (
        "illegal_memory_access",
        "(VllmWorkerProcess pid=312) ERROR 07-25 10:12:01 multiproc_worker_utils.py:226] RuntimeError: "
        "Triton Error [CUDA]: an illegal memory access was encountered\n",
    ),
    (
        "illegal_memory_access",
        "[rank0]:[E1125 03:14:15.926535 ProcessGroupNCCL.cpp:1595] [PG 0 (default_pg) Rank 0] Process "
        "group watchdog thread terminated with exception: CUDA error: an illegal memory access was "
        "encountered\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG 0 (default_pg) Rank 0] Process group watchdog thread terminated with exception: "
        "CUDA error: an illegal memory access was encountered\n",
    ),
    # --- NCCL ---------------------------------------------------------------------------------------
    (
        "nccl_timeout",
        "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=5126, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
        "1800235 milliseconds before timing out.\n"
        "[rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 1] Timeout at NCCL work: 5126, last enqueued "
        "NCCL work: 5126, last completed NCCL work: 5125.\n"
        "[rank1]:[E ProcessGroupNCCL.cpp:577] [Rank 1] Some NCCL operations have failed or timed out. Due "
        "to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/"
        "incomplete data.\n"
        "[rank1]:[E ProcessGroupNCCL.cpp:583] [Rank 1] To avoid data inconsistency, we are taking the "
        "entire process down.\n",
    ),
    (
        "nccl_timeout",
        "[E1017 12:00:00.000000 140 ProcessGroupNCCL.cpp:1375] [PG 0 (default_pg) Rank 2] Heartbeat "
        "monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=1\n",
    ),
    (
        "nccl_network_error",
        "node-2:1234:1300 [3] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
        "10.0.0.3<52021> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.2 "
        "remoteGids::ffff:10.0.0.3 hca mlx5_2\n"
        "node-2:1234:1300 [3] NCCL INFO transport/net.cc:1134 -> 6\n",
    ),
    (
        "nccl_network_error",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version "
        "2.20.5\nncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting prematurely.\nLast error:\nNET/IB : Got completion from peer 10.1.2.3<43210> with "
        "error 12, opcode 0, len 0, vendor err 129\n",
    ),
    (
        "nccl_network_error",
        "worker-0:55:91 [0] misc/socket.cc:538 NCCL WARN Net : Call to recv from 10.2.0.7<34567> failed "
        ": Connection reset by peer\n"
        "worker-0:55:91 [0] NCCL INFO misc/socket.cc:549 -> 6\n",
    ),
    (
        "nccl_shm_unavailable",
        "a100:741:741 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on "
        "device\n"
        "a100:741:741 [0] NCCL INFO include/shm.h:41 -> 2\n"
        "a100:741:741 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
        "/dev/shm/nccl-4wbBzn (size 9637888)\n",
    ),
    (
        "nccl_segfault",
        "[node-1:01234] *** Process received signal ***\n"
        "[node-1:01234] Signal: Segmentation fault (11)\n"
        "[node-1:01234] Signal code: Address not mapped (1)\n"
        "[node-1:01234] [ 0] /lib/x86_64-linux-gnu/libpthread.so.0(+0x14420)[0x7f2c8a8d0420]\n"
        "[node-1:01234] [ 1] /usr/lib/x86_64-linux-gnu/libnccl.so.2(+0x5a3b1)[0x7f2b1c45a3b1]\n",
    ),
    (
        "nccl_p2p_hang",
        "Training with 4 GPUs freezes at the first all_reduce and GPU utilisation stays at 100%.\n"
        "With NCCL_P2P_DISABLE=1 it runs fine. ACS is enabled on the PCIe switches of this board.\n",
    ),
    (
        "network_link_flap",
        "[Mon Jun  3 10:00:01 2024] mlx5_core 0000:3b:00.0 ens1f0: Link down\n"
        "[Mon Jun  3 10:00:04 2024] mlx5_core 0000:3b:00.0 ens1f0: Link up\n"
        "[Mon Jun  3 10:01:12 2024] mlx5_core 0000:3b:00.0 ens1f0: Link down\n"
        "[Mon Jun  3 10:01:15 2024] mlx5_core 0000:3b:00.0 ens1f0: Link up\n"
        "[Mon Jun  3 10:02:40 2024] mlx5_core 0000:3b:00.0 ens1f0: Link down\n",
    ),
    # --- Xid ----------------------------------------------------------------------------------------
    (
        "xid_79_fallen_off_bus",
        "[ 9052.120210] NVRM: Xid (PCI:0000:3b:00): 79, pid=2871, name=python, GPU has fallen off the "
        "bus.\n[ 9052.120218] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n",
    ),
    (
        "xid_79_fallen_off_bus",
        "$ nvidia-smi\nUnable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot "
        "the system to recover this GPU\n",
    ),
    (
        "xid_48_double_bit_ecc",
        "NVRM: Xid (PCI:0000:b1:00): 48, pid=9122, name=python3, An uncorrectable double bit error (DBE) "
        "has been detected on GPU in the framebuffer at partition 6, subpartition 0.\n",
    ),
    (
        "xid_48_double_bit_ecc",
        "RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\n",
    ),
    (
        "xid_13_graphics_exception",
        "NVRM: Xid (PCI:0000:41:00): 13, pid=7788, name=python3, Graphics SM Warp Exception on (GPC 1, "
        "TPC 3, SM 0): Out Of Range Address\n"
        "NVRM: Xid (PCI:0000:41:00): 13, pid=7788, name=python3, Graphics Exception: ESR 0x51e730=0x"
        "c1200e 0x51e734=0x0 0x51e728=0x4c1eb72 0x51e72c=0x174\n",
    ),
    (
        "xid_31_mmu_fault",
        "NVRM: Xid (PCI:0000:0a:00): 31, pid=4412, name=python, Ch 00000010, intr 00000000. MMU Fault: "
        "ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x7f3c_8a000000. Fault is of type FAULT_PDE "
        "ACCESS_TYPE_VIRT_READ\n",
    ),
    (
        "xid_119_gsp_timeout",
        "NVRM: Xid (PCI:0000:c1:00): 119, pid=3141, name=nvidia-smi, Timeout after 6s of waiting for RPC "
        "response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).\n",
    ),
    (
        "nvlink_error",
        "NVRM: Xid (PCI:0000:07:00): 74, pid=1021, name=python, NVLink: fatal error detected on link "
        "4(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n",
    ),
    (
        "nvswitch_fatal_error",
        "RuntimeError: CUDA error: system not yet initialized\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\n",
    ),
    (
        "gpu_driver_failure",
        "[    5.331] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x26:0xffff:1290)\n"
        "[    5.331] NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0\n",
    ),
    (
        "gpu_driver_failure",
        "$ nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n",
    ),
    (
        "gpu_driver_failure",
        "NVRM: The NVIDIA probe routine was not called for 1 device(s).\n"
        "NVRM: This can occur when a driver such as:\nNVRM: nouveau, rivafb, nvidiafb or rivatv\n"
        "NVRM: was loaded and obtained ownership of the NVIDIA device(s).\n",
    ),
    # --- host ---------------------------------------------------------------------------------------
    (
        "host_oom_killer",
        "[123456.789] python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, "
        "oom_score_adj=0\n"
        "[123456.812] Out of memory: Killed process 40213 (python3) total-vm:98765432kB, "
        "anon-rss:61234567kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:123456kB oom_score_adj:0\n",
    ),
    (
        "host_oom_killer",
        "Jun 03 10:00:00 gpu-node kernel: Out of memory: Kill process 4021 (python) score 912 or "
        "sacrifice child\n"
        "Jun 03 10:00:00 gpu-node kernel: Killed process 4021 (python) total-vm:80123456kB, "
        "anon-rss:60123456kB, file-rss:0kB\n",
    ),
    (
        "oom_killed_container",
        "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n"
        "      Started:      Mon, 03 Jun 2024 10:00:00 +0000\n      Finished:     Mon, 03 Jun 2024 10:05:00 +0000\n"
        "    Ready:          False\n    Restart Count:  4\n",
    ),
    (
        "host_kernel_panic",
        "[ 8812.000001] BUG: kernel NULL pointer dereference, address: 0000000000000008\n"
        "[ 8812.000010] #PF: supervisor read access in kernel mode\n"
        "[ 8812.000020] Oops: 0000 [#1] SMP NOPTI\n"
        "[ 8812.000100] RIP: 0010:_nv012345rm+0x1d/0x30 [nvidia]\n"
        "[ 8812.000200] Kernel panic - not syncing: Fatal exception\n",
    ),
    (
        "host_machine_check",
        "[ 4021.1] mce: [Hardware Error]: CPU 12: Machine Check Exception: 5 Bank 7: be00000000800400\n"
        "[ 4021.1] mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff8100b2e0>\n"
        "[ 4021.2] Kernel panic - not syncing: Fatal machine check\n",
    ),
    (
        "filesystem_readonly",
        "[ 7711.2] EXT4-fs error (device nvme0n1p2): ext4_journal_check_start:83: Detected aborted "
        "journal\n[ 7711.2] EXT4-fs (nvme0n1p2): Remounting filesystem read-only\n",
    ),
    (
        "filesystem_readonly",
        "OSError: [Errno 30] Read-only file system: '/checkpoints/step_1200/model.safetensors'\n",
    ),
    (
        "host_file_max_reached",
        "[ 9911.0] VFS: file-max limit 1048576 reached\n",
    ),
    # strerror(ENFILE) in a Python traceback, and the failure told with the kernel documentation's words
    (
        "host_file_max_reached",
        "OSError: [Errno 23] Too many open files in system: '/var/log/serving/access.log'\n",
    ),
    ("host_file_max_reached", "Every node of the pool ran out of file handles during the nightly batch.\n"),
    (None, "The file handles column of the dashboard is new in this release.\n"),
    (
        "pcie_link_degraded",
        "pcieport 0000:00:03.1: AER: Uncorrected (Fatal) error received: 0000:41:00.0\n"
        "nvidia 0000:41:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
        "(Requester ID)\nnvidia 0000:41:00.0:   device [10de:2230] error status/mask=00004000/00000000\n"
        "nvidia 0000:41:00.0:    [14] CmpltTO                (First)\n",
    ),
    # --- serving ------------------------------------------------------------------------------------
    (
        "kv_cache_exhausted",
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can "
        "be stored in KV cache (16144). Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.\n",
    ),
    (
        "kv_cache_exhausted",
        "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV "
        "cache is needed, which is larger than the available KV cache memory (9.45 GiB). Based on the "
        "available memory, the estimated maximum model length is 77392. Try increasing "
        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n",
    ),
    (
        "kv_cache_exhausted",
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
        "when initializing the engine.\n",
    ),
    (
        "engine_dead",
        "ERROR 06-01 12:00:00 async_llm_engine.py:52] Engine background task failed\n"
        "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.\n",
    ),
    (
        "engine_dead",
        "ERROR 07-03 10:00:00 [core_client.py:564] Engine core proc EngineCore_0 died unexpectedly, "
        "shutting down client.\n"
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
        "(above) for the root cause.\n",
    ),
    (
        "ray_oom_killer",
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
        "Memory on the node (IP: 10.0.0.4, ID: 8c2f1e) where the task (task ID: ff01, name=train_fn, "
        "pid=4411, memory used=28.10GB) was running was 30.51GB / 32.00GB (0.953), which exceeds the "
        "memory usage threshold of 0.95. Ray killed this worker (ID: 12ab) because it was the most "
        "recently scheduled task.\n",
    ),
    (
        "tensorrt_engine_incompatible",
        "[06/01/2024-10:00:00] [TRT] [E] 1: [stdArchiveReader.cpp::StdArchiveReader::42] Error Code 1: "
        "Serialization (Serialization assertion stdVersionRead == kSERIALIZATION_VERSION failed.Version "
        "tag does not match. Note: Current Version: 236, Serialized Engine Version: 232)\n"
        "[06/01/2024-10:00:00] [TRT] [E] 4: [runtime.cpp::deserializeCudaEngine::65] Error Code 4: "
        "Internal Error (Engine deserialization failed.)\n",
    ),
    (
        "tensorrt_engine_incompatible",
        "[TensorRT] ERROR: INVALID_CONFIG: The engine plan file is generated on an incompatible device, "
        "expecting compute 8.6 got compute 7.5, please rebuild.\n",
    ),
    (
        "tensorrt_parse_error",
        '[TRT] [E] ModelImporter.cpp:726: While parsing node number 212 [Mish -> "onnx::Mul_512"]:\n'
        "[TRT] [E] ModelImporter.cpp:727: --- Begin node ---\n"
        "[TRT] [E] ModelImporter.cpp:732: ERROR: builtin_op_importers.cpp:4643 In function "
        'importFallbackPluginImporter:\n[8] Assertion failed: creator && "Plugin not found, are the '
        'plugin name, version, and namespace correct?"\nERROR: Failed to parse the ONNX file.\n',
    ),
    (
        "tokenizer_mismatch",
        "../aten/src/ATen/native/cuda/Indexing.cu:1236: indexSelectSmallIndex: block: [0,0,0], thread: "
        "[64,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n"
        "RuntimeError: CUDA error: device-side assert triggered\n",
    ),
    (
        "telemetry_exporter_failure",
        'time="2024-06-01T10:00:00Z" level=fatal msg="Error connecting to nv-hostengine: Host engine '
        'connection invalid/disconnected"\n',
    ),
    (
        "launch_timeout_watchdog",
        "RuntimeError: CUDA error: the launch timed out and was terminated\n",
    ),
    (
        "thermal_throttling",
        "    Clocks Event Reasons\n        Idle                              : Not Active\n"
        "        Applications Clocks Setting       : Not Active\n        SW Power Cap                      : Not Active\n"
        "        HW Slowdown                       : Active\n            HW Thermal Slowdown           : Active\n"
        "            HW Power Brake Slowdown       : Not Active\n        Sync Boost                        : Not Active\n"
        "        SW Thermal Slowdown               : Active\n        Display Clock Setting             : Not Active\n",
    ),
    (
        "power_throttling",
        "    Clocks Throttle Reasons\n        Idle                        : Not Active\n"
        "        Applications Clocks Setting : Not Active\n        SW Power Cap                : Not Active\n"
        "        HW Slowdown                 : Active\n            HW Thermal Slowdown     : Not Active\n"
        "            HW Power Brake Slowdown : Active\n        Sync Boost                  : Not Active\n"
        "        SW Thermal Slowdown         : Not Active\n",
    ),
    # --- healthy text ------------------------------------------------------------------------------
    (
        None,
        "INFO 06-01 10:00:00 api_server.py:212] vLLM API server version 0.6.3\n"
        "INFO 06-01 10:00:00 api_server.py:213] args: Namespace(model='meta-llama/Llama-3.1-8B-Instruct', "
        "max_model_len=8192, gpu_memory_utilization=0.9, tensor_parallel_size=1)\n"
        "INFO 06-01 10:00:30 model_runner.py:1072] Loading model weights took 14.9888 GB\n"
        "INFO 06-01 10:00:35 gpu_executor.py:122] # GPU blocks: 27482, # CPU blocks: 2048\n"
        "INFO 06-01 10:00:35 gpu_executor.py:126] Maximum concurrency for 8192 tokens per request: 53.68x\n"
        "INFO 06-01 10:00:50 launcher.py:19] Available routes are:\n"
        "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n",
    ),
    (
        None,
        "[    2.801] nvidia: loading out-of-tree module taints kernel.\n"
        "[    2.802] nvidia: module verification failed: signature and/or required key missing - "
        "tainting kernel\n"
        "[    2.850] nvidia-nvlink: Nvlink Core is being initialized, major device number 508\n"
        "[    2.851] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
        "[    2.900] nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  550.54.15\n",
    ),
    (
        None,
        "node-1:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
        "node-1:100:100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.2<0>\n"
        "node-1:100:100 [0] NCCL INFO Using network IB\n"
        "node-1:100:150 [0] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7\n"
        "node-1:100:150 [0] NCCL INFO Connected all rings\n"
        "node-1:100:150 [0] NCCL INFO comm 0x5581 rank 0 nranks 8 cudaDev 0 busId 18000 - Init COMPLETE\n",
    ),
    (
        None,
        "{'loss': 1.8123, 'grad_norm': 0.912, 'learning_rate': 1.9e-05, 'epoch': 0.12}\n"
        "{'loss': 1.6011, 'grad_norm': 0.873, 'learning_rate': 1.8e-05, 'epoch': 0.24}\n"
        " 24%|██▍       | 120/500 [02:10<06:52,  1.09s/it]\n",
    ),
    (
        None,
        "I0601 10:00:00.000 1 server.cc:674] \n+-------+---------+--------+\n| Model | Version | Status |\n"
        "+-------+---------+--------+\n| yolo  | 1       | READY  |\n+-------+---------+--------+\n"
        "I0601 10:00:00.100 1 grpc_server.cc:2451] Started GRPCInferenceService at 0.0.0.0:8001\n"
        "I0601 10:00:00.101 1 http_server.cc:3555] Started HTTPService at 0.0.0.0:8000\n",
    ),
    # --- one line that already states the failure (vLLM's running total, a client's one deadline) ------
    (
        "kv_cache_exhausted",
        "WARNING 03-02 11:20:41 scheduler.py:1555] Sequence group chat-9f2 is preempted by "
        "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the "
        "end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more "
        "KV cache memory. total_num_cumulative_preemption=64\n",
    ),
    (
        "grpc_deadline_exceeded",
        "Traceback (most recent call last):\n"
        '  File "client.py", line 31, in <module>\n'
        "    resp = stub.Predict(req, timeout=5.0)\n"
        "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:\n"
        "\tstatus = StatusCode.DEADLINE_EXCEEDED\n"
        '\tdetails = "Deadline Exceeded"\n',
    ),
    # --- NVSwitch error entries as the driver prints them (severity line, then data line) ---------------
    (
        "nvswitch_fatal_error",
        "[ 5121.402113] nvidia-nvswitch2: SXid (PCI:0000:86:00.0): 12028, Severity 1 Engine instance 05 Sub-engine instance 00\n"
        "[ 5121.402130] nvidia-nvswitch2: SXid (PCI:0000:86:00.0): 12028, Data {0x00000000, 0x00010020, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}\n",
    ),
    (
        "nvswitch_fatal_error",
        "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Data {0x000001c0, 0x00a10c22, 0x00000500, 0x00000064, 0x00000000, 0x40008000, 0x5a001100, 0x00000000, 0x00000000}\n",
    ),
    (
        None,
        "[ 88.100001] nvidia-nvswitch4: SXid (PCI:0000:c9:00.0): 22013, Severity 0 Engine instance 11 Sub-engine instance 00\n"
        "[ 88.100020] nvidia-nvswitch4: SXid (PCI:0000:c9:00.0): 22013, Data {0x00000000, 0x00000004, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}\n",
    ),
    # --- a pod's container ended by SIGKILL, status pasted as YAML, no OOMKilled reason kept -------------
    (
        "oom_killed_container",
        "NAME                          READY   STATUS             RESTARTS      AGE\n"
        "embedder-6d9f8c7b5-x2kqp      0/1     CrashLoopBackOff   5 (40s ago)   6m\n"
        "\n"
        "    lastState:\n"
        "      terminated:\n"
        "        exitCode: 137\n"
        "        startedAt: \"2024-05-02T10:11:12Z\"\n",
    ),
    # --- nvidia-smi -q -d TEMPERATURE: at the GPU's own limit vs well below it ---------------------------
    (
        "thermal_throttling",
        "==============NVSMI LOG==============\n\nDriver Version                            : 550.54.15\n\n"
        "Attached GPUs                             : 1\nGPU 00000000:3B:00.0\n    Temperature\n"
        "        GPU Current Temp                  : 87 C\n        GPU T.Limit Temp                  : 0 C\n"
        "        GPU Shutdown Temp                 : 92 C\n        GPU Slowdown Temp                 : 89 C\n"
        "        GPU Max Operating Temp            : 87 C\n        Memory Current Temp               : 80 C\n",
    ),
    (
        None,
        "==============NVSMI LOG==============\n\nDriver Version                            : 550.54.15\n\n"
        "Attached GPUs                             : 1\nGPU 00000000:3B:00.0\n    Temperature\n"
        "        GPU Current Temp                  : 61 C\n        GPU Shutdown Temp                 : 92 C\n"
        "        GPU Slowdown Temp                 : 89 C\n        GPU Max Operating Temp            : 87 C\n",
    ),
    (
        None,  # a degree under the limit: NVML's SW Thermal Slowdown starts above it
        "==============NVSMI LOG==============\n\nAttached GPUs                             : 1\n"
        "GPU 00000000:3B:00.0\n    Temperature\n        GPU Current Temp                  : 86 C\n"
        "        GPU Max Operating Temp            : 87 C\n",
    ),
    # --- a root port's fatal AER, the kernel's recovery naming the GPU below it, then Xid 79 ---------------
    (
        "pcie_link_degraded",
        "[ 9120.001100] pcieport 0000:40:01.1: AER: Uncorrected (Fatal) error received: 0000:40:01.1\n"
        "[ 9120.001120] pcieport 0000:40:01.1: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)\n"
        "[ 9120.001130] pcieport 0000:40:01.1:   device [1022:1483] error status/mask=00000020/04400000\n"
        "[ 9120.001140] pcieport 0000:40:01.1:    [ 5] SDES                   (First)\n"
        "[ 9120.001300] nvidia 0000:41:00.0: device has no AER-aware driver\n"
        "[ 9120.204000] NVRM: Xid (PCI:0000:41:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n",
    ),
    # --- driver and runtime wordings that name the cause on the line ------------------------------------
    (
        "nvlink_error",
        "NVRM: Xid (PCI:0000:1b:00): 45, pid=40211, name=python, Ch 00000008 caused by previous Xid 145\n"
        "NVRM: Xid (PCI:0000:1b:00): 45, pid=40211, name=python, Ch 00000009 caused by previous Xid 145\n",
    ),
    (
        "nvlink_error",
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution\n",
    ),
    (
        "xid_119_gsp_timeout",
        "[ 311.551020] NVRM: GPU2 _kgspLogRpcTimeout: ********************************* GSP Timeout **********************************\n"
        "[ 311.551031] NVRM: GPU2 _kgspLogRpcTimeout: Note: Please also check logs above.\n",
    ),
    (
        "engine_dead",
        "ERROR 02-11 09:30:44 async_llm_engine.py:661] Engine iteration timed out. This should never happen!\n"
        "ERROR 02-11 09:30:44 async_llm_engine.py:57] Engine background task failed\n",
    ),
    (
        "cuda_driver_mismatch",
        "== PyTorch ==\n\nNVIDIA Release 24.03 (build 85286408)\n\n"
        "ERROR: This container was built for NVIDIA Driver Release 545.23 or later, but\n"
        "       version 470.223.02 was detected and compatibility mode is UNAVAILABLE.\n",
    ),
    # --- one event row pasted without its table header -------------------------------------------------
    (
        "gpu_not_visible",
        "$ kubectl describe pod llm-0 | tail -2\n"
        "  Warning  FailedScheduling  2m10s (x4 over 5m)  default-scheduler  0/4 nodes are available: "
        "4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: 4 No preemption victims found.\n",
    ),
    # --- an Intel NIC (igb/igc/ixgbe/i40e wording) going down and up again --------------------------------
    (
        "network_link_flap",
        "[1201.10] ixgbe 0000:3b:00.1 enp59s0f1: NIC Link is Down\n"
        "[1204.52] ixgbe 0000:3b:00.1 enp59s0f1: NIC Link is Up 10 Gbps, Flow Control: RX/TX\n"
        "[1290.01] ixgbe 0000:3b:00.1 enp59s0f1: NIC Link is Down\n"
        "[1293.77] ixgbe 0000:3b:00.1 enp59s0f1: NIC Link is Up 10 Gbps, Flow Control: RX/TX\n"
        "[1377.40] ixgbe 0000:3b:00.1 enp59s0f1: NIC Link is Down\n",
    ),
    (
        None,
        "Warning  this script is deprecated, use the new launcher instead\n"
        "[  10.20] igb 0000:02:00.0 eno1: igb: eno1 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: RX\n",
    ),
    # --- the tail of a kernel page-fault oops (its header cut off) vs a register dump's CR2 ----------------
    (
        "host_kernel_panic",
        "[ 4410.120001] ---[ end trace 9a8b7c6d5e4f3a21 ]---\n"
        "[ 4410.120002] CR2: 0000000000000010\n"
        "[ 4410.120900] RIP: 0010:os_acquire_spinlock+0x12/0x30 [nvidia]\n",
    ),
    (
        None,
        "[ 10.000001] CR2: 00007f3a5c001000 CR3: 000000010a4d2000 CR4: 0000000000350ef0\n",
    ),
    # --- a leak told in plain (non-native) English -------------------------------------------------------
    (
        "cuda_oom_leak",
        "The GPU memory usage increase over time during training, after some hours the job dies with out of memory.\n",
    ),
    # --- Go log/slog text handler (time unquoted, upper-case level), as Go 1.21+ exporters print it --------
    (
        None,
        'Defaulted container "dcgm-exporter" out of: dcgm-exporter, init (init)\n'
        'time=2025-03-01T10:00:00.000Z level=INFO msg="Starting dcgm-exporter" Version=4.1.1-4.0.4\n'
        'time=2025-03-01T10:00:00.004Z level=DEBUG msg="Debug output is enabled"\n'
        'time=2025-03-01T10:00:00.120Z level=INFO msg="DCGM successfully initialized!"\n'
        'time=2025-03-01T10:00:00.200Z level=INFO msg="Not collecting NvSwitch metrics; no switches to monitor"\n'
        'time=2025-03-01T10:00:01.000Z level=INFO msg="Starting webserver"\n',
    ),
    (
        "telemetry_exporter_failure",
        'time=2025-03-01T10:00:00.000Z level=INFO msg="Starting dcgm-exporter" Version=4.1.1-4.0.4\n'
        'time=2025-03-01T10:00:00.020Z level=ERROR msg="Failed to initialize DCGM" '
        'err="Error connecting to nv-hostengine: Host engine connection invalid/disconnected"\n',
    ),
    # --- round 8: engines' own stats and stage messages, wordings of a few failures ---------------------
    # vLLM V0 and V1 stats lines with a standing queue (the waiting count is the scheduler's waiting list)
    (
        "queue_saturation",
        "INFO 05-02 09:14:07 metrics.py:455] Avg prompt throughput: 1520.3 tokens/s, Avg generation throughput: 88.1 tokens/s, "
        "Running: 48 reqs, Swapped: 0 reqs, Pending: 131 reqs, GPU KV cache usage: 71.4%, CPU KV cache usage: 0.0%.\n",
    ),
    (
        "queue_saturation",
        "INFO 08-11 17:02:44 [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
        "4210.7 tokens/s, Running: 128 reqs, Waiting: 96 reqs, GPU KV cache usage: 33.0%, Prefix cache hit rate: 12.5%\n",
    ),
    # a few requests waiting for a moment is a busy engine, not a saturated one
    (
        None,
        "INFO 08-11 17:02:44 [loggers.py:118] Engine 000: Avg prompt throughput: 812.0 tokens/s, Avg generation throughput: "
        "990.2 tokens/s, Running: 30 reqs, Waiting: 2 reqs, GPU KV cache usage: 41.0%, Prefix cache hit rate: 0.0%\n",
    ),
    # TensorRT-LLM's executor memory monitor naming the KV cache as the stage that did not fit
    (
        "kv_cache_exhausted",
        "[03/14/2026-08:02:11] [TRT-LLM] [RANK 0] [E] Failed to initialize executor on rank 0: Executor creation failed due to insufficient GPU memory.\n"
        "\n"
        "The following component could not be created: KV cache\n"
        "Total GPU memory (GiB): 79.11\n"
        "Free GPU memory before component creation attempt (GiB): 3.02\n",
    ),
    # the IOMMU blocking peer-to-peer DMA between GPUs (AMD-Vi faults), and turned off as the fix
    (
        "nccl_p2p_hang",
        "[  812.004113] nvidia 0000:41:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x000e address=0xd8000000 flags=0x0020]\n"
        "[  812.004120] nvidia 0000:41:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x000e address=0xd8001000 flags=0x0020]\n",
    ),
    (
        "nccl_p2p_hang",
        "all_reduce_perf froze at the first 8 MB message on our dual-socket box; adding amd_iommu=off to GRUB_CMDLINE_LINUX made it finish.\n",
    ),
    # told wordings: a tokenizer that is not the model's, the shared memory too small, slow ranks
    ("tokenizer_mismatch", "The benchmark client silently used the wrong tokenizer, so every prompt length was off.\n"),
    ("nccl_shm_unavailable", "Inside the pod NCCL fails at random because the shared memory is insufficient for its buffers.\n"),
    ("straggler_gpu", "We added a start-up probe that flags slow ranks before the job gets going.\n"),
    # a segfault told in a sentence with gdb's backtrace below it, whose frames are NCCL's
    (
        "nccl_segfault",
        "Our 2-node job crashes with a segmentation fault right after the first allreduce; gdb shows:\n"
        "(gdb) bt\n"
        "#0  0x00007f3a1c4e2b10 in ncclProxyProgress (proxyState_=0x55d1c8a3f000) at proxy.cc:912\n"
        "#1  0x00007f3a1c4e3c44 in ncclProxyProgressThread (args=0x55d1c8a3f000) at proxy.cc:1021\n"
        "#2  0x00007f3a8d894ac3 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442\n",
    ),
    (
        "nccl_segfault",
        "Segfault when destroying the process group, backtrace:\n"
        "#0  0x00007fd0b15c3a2e in ?? () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
        "#1  0x00007fd0b15a41f0 in ?? () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n",
    ),
    # the waiting queue told growing under overload ("not actively" is no condition said to be off)
    (
        "queue_saturation",
        "Under a service overload the waiting queue grows to thousands of requests while clients do not actively cancel them.\n",
    ),
    (None, "The waiting queue stays short and there is no service overload at this request rate.\n"),
    # a model server's start told slow (reading the weights is most of it)
    ("model_load_slow", "Since we moved the checkpoints to the shared volume every pod has a slow startup of about ten minutes.\n"),
    (None, "There is no slow startup any more since the weights are cached on the node.\n"),
    # --- round 8: wordings written for these tests (not from the corpus), each with a healthy near miss ---
    # a model swap told in prose: another model loaded while the first is still resident
    (
        "cuda_oom_hot_swap",
        "When I switch to a different model the card runs out of memory; the previous model stays loaded.\n",
    ),
    (None, "Is there a way to preload two checkpoints so that the UI can swap faster?\n"),
    # k8s-device-plugin's registration failures (cmd/nvidia-device-plugin): the node never advertises GPUs
    (
        "gpu_not_visible",
        "2024/05/01 10:00:00 Could not register device plugin: rpc error: code = Unavailable desc = connection error\n"
        "2024/05/01 10:00:01 Could not contact Kubelet, retrying. Did you enable the device plugin feature gate?\n",
    ),
    (None, "2024/05/01 10:00:00 Registered device plugin for 'nvidia.com/gpu' with Kubelet\n"),
    # the servers' own rejections when no worker thread is free (grpc-java executor, grpc-ruby RpcServer)
    (
        "grpc_threadpool_exhaustion",
        'Exception in thread "grpc-nio-worker-ELG-1-4" java.util.concurrent.RejectedExecutionException: Task '
        "io.grpc.internal.SerializingExecutor@1a2b3c rejected from java.util.concurrent.ThreadPoolExecutor@4d5e6f"
        "[Running, pool size = 8, active threads = 8, queued tasks = 500, completed tasks = 9000]\n",
    ),
    ("grpc_threadpool_exhaustion", "E, [2024-05-01T10:00:00] ERROR -- : GRPC::ResourceExhausted: 8:No free threads in thread pool\n"),
    (None, "The server handles 2000 requests per second on 16 worker threads.\n"),
    # heat told in other words
    (
        "thermal_throttling",
        "The card is passively cooled and will over heat in a desktop case; the clocks drop after ten minutes.\n",
    ),
    ("thermal_throttling", "Clocks sag once the card is heat-soaked: it is thermally constrained at every power limit.\n"),
    (None, "Is 70 C a normal temperature for an RTX 4090 under load?\n"),
    # a crash loop described without the status word
    (
        "crash_loop",
        "The vLLM pod keeps crashing and restarting every minute, each time with a non-zero exit code.\n",
    ),
    (None, "The pod was restarted once after the node upgrade and has been running for 3 days.\n"),
    # memory that builds up run after run
    (
        "cuda_oom_leak",
        "Running inference in a for loop, GPU memory accumulates with every image until nothing is left.\n",
    ),
    (None, "Ran the model 20 times in a for loop and the memory stays flat at 3 GB.\n"),
    # retired pages that wait for a reboot
    ("gpu_reset_required", "nvidia-smi shows 2 pages pending retirement on GPU 3, so the node needs a reboot.\n"),
    (None, "How do I read the retired pages section of nvidia-smi -q?\n"),
    # the exporter itself down
    ("telemetry_exporter_failure", "After the driver upgrade the dcgm-exporter crashed and the GPU metrics are missing.\n"),
    (None, "Installed dcgm-exporter with the Helm chart; the dashboards show all GPUs.\n"),
    # the container's own memory limit told in words
    (
        "oom_killed_container",
        "Our Triton container hit the memory limit of 16Gi and was killed by the cgroup during model load.\n",
    ),
    ("oom_killed_container", "The predictor process exceeds its memory limit as soon as a second request comes in.\n"),
    (None, "How much memory should I request for the predictor container?\n"),
    # a kill denied in the same clause reports none
    (None, "The batch script did not end with exit status 137.\n"),
    # a GPU nvidia-smi can no longer reach while its link reports AER errors: the link lost it
    (
        "pcie_link_degraded",
        "$ nvidia-smi\nUnable to determine the device handle for GPU0000:41:00.0: Unknown Error\n$ dmesg | tail -4\n"
        "[  812.1] pcieport 0000:40:01.1: AER: Corrected error received: 0000:41:00.0\n"
        "[  812.1] nvidia 0000:41:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n"
        "[  812.2] pcieport 0000:40:01.1: AER: Corrected error received: 0000:41:00.0\n"
        "[  812.2] nvidia 0000:41:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n",
    ),
    (
        None,
        "[  812.1] pcieport 0000:40:01.1: AER: Corrected error received: 0000:41:00.0\n"
        "[  812.1] nvidia 0000:41:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n"
        "[  812.2] pcieport 0000:40:01.1: AER: Corrected error received: 0000:41:00.0\n"
        "[  812.2] nvidia 0000:41:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n",
    ),
    # round 9: memory told climbing on its own and not given back, beside the OOM it ends in, is a leak; a
    # batch size raised gradually until the card is full is not.
    (
        "cuda_oom_leak",
        "Serving the detector, GPU memory is gradually increasing with every request and the worker is not "
        "releasing the memory.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
        "23.55 GiB of which 11.94 MiB is free.\n",
    ),
    (None, "We raise the batch size gradually, increasing it step by step until the GPU is nearly full.\n"),
    # vLLM's cache-size checks named in a traceback whose message was cut (v0 worker.py, v1 kv_cache_utils.py)
    (
        "kv_cache_exhausted",
        "ERROR 05-02 10:00:01 worker_base.py:157]   File \"/usr/lib/python3/site-packages/vllm/worker/worker.py\", "
        "line 171, in initialize_cache\n"
        "ERROR 05-02 10:00:01 worker_base.py:157]     raise_if_cache_size_invalid(num_gpu_blocks,\n",
    ),
    (
        "kv_cache_exhausted",
        "  File \"/opt/venv/lib/python3.12/site-packages/vllm/v1/core/kv_cache_utils.py\", line 668, in "
        "check_enough_kv_cache_memory\n    _check_enough_kv_cache_memory(\n",
    ),
    (None, "INFO 05-02 10:00:01 [kv_cache_utils.py:716] GPU KV cache size: 412,304 tokens\n"),
    # a host memory module told bad beside the panic it brings, and a fatal machine check with its panic: the
    # machine check is the cause; modules replaced long ago are no failure.
    (
        "host_machine_check",
        "After the move the storage node panics during boot. Support traced it to a faulty DIMM in slot B2.\n",
    ),
    (
        "host_machine_check",
        "[  412.1] mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 7: be00000000800400\n"
        "[  412.1] Kernel panic - not syncing: Fatal machine check\n",
    ),
    (None, "We replaced the memory modules last year and the node has run clean since.\n"),
]


# Mixed pastes: a cause with its louder consequences, tool output, REPL sessions, prose, wrappers.
# fmt: off
MIXED: list[tuple[str | None, str]] = [
# combos: cause + loud consequences
("illegal_memory_access", """[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)
[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLGATHER, NumelIn=1, NumelOut=2, Timeout(ms)=600000) ran for 600090 milliseconds before timing out.
[rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 1] Timeout at NCCL work: 88, last enqueued NCCL work: 88, last completed NCCL work: 87.
"""),
("illegal_memory_access", """ERROR 11-02 03:04:05 engine.py:135] RuntimeError('CUDA error: an illegal memory access was encountered\\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\\n')
ERROR 11-02 03:04:05 engine.py:135] Traceback (most recent call last):
ERROR 11-02 03:04:06 client.py:250] RuntimeError('Engine loop has died')
ERROR 11-02 03:04:06 client.py:250] Traceback (most recent call last):
CRITICAL 11-02 03:04:06 launcher.py:99] MQLLMEngine is already dead, terminating server process
"""),
("xid_13_graphics_exception", """[Tue Jun 25 10:11:12 2024] NVRM: Xid (PCI:0000:81:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 5, TPC 0, SM 1): Illegal Instruction Parameter
[Tue Jun 25 10:11:12 2024] NVRM: Xid (PCI:0000:81:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x52cf30=0x10000e 0x52cf34=0x20 0x52cf28=0xc81eb60 0x52cf2c=0x1174
ERROR 06-25 10:11:20 async_llm_engine.py:61] Engine background task failed
vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.
"""),
("nvlink_error", """[  +0.000005] NVRM: Xid (PCI:0000:1b:00): 149, pid='<unknown>', name=<unknown>, NETIR_LINK_EVT Fatal XC0 i0 Link 08 (0x02ab5b03 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)
[  +0.000010] NVRM: Xid (PCI:0000:1b:00): 145, pid='<unknown>', name=<unknown>, RLW_REMAP Nonfatal XC0 i0 Link 08 (0x00000000 0x00000000)
[  +0.510000] NVRM: Xid (PCI:0000:1b:00): 45, pid=88123, name=python, Ch 00000008
"""),
("nvswitch_fatal_error", """$ python -c "import torch; print(torch.cuda.is_available())"
UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)
False
$ systemctl status nvidia-fabricmanager
● nvidia-fabricmanager.service - NVIDIA fabric manager service
     Active: failed (Result: exit-code)
"""),
("xid_119_gsp_timeout", """Mar 02 14:22:10 gpu03 kernel: NVRM: Xid (PCI:0000:01:00): 119, pid=1932, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 10 (FREE) (0xa55a0050 0x0).
Mar 02 14:22:10 gpu03 kernel: NVRM: GPU0 GSP RPC buffer contains function 10 (FREE) and data 0x00000000a55a0050 0x0000000000000000.
Mar 02 14:22:10 gpu03 kernel: NVRM: GPU0 RPC history (CPU -> GSP):
Mar 02 14:22:16 gpu03 kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1932, name=nvidia-smi, GPU has fallen off the bus.
"""),
("xid_119_gsp_timeout", """kernel: NVRM: _kgspLogXid119: ********************************* GSP Timeout **********************************
kernel: NVRM: _kgspLogXid119: Note: Please also check logs above.
kernel: NVRM: nvAssertFailedNoLog: Assertion failed: expectedFunc == pHistoryEntry->function @ kernel_gsp.c:1757
kernel: NVRM: GPU0 _kgspRpcRecvPoll: GSP RM heartbeat timed out
"""),
("container_gpu_access_lost", """nvidia-device-plugin-daemonset-x7k2p nvidia-device-plugin-ctr I0604 10:00:00.000000 1 main.go:256] Retreiving plugins.
nvidia-device-plugin-daemonset-x7k2p nvidia-device-plugin-ctr E0604 10:00:00.000000 1 factory.go:68] Failed to initialize NVML: Unknown Error.
the GPUs in running pods become unavailable after some hours; nvidia-smi in the pod prints Failed to initialize NVML: Unknown Error
"""),
("container_gpu_access_lost", """root@5e1c:/workspace# nvidia-smi
Failed to initialize NVML: Unknown Error
root@5e1c:/workspace# exit
$ docker restart 5e1c
$ docker exec 5e1c nvidia-smi   # works again after restart
"""),
("gpu_not_visible", """$ kubectl describe node gpu-node-1
Capacity:
  cpu:                64
  ephemeral-storage:  1Ti
  memory:             512Gi
  nvidia.com/gpu:     0
  pods:               110
Allocatable:
  cpu:                63
  memory:             500Gi
  nvidia.com/gpu:     0
"""),
("gpu_not_visible", """$ docker run --rm nvidia/cuda:12.2.0-base-ubuntu22.04 nvidia-smi
docker: Error response from daemon: unknown or invalid runtime name: nvidia.
"""),
("gpu_not_visible", """>>> import torch
>>> torch.cuda.is_available()
False
>>> torch.cuda.device_count()
0
"""),
("kv_cache_exhausted", """sglang-1  | [2025-01-10 10:00:00 TP0] Decode out of memory happened. #retracted_reqs: 3, #new_token_ratio: 0.5000 -> 0.8000
sglang-1  | [2025-01-10 10:00:05 TP0] Decode out of memory happened. #retracted_reqs: 5, #new_token_ratio: 0.6000 -> 0.9000
"""),
("cuda_oom_capacity", """[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 2 has a total capacity of 39.39 GiB of which 512.00 MiB is free. Process 1234 has 38.87 GiB memory in use. Of the allocated memory 37.10 GiB is allocated by PyTorch, and 1.12 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
E0601 10:00:00.000000 140 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) local_rank: 2 (pid: 1234) of binary: /usr/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
"""),
("cuda_oom_capacity", """jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.
"""),
("cuda_oom_capacity", """RuntimeError: CUDA error: out of memory
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
"""),
("host_oom_killer", """[Fri Mar  1 12:00:01 2024] Out of memory: Killed process 2211 (pt_main_thread) total-vm:120031232kB, anon-rss:98123456kB, file-rss:65536kB, shmem-rss:0kB, UID:0 pgtables:200000kB oom_score_adj:0
[Fri Mar  1 12:00:01 2024] oom_reaper: reaped process 2211 (pt_main_thread), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB
"""),
("host_oom_killer", """WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4401 closing signal SIGTERM
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 1 (pid: 4402) of binary: /opt/conda/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
train.py FAILED
Root Cause (first observed failure):
  exitcode  : -9 (pid: 4402)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4402
dmesg shows: Out of memory: Killed process 4402 (python) total-vm:90000000kB, anon-rss:60000000kB
"""),
("host_oom_killer", """Jun 12 08:00:00 node systemd-oomd[812]: Killed /user.slice/user-1000.slice/session-3.scope due to memory used (61.9G) / total (62.5G) and swap used (7.8G) / total (8.0G) being more than 90.00%
"""),
("oom_killed_container", """[ 3120.0] Memory cgroup out of memory: Killed process 9911 (tritonserver) total-vm:9123456kB, anon-rss:131072kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1024kB oom_score_adj:-997
"""),
("oom_killed_container", """NAME                      READY   STATUS      RESTARTS      AGE
vllm-7d9f8b-abcde         0/1     OOMKilled   3 (40s ago)   5m
"""),
("tensorrt_engine_incompatible", """E0601 10:00:00.000 1 logging.cc:43] 1: [stdArchiveReader.cpp::StdArchiveReader::35] Error Code 1: Serialization (Serialization assertion safeVersionRead == kSAFE_SERIALIZATION_VERSION failed.Version tag does not match. Note: Current Version: 0, Serialized Engine Version: 239)
E0601 10:00:00.000 1 logging.cc:43] 4: [runtime.cpp::deserializeCudaEngine::66] Error Code 4: Internal Error (Engine deserialization failed.)
E0601 10:00:00.100 1 model_lifecycle.cc:621] failed to load 'detector' version 1: Internal: unable to create TensorRT engine
"""),
("tensorrt_engine_incompatible", """[TRT] [E] 6: The engine plan file is not compatible with this version of TensorRT, expecting library version 8.6.1.6 got 8.5.3.1, please rebuild.
[TRT] [E] 2: [engine.cpp::deserializeEngine::951] Error Code 2: Internal Error (Assertion engine->deserialize(start, size, allocator, runtime) failed. )
"""),
("tensorrt_parse_error", """[01/05/2022-10:00:00] [E] [TRT] ModelImporter.cpp:773: While parsing node number 97 [ReverseSequence -> "output"]:
[01/05/2022-10:00:00] [E] [TRT] ModelImporter.cpp:775: ERROR: ModelImporter.cpp:179 In function parseGraph:
[6] Invalid Node - ReverseSequence_97
No importer registered for op: ReverseSequence. Attempting to import as plugin.
[01/05/2022-10:00:00] [E] Failed to parse onnx file
"""),
("cuda_driver_mismatch", """==========
== CUDA ==
==========

CUDA Version 12.4.1

ERROR: The NVIDIA Driver is present, but CUDA failed to initialize.  GPU functionality will not be available.
   [[ Forward compatibility was attempted on non supported HW (CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) cuInit()=804 ]]
"""),
("cuda_driver_mismatch", """vllm-1  | RuntimeError: The NVIDIA driver on your system is too old (found version 12020). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx
"""),
("nccl_timeout", """[E ProcessGroupNCCL.cpp:828] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800504 milliseconds before timing out.
[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down.
terminate called after throwing an instance of 'std::runtime_error'
  what():  [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800504 milliseconds before timing out.
"""),
("nccl_timeout", """torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: wait timeout after 600000ms, keys: /default_pg/0//cuda//0
"""),
("model_load_slow", """  Warning  Unhealthy  2m (x12 over 5m)  kubelet  Startup probe failed: Get "http://10.244.1.7:8000/health": dial tcp 10.244.1.7:8000: connect: connection refused
  Normal   Killing    2m               kubelet  Container vllm failed startup probe, will be restarted
the model (70B) takes about 15 minutes to download and load, the pod is restarted before it finishes
"""),
("model_load_slow", """Loading safetensors checkpoint shards:   3% Completed | 1/30 [03:12<1:32:48, 192.00s/it]
Loading safetensors checkpoint shards:   7% Completed | 2/30 [06:30<1:31:00, 195.00s/it]
the weights load at about 20 MB/s from the mounted volume
"""),
("model_load_slow", """RuntimeError: Timed out waiting for the model to load after 600 seconds
"""),
("head_of_line_blocking", """When one request with a 100k-token prompt arrives, every short request waits until its prefill is done: TTFT of the small requests jumps from 50 ms to 8 s.
"""),
("queue_saturation", """INFO 04-20 10:00:00 metrics.py:341] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1500.2 tokens/s, Running: 256 reqs, Swapped: 0 reqs, Pending: 812 reqs, GPU KV cache usage: 45.1%, CPU KV cache usage: 0.0%.
INFO 04-20 10:00:30 metrics.py:341] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1498.7 tokens/s, Running: 256 reqs, Swapped: 0 reqs, Pending: 1290 reqs, GPU KV cache usage: 46.0%, CPU KV cache usage: 0.0%.
INFO 04-20 10:01:00 metrics.py:341] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1501.0 tokens/s, Running: 256 reqs, Swapped: 0 reqs, Pending: 1811 reqs, GPU KV cache usage: 46.2%, CPU KV cache usage: 0.0%.
"""),
("xid_31_mmu_fault", """[  812.1] NVRM: Xid (PCI:0000:01:00): 31, pid=2240, name=UnrealEditor, Ch 0000003c, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_T1_7 faulted @ 0x1_0ffe0000. Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_READ
"""),
("filesystem_readonly", """[ 100.1] blk_update_request: I/O error, dev loop4, sector 2048 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0
[ 100.1] Buffer I/O error on dev loop4, logical block 256, lost async page write
[ 100.2] EXT4-fs error (device loop4): ext4_check_bdev_write_error:218: comm kworker/u8:2: Error while async write back metadata
[ 100.3] EXT4-fs (loop4): Remounting filesystem read-only
"""),
("thermal_throttling", """[ 5012.4] CPU3: Core temperature above threshold, cpu clock throttled (total events = 112)
[ 5012.4] CPU1: Package temperature above threshold, cpu clock throttled (total events = 114)
"""),
("ray_oom_killer", """(raylet) [2024-06-01 10:00:00,000 E 123 123] (raylet) node_manager.cc:3069: 2 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 8f1e, IP: 10.0.0.2) over the last time period. To see more information about the Workers killed on this node, use `ray logs raylet.out -ip 10.0.0.2`
"""),
("xid_48_double_bit_ecc", """$ nvidia-smi
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|=========================================+======================+======================|
|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    2 |
| N/A   34C    P0              61W / 400W |      4MiB / 81920MiB |      0%      Default |
+-----------------------------------------+----------------------+----------------------+
RuntimeError: CUDA error: uncorrectable ECC error encountered
"""),
("gpu_reset_required", """$ nvidia-smi -r -i 0
GPU 00000000:3B:00.0 is currently in use by another client.
1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, graphics application such as an X server, or a monitoring application such as another instance of nvidia-smi). Please first kill all processes using this device and all compute applications running in the system.
NVRM: Xid (PCI:0000:3b:00): 154, pid=0, name=, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)
"""),
("gpu_driver_failure", """[   12.3] NVRM: GPU 0000:01:00.0: kgspWaitForGfwBootOk_TU102: failed to wait for GFW boot complete: 0x0 VBIOS version 94.02.71.40.7A
[   12.3] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x61:0x40:1750)
[   12.3] NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0
"""),
("host_kernel_panic", """[ 2211.4] watchdog: BUG: soft lockup - CPU#12 stuck for 23s! [python:9912]
[ 2211.4] RIP: 0010:os_io_write_dword+0x4/0x10 [nvidia]
[ 2211.4] Call Trace:
"""),
("launch_timeout_watchdog", """Display driver nvlddmkm stopped responding and has successfully recovered.
RuntimeError: CUDA error: unspecified launch failure
"""),
("nccl_shm_unavailable", """RuntimeError: DataLoader worker (pid 2214) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.
"""),
("network_link_flap", """[  900.1] bond0: (slave eth2): link status definitely down, disabling slave
[  903.5] bond0: (slave eth2): link status definitely up, 25000 Mbps full duplex
[  950.2] bond0: (slave eth2): link status definitely down, disabling slave
[  952.9] bond0: (slave eth2): link status definitely up, 25000 Mbps full duplex
[  990.4] bond0: (slave eth2): link status definitely down, disabling slave
"""),
("telemetry_exporter_failure", """dcgm-exporter-xk2v9   0/1   CrashLoopBackOff   12   40m
$ kubectl logs dcgm-exporter-xk2v9
time="2024-06-01T10:00:00Z" level=info msg="Starting dcgm-exporter"
time="2024-06-01T10:00:00Z" level=fatal msg="Error starting nv-hostengine: DCGM initialization error"
"""),
(None, """$ nvidia-smi
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
| N/A   31C    P0             71W /  700W |       1MiB /  81559MiB |      0%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+
"""),
(None, """INFO 01-10 10:00:00 [__init__.py:239] Automatically detected platform cuda.
INFO 01-10 10:00:05 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: model='Qwen/Qwen2.5-7B-Instruct', max_seq_len=32768, tensor_parallel_size=1, enforce_eager=False, kv_cache_dtype=auto
INFO 01-10 10:00:20 [gpu_model_runner.py:1329] Model loading took 14.2474 GiB and 4.812 seconds
INFO 01-10 10:00:30 [kv_cache_utils.py:634] GPU KV cache size: 431,216 tokens
INFO 01-10 10:00:30 [kv_cache_utils.py:637] Maximum concurrency for 32,768 tokens per request: 13.16x
INFO 01-10 10:00:45 [core.py:159] init engine (profile, create kv cache, warmup model) took 25.31 seconds
INFO:     Started server process [1]
INFO:     Application startup complete.
"""),
(None, """Jun 01 10:00:00 node systemd[1]: Starting NVIDIA fabric manager service...
Jun 01 10:00:02 node nv-fabricmanager[2212]: Connected to 1 node.
Jun 01 10:00:02 node nv-fabricmanager[2212]: Successfully configured all the available NVSwitches to route GPU NVLink traffic. NVLink Peer-to-Peer support will be enabled once the GPUs are successfully registered with the NVLink fabric.
Jun 01 10:00:02 node systemd[1]: Started NVIDIA fabric manager service.
"""),
(None, """[2025-01-10 10:00:00] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', mem_fraction_static=0.88, max_running_requests=None, chunked_prefill_size=8192, disable_radix_cache=False)
[2025-01-10 10:00:10 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.72 GB, mem usage=15.06 GB.
[2025-01-10 10:00:11 TP0] KV Cache is allocated. #tokens: 425000, K size: 26.0 GB, V size: 26.0 GB
[2025-01-10 10:00:12 TP0] max_total_num_tokens=425000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4097, context_len=131072
[2025-01-10 10:00:20] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2025-01-10 10:00:25] The server is fired up and ready to roll!
"""),
(None, """Name:               gpu-node-1
Roles:              <none>
Capacity:
  cpu:                64
  memory:             527951300Ki
  nvidia.com/gpu:     8
  pods:               110
Allocatable:
  cpu:                63900m
  memory:             517465540Ki
  nvidia.com/gpu:     8
Conditions:
  Type             Status  LastHeartbeatTime                 Reason                       Message
  ----             ------  -----------------                 ------                       -------
  MemoryPressure   False   Mon, 03 Jun 2024 10:00:00 +0000   KubeletHasSufficientMemory   kubelet has sufficient memory available
  DiskPressure     False   Mon, 03 Jun 2024 10:00:00 +0000   KubeletHasNoDiskPressure     kubelet has no disk pressure
  Ready            True    Mon, 03 Jun 2024 10:00:00 +0000   KubeletReady                 kubelet is posting ready status
"""),
(None, """[I 2024-06-01 10:00:00,000 TorchServe] Torch worker started.
2024-06-01T10:00:01,000 [INFO ] main org.pytorch.serve.ModelServer - Loading initial models: model.mar
2024-06-01T10:00:05,000 [INFO ] W-9000-model_1.0 org.pytorch.serve.wlm.WorkerThread - Backend response time: 3012
2024-06-01T10:00:05,100 [INFO ] main org.pytorch.serve.ModelServer - Inference API bind to: http://0.0.0.0:8080
Model server started.
"""),
("container_gpu_access_lost", """$ kubectl exec -it trainer-0 -- nvidia-smi
Failed to initialize NVML: Unknown Error
command terminated with exit code 255
"""),
("illegal_memory_access", """torch.AcceleratorError: CUDA error: an illegal memory access was encountered
Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.
"""),
("illegal_memory_access", """torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5
ncclUnhandledCudaError: Call to CUDA function failed.
Last error:
Cuda failure 'an illegal memory access was encountered'
"""),
("illegal_memory_access", """Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:368 'an illegal memory access was encountered'
"""),
("illegal_memory_access", """RuntimeError: CUDA error: misaligned address
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
"""),
("nccl_timeout", """torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.
"""),
("nccl_timeout", """[rank0]:[E1120 10:00:00.000 ProcessGroupNCCL.cpp:1394] [PG 0 (default_pg) Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog, and could be triggered by another thread holding the GIL inside a CUDA api (for example, CudaEventDestroy), or other deadlock-prone behaviors.
"""),
("nccl_timeout", """RuntimeError: NCCL communicator was aborted on rank 1.  Original reason for failure was: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1803170 milliseconds before timing out.
"""),
("gpu_not_visible", """INFO 06-01 10:00:00 importing.py:10] Triton not installed or not compatible; certain GPU-related functions will not be available.
RuntimeError: Failed to infer device type
"""),
("gpu_not_visible", """2024-06-01 10:00:00.000000: W tensorflow/core/common_runtime/gpu/gpu_device.cc:2256] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup the required libraries for your platform.
Skipping registering GPU devices...
"""),
("gpu_not_visible", """An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.
No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)
"""),
("kv_cache_exhausted", """RuntimeError: Not enough memory to handle 16000 prefill tokens. You need to decrease `--max-batch-prefill-tokens`
"""),
("kv_cache_exhausted", """[2025-01-10 10:00:10 TP0] Scheduler hit an exception: Traceback (most recent call last):
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.
"""),
("cuda_oom_capacity", """CUDA error: out of memory
  current device: 0, in function alloc at /llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:375
  cuMemCreate(&handle, reserve_size, &prop, 0)
ggml_cuda_host_malloc: failed to allocate 2048.00 MiB of pinned memory: out of memory
"""),
("cuda_oom_capacity", """[06/01/2024-10:00:00] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error Code 2: OutOfMemory (no further information)
[06/01/2024-10:00:00] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error Code 2: OutOfMemory (no further information)
"""),
("cuda_oom_capacity", """RuntimeError: CUDA driver error: out of memory
"""),
("xid_79_fallen_off_bus", """Jun 01 10:00:00 gpu-7 kernel: NVRM: GPU at PCI:0000:c1:00: GPU-4a1b2c3d-0000-1111-2222-333344445555
Jun 01 10:00:00 gpu-7 kernel: NVRM: Xid (PCI:0000:c1:00): 79, pid=0, name=swapper/0, GPU has fallen off the bus.
Jun 01 10:00:00 gpu-7 kernel: NVRM: GPU 0000:c1:00.0: GPU has fallen off the bus.
Jun 01 10:00:01 gpu-7 kernel: NVRM: A GPU crash dump has been created. If possible, please run
Jun 01 10:00:01 gpu-7 kernel: NVRM: nvidia-bug-report.sh as root to collect this data before
Jun 01 10:00:01 gpu-7 kernel: NVRM: the NVIDIA kernel module is unloaded.
"""),
("xid_48_double_bit_ecc", """  Warning  GpuXidError  3m  nvsentinel  GPU 0 reported XID 48: DBE (Double Bit Error) ECC Error
"""),
("host_oom_killer", """slurmstepd: error: Detected 1 oom_kill event in StepId=123456.batch. Some of the step tasks have been OOM Killed.
"""),
("cuda_driver_mismatch", """RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non supported HW
"""),
("cuda_driver_mismatch", """nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.6, please update your driver to a newer version, or use an earlier cuda container: unknown
"""),
("tensorrt_engine_incompatible", """[TRT] [E] IRuntime::deserializeCudaEngine: Error Code 1: Serialization (Serialization assertion stdVersionRead == kSERIALIZATION_VERSION failed.Version tag does not match. Note: Current Version: 238, Serialized Engine Version: 239)
"""),
("nvswitch_fatal_error", """[2024-06-01 10:00:00] [ERROR] [tid 1234] failed to find the GPU(s) in the fabric. GPU fabric registration failed
Fabric Manager: NVSwitch fatal error detected on NVSwitch at PCI 0000:05:00.0, SXid 12028
"""),
("xid_119_gsp_timeout", """[Mon Jun  3 10:00:00 2024] NVRM: Xid (PCI:0000:41:00): 119, pid=12345, name=python, Timeout after 45s of waiting for RPC response from GPU0 GSP! Expected function 47 (UNLOADING_GUEST_DRIVER) (0x0 0x0).
[Mon Jun  3 10:00:10 2024] NVRM: Xid (PCI:0000:41:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)
"""),
("xid_13_graphics_exception", """[ 1234.5] NVRM: Xid (PCI:0000:01:00): 13, pid=1234, name=python3, Graphics Exception: Class 0xc7c0 Subchannel 0x0 Mismatch
[ 1234.5] NVRM: Xid (PCI:0000:01:00): 13, pid=1234, name=python3, Graphics Exception: ESR 0x404490=0x80000001
RuntimeError: CUDA error: unspecified launch failure
"""),
("nvlink_error", """$ nvidia-smi nvlink -s
GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1234)
\t Link 0: 25 GB/s
\t Link 1: <inactive>
\t Link 2: <inactive>
NCCL WARN NVLink error: link 1 of GPU 0 is inactive
"""),
(None, """[rank0]:[W601 10:00:00 ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank 0]  using GPU 0 to perform barrier as devices used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect. Specify device_ids in barrier() to force use of a particular device, or call init_process_group() with a device_id.
{'train_runtime': 3600.1, 'train_samples_per_second': 12.3, 'train_steps_per_second': 0.4, 'train_loss': 1.234, 'epoch': 3.0}
"""),
(None, """Jun 01 10:00:00 node kernel: mlx5_core 0000:3b:00.0 ens1f0: Link up
Jun 01 10:00:00 node kernel: IPv6: ADDRCONF(NETDEV_CHANGE): ens1f0: link becomes ready
Jun 01 10:00:01 node kernel: bond0: (slave ens1f0): Enslaving as an active interface with an up link
"""),
(None, """INFO 06-01 10:00:00 metrics.py:351] Avg prompt throughput: 812.3 tokens/s, Avg generation throughput: 1201.0 tokens/s, Running: 31 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 62.0%, CPU KV cache usage: 0.0%.
INFO 06-01 10:00:10 metrics.py:351] Avg prompt throughput: 790.1 tokens/s, Avg generation throughput: 1188.4 tokens/s, Running: 30 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 60.1%, CPU KV cache usage: 0.0%.
INFO:     10.0.0.5:41234 - "POST /v1/completions HTTP/1.1" 200 OK
"""),
(None, """Loading checkpoint shards: 100%|██████████| 4/4 [00:05<00:00,  1.31s/it]
Loading checkpoint shards:  50%|█████     | 2/4 [00:02<00:02,  1.30s/it]
INFO 06-01 10:00:20 model_runner.py:1072] Loading model weights took 14.9888 GB
"""),
# user prose and more healthy start-ups
("gpu_not_visible", "The container doesn't see the GPU even though nvidia-smi works on the host.\n"),
("cuda_oom_leak", "GPU memory usage increases every iteration until OOM, even with torch.no_grad().\n"),
("cuda_oom_leak", "The allocated memory is never freed between requests, so after a day the server dies with CUDA out of memory.\n"),
("kv_cache_exhausted", "vLLM refuses to start because the KV cache is too small for max_model_len=32768 on a 24 GB card.\n"),
("model_load_slow", "Loading the model takes 20 minutes to load from the NFS share, and the pod gets killed by the liveness probe before it is ready.\n"),
("queue_saturation", "Under load the number of waiting requests keeps growing and latency goes to minutes; the GPU is at 100% and running requests stay at max_num_seqs.\n"),
("tokenizer_mismatch", "After adding special tokens to the tokenizer, training crashes with `device-side assert triggered`; I forgot to call resize_token_embeddings.\n"),
("ray_oom_killer", "Ray killed this worker because it was the most recently scheduled task; to see more information about memory usage on this node, use `ray logs raylet.out`.\n"),
("pcie_link_degraded", "lspci shows the GPU link running at x8 instead of x16 (LnkSta: Speed 8GT/s (downgraded), Width x8 (downgraded)).\n"),
("telemetry_exporter_failure", "dcgm-exporter is running but no metrics are exported for the GPUs; the /metrics endpoint is empty.\n"),
("nccl_shm_unavailable", "Docker's default /dev/shm is 64MB, which is too small for NCCL; the job crashes with a bus error.\n"),
("nccl_timeout", "Training hangs after a few hundred steps and then crashes with an NCCL timeout after 30 minutes.\n"),
("container_gpu_access_lost", "After a few hours the GPUs are no longer accessible inside the container; nvidia-smi returns Failed to initialize NVML: Unknown Error. Restarting the container fixes it.\n"),
("xid_48_double_bit_ecc", "nvidia-smi shows volatile uncorrectable ECC errors on GPU 3 and every job on it crashes.\n"),
("thermal_throttling", "The GPU reaches 92C under load and nvidia-smi reports HW Thermal Slowdown; the fans are at 100%.\n"),
(None, "We are running Llama-3 70B on 8x H100 with vLLM 0.6.3, tensor_parallel_size=8. Throughput is about 2,500 tokens/s, which is what we expected. Thanks for the great project!\n"),
(None, "How do I set gpu_memory_utilization and max_model_len for a 24 GB card? The docs mention the KV cache but I could not find an example.\n"),
(None, """INFO 10-01 10:00:00 api_server.py:526] vLLM API server version 0.6.2
INFO 10-01 10:00:00 config.py:1005] Chunked prefill is enabled with max_num_batched_tokens=2048.
WARNING 10-01 10:00:00 arg_utils.py:930] The model has a long context length (131072). This may cause OOM errors during the initial memory profiling phase, or result in low performance due to small KV cache space. Consider setting --max-model-len to a smaller value.
INFO 10-01 10:00:01 llm_engine.py:237] Initializing an LLM engine (v0.6.2) with config: model='meta-llama/Llama-3.1-8B-Instruct', max_seq_len=131072, gpu_memory_utilization=0.9, enforce_eager=False
WARNING 10-01 10:00:02 custom_all_reduce.py:131] Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly.
INFO 10-01 10:00:30 model_runner.py:1025] Loading model weights took 14.9888 GB
INFO 10-01 10:00:35 worker.py:232] Memory profiling takes 4.21 seconds. the current vLLM instance can use total_gpu_memory (79.15GiB) x gpu_memory_utilization (0.90) = 71.24GiB; model weights take 14.99GiB; non_torch_memory takes 0.25GiB; PyTorch activation peak memory takes 1.23GiB; the rest of the memory reserved for KV Cache is 54.77GiB.
INFO 10-01 10:00:35 gpu_executor.py:122] # GPU blocks: 28042, # CPU blocks: 2048
INFO 10-01 10:00:38 model_runner.py:1329] Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model is not static. To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI.
INFO 10-01 10:00:38 model_runner.py:1333] CUDA graphs can take additional 1~3 GiB memory per GPU. If you are running out of memory, consider decreasing `gpu_memory_utilization` or switching to eager mode. You can also reduce the `max_num_seqs` as needed to decrease memory usage.
INFO 10-01 10:00:50 model_runner.py:1456] Graph capturing finished in 12 secs.
WARNING 10-01 10:00:50 serving_embedding.py:199] embedding_mode is False. Embedding API will not work.
INFO 10-01 10:00:51 launcher.py:19] Available routes are:
"""),
(None, """WARNING 10-01 10:00:00 scheduler.py:1090] max_num_batched_tokens (2048) is smaller than max_model_len (32768). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.
WARNING 10-01 10:00:00 config.py:395] Possibly too large swap space. 16.00 GiB out of the 31.25 GiB total CPU memory is allocated for the swap space.
INFO 10-01 10:00:01 selector.py:135] Cannot use FlashAttention-2 backend for Volta and Turing GPUs.
INFO 10-01 10:00:01 selector.py:115] Using XFormers backend.
"""),
(None, """2024-06-01T10:00:00.000000Z  INFO text_generation_launcher: Args { model_id: "mistralai/Mistral-7B-Instruct-v0.2", max_input_tokens: Some(4095), max_total_tokens: Some(4096), max_batch_prefill_tokens: Some(4096), cuda_memory_fraction: 1.0 }
2024-06-01T10:00:05.000000Z  INFO download: text_generation_launcher: Successfully downloaded weights for mistralai/Mistral-7B-Instruct-v0.2
2024-06-01T10:00:20.000000Z  INFO shard-manager: text_generation_launcher: Shard ready in 14.2s rank=0
2024-06-01T10:00:21.000000Z  INFO text_generation_router: router/src/main.rs:390: Warming up model
2024-06-01T10:00:25.000000Z  INFO text_generation_router: router/src/main.rs:427: Setting max batch total tokens to 128000
2024-06-01T10:00:25.000000Z  INFO text_generation_router: router/src/main.rs:428: Connected
"""),
(None, """Jun 01 10:00:00 gpu-1 kernel: nvidia: loading out-of-tree module taints kernel.
Jun 01 10:00:00 gpu-1 kernel: nvidia-nvlink: Nvlink Core is being initialized, major device number 234
Jun 01 10:00:00 gpu-1 kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)
Jun 01 10:00:00 gpu-1 kernel: nvidia-uvm: Loaded the UVM driver, major device number 510.
Jun 01 10:00:01 gpu-1 kernel: [drm] Initialized nvidia-drm 0.0.0 20160202 for 0000:01:00.0 on minor 1
Jun 01 10:00:01 gpu-1 nvidia-persistenced[1201]: Started (1201)
Jun 01 10:00:01 gpu-1 nvidia-persistenced[1201]: device 0000:01:00.0 - persistence mode enabled.
Jun 01 10:00:02 gpu-1 systemd[1]: Started NVIDIA Persistence Daemon.
"""),
(None, """***** Running training *****
  Num examples = 52,002
  Num Epochs = 3
  Instantaneous batch size per device = 4
  Gradient Accumulation steps = 8
  Total optimization steps = 1,218
{'loss': 1.2041, 'grad_norm': 0.51, 'learning_rate': 1.99e-05, 'epoch': 0.02}
Saving model checkpoint to ./out/checkpoint-500
{'eval_loss': 1.0812, 'eval_runtime': 120.3, 'eval_samples_per_second': 16.6, 'epoch': 1.0}
"""),
(None, """==============NVSMI LOG==============

Timestamp                                 : Mon Jun  3 10:00:00 2024
Driver Version                            : 550.54.15
CUDA Version                              : 12.4

Attached GPUs                             : 1
GPU 00000000:18:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Clocks Event Reasons
        Idle                              : Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Not Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Not Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
    ECC Errors
        Volatile
            SRAM Correctable              : 0
            SRAM Uncorrectable            : 0
            DRAM Correctable              : 0
            DRAM Uncorrectable            : 0
    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 0
        Pending                           : No
        Remapping Failure Occurred        : No
    Temperature
        GPU Current Temp                  : 31 C
        GPU Shutdown Temp                 : 92 C
        GPU Slowdown Temp                 : 89 C
"""),
(None, """I0601 10:00:00.000 1 pinned_memory_manager.cc:275] Pinned memory pool is successfully allocated at address 0x7f0000000000 with size 268435456
I0601 10:00:00.000 1 cuda_memory_manager.cc:107] CUDA memory pool is created on device 0 with size 67108864
I0601 10:00:01.000 1 model_lifecycle.cc:469] loading: resnet50:1
I0601 10:00:03.000 1 tensorrt.cc:65] TRITONBACKEND_Initialize: tensorrt
I0601 10:00:04.000 1 model_lifecycle.cc:835] successfully loaded 'resnet50'
I0601 10:00:04.100 1 grpc_server.cc:2495] Started GRPCInferenceService at 0.0.0.0:8001
I0601 10:00:04.100 1 http_server.cc:4619] Started HTTPService at 0.0.0.0:8000
I0601 10:00:04.200 1 http_server.cc:282] Started Metrics Service at 0.0.0.0:8002
"""),
(None, """[2025-01-10 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen2-7B', mem_fraction_static=0.88, max_running_requests=None, chunked_prefill_size=8192)
[2025-01-10 10:00:30] Decode batch. #running-req: 12, #token: 8123, token usage: 0.02, gen throughput (token/s): 1021.33, #queue-req: 0
[2025-01-10 10:00:31] Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.02, #running-req: 12, #queue-req: 0
"""),
]
# fmt: on




@pytest.mark.parametrize(
    ("expected", "text"),
    VARIANTS + MIXED,
    ids=[f"{i:02d}-{exp or 'healthy'}" for i, (exp, _) in enumerate(VARIANTS + MIXED)],
)
def test_message_variant_names_its_cause(tmp_path: Path, expected: str | None, text: str) -> None:
    causes = pasted_causes(tmp_path, text)
    if expected is None:
        assert causes == []
    else:
        assert causes[:1] == [expected], causes


def test_a_told_segfault_whose_gdb_frames_are_not_nccl_s_is_no_nccl_crash(tmp_path: Path) -> None:
    """NCCL's own INFO lines name its API (ncclCommInitRank ...): only gdb's frame lines place a crash."""
    text = (
        "The worker dies with a segmentation fault in the data pipeline, gdb shows:\n"
        "#0  0x00007f11a2b3c4d5 in __memmove_avx_unaligned_erms () from /lib/x86_64-linux-gnu/libc.so.6\n"
        "#1  0x00007f1190a1b2c3 in decode_jpeg (buf=0x0) at src/decode.c:88\n"
        "node1:2211:2290 [0] NCCL INFO ncclCommInitRank comm 0x55aa rank 0 nranks 8 cudaDev 0 - Init COMPLETE\n"
    )
    assert "nccl_segfault" not in pasted_causes(tmp_path, text)


def test_tensorrt_llm_s_other_stages_are_not_the_kv_cache(tmp_path: Path) -> None:
    """The executor memory monitor names the stage that did not fit: the weights ("Model") or the temporary
    cache of its size estimate are not the KV cache being too small."""
    for stage in ("Model", "Initial KV cache (temporary for KV cache size estimation)"):
        text = (
            "[TRT-LLM] [E] Failed to initialize executor on rank 0: Executor creation failed due to insufficient GPU memory.\n"
            f"The following component could not be created: {stage}\n"
        )
        assert "kv_cache_exhausted" not in pasted_causes(tmp_path, text)


@pytest.mark.parametrize(
    ("expected", "text"),
    [
        (  # current drivers print RmInitAdapter's failure under the GPU's address; the paste puts dmesg last
            "gpu_driver_failure",
            "$ nvidia-smi\nNo devices were found\n$ sudo dmesg | grep NVRM\n"
            "[   12.301] NVRM: GPU 0000:57:00.0: RmInitAdapter failed! (0x22:0x56:897)\n",
        ),
        (  # GSP-RM never booted (the open modules print "NVRM" without a colon)
            "gpu_driver_failure",
            "$ nvidia-smi conf-compute -f\nNo devices were found\nand dmesg says:\n"
            "[   36.077473] NVRM kgspBootstrapRiscvOSEarly_GH100: Timeout waiting for GSP target mask release. "
            "This error may be caused by several reasons: Bootrom may have failed\n",
        ),
        (  # the control: a container started without a GPU, whose nvidia-smi cannot reach the driver
            "gpu_not_visible",
            "$ docker run --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n"
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
            "latest NVIDIA driver is installed and running.\n",
        ),
    ],
    ids=["rm-init-adapter-after-no-devices", "gsp-boot-timeout-after-no-devices", "container-without-gpu"],
)
def test_a_driver_that_never_brought_the_gpu_up_is_the_cause_of_no_devices_in_any_paste_order(
    tmp_path: Path, expected: str, text: str
) -> None:
    """The kernel's NVRM lines keep their own clock: pasted after the `nvidia-smi` output they explain, they
    are still its cause (the driver failed to initialise the adapter, so no device is found)."""
    causes = pasted_causes(tmp_path, text)
    assert causes[:1] == [expected], causes
