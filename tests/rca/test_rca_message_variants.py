"""Known wordings of each failure, across tools and versions, must name the right root cause first.

The real-text corpus (tests/rca/real_corpus) measures the engine on text nobody here wrote; this file
guards what generalises beyond it: the messages as NVIDIA (Xid catalogue, nvidia-smi, the container
toolkit, DCGM, Fabric Manager), PyTorch, NCCL, vLLM, SGLang, TGI, TensorRT, Ray, Kubernetes and the
Linux kernel print them, in several versions' phrasing and in the wrappers people paste them in
(torchrun `[rankN]:` prefixes, compose `svc |` prefixes, journald and dmesg variants, `kubectl describe`
sections). They were written from those projects' sources and documentation, not from the corpus
excerpts. Healthy text of the same tools must get no cause.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuobs.errors import InputError
from gpuobs.rca.inputs import DiagnoseInputs
from gpuobs.rca.pipeline import diagnose

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
        "[Mon Jun  3 10:01:15 2024] mlx5_core 0000:3b:00.0 ens1f0: Link up\n",
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
        "kv_cache_exhausted",
        "WARNING 05-02 11:00:00 scheduler.py:1089] Sequence group cmpl-42 is preempted by "
        "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the "
        "end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more "
        "KV cache memory. total_num_cumulative_preemption=51\n",
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
        "[TRT] [E] ModelImporter.cpp:726: While parsing node number 212 [Mish -> \"onnx::Mul_512\"]:\n"
        "[TRT] [E] ModelImporter.cpp:727: --- Begin node ---\n"
        "[TRT] [E] ModelImporter.cpp:732: ERROR: builtin_op_importers.cpp:4643 In function "
        "importFallbackPluginImporter:\n[8] Assertion failed: creator && \"Plugin not found, are the "
        "plugin name, version, and namespace correct?\"\nERROR: Failed to parse the ONNX file.\n",
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
        "        Applications Clocks Setting : Not Active\n        SW Power Cap                : Active\n"
        "        HW Slowdown                 : Not Active\n            HW Thermal Slowdown     : Not Active\n"
        "            HW Power Brake Slowdown : Not Active\n        Sync Boost                  : Not Active\n"
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
]


def _diagnose(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "pasted.log"
    path.write_text(text, encoding="utf-8")
    try:
        report = diagnose(DiagnoseInputs(logs=[str(path)]))
    except InputError:
        return []
    return [c.id for c in report.causes]


@pytest.mark.parametrize(
    ("expected", "text"),
    VARIANTS,
    ids=[f"{i:02d}-{exp or 'healthy'}" for i, (exp, _) in enumerate(VARIANTS)],
)
def test_message_variant_names_its_cause(tmp_path: Path, expected: str | None, text: str) -> None:
    causes = _diagnose(tmp_path, text)
    if expected is None:
        assert causes == []
    else:
        assert causes[:1] == [expected], causes
