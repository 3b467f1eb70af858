"""The real-text corpus (tests/rca/real_corpus, issue 11): the tune split must keep its score.

The tune split (862 excerpts of public issue threads, 91 of them healthy; since 2026-12-01 it includes
the first held-out split and the third batch, heldout3, each promoted after being scored twice, the
fifth, heldout5, promoted after its one look, tune7, 120 cases gathered for tuning, and the sixth and
seventh batches, heldout6 and heldout7, promoted after three looks each, tune8, 113 more cases
gathered for tuning, and the eighth batch, heldout8, promoted after three looks: 86 of its 87 cases,
one dropped in a label review) runs through
`gpuobs.rca.diagnose`; its top-1 and top-3
must stay at or above the figures reached when the text tier was last fitted, less a margin of two
cases, and no healthy excerpt may get a cause. The held-out batches (heldout2/, heldout4/, heldout9/,
heldout51/, heldout52/, heldout53/, heldout54/, heldout55/, heldout56/,
heldout57/) are
scored
only by `bench/rca.py --real-heldout`
(docs/BENCHMARKS.md): no test reads them, so nothing here can be tuned to them. The fit script refuses
them too.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from support.bench import load_bench_script
from support.tune_split import TUNE_CASES, TUNE_HEALTHY, TUNE_INCIDENTS

from gpuobs.rca.corpus import Case, load_cases, run_in_process, score

REAL = Path(__file__).resolve().parent / "real_corpus"
TUNE = REAL / "tune"
# Measured 2026-12-01 (branch rcatune, after the promotion: 142/161 top-1, 143/161 top-3), then after that
# day's readers and variants with the weights refitted: 149/161 top-1, 149/161 top-3, 0/18 false causes.
# heldout3 (90 cases) promoted into tune 2026-12-01 (branch rcamiss): 201/242 top-1, 205/242 top-3, 1/27 false
# causes (its healthy dcgm-exporter startup log), measured with `bench/rca.py --real`; with the text weights
# refitted on the 269 cases: 204/242 top-1, 208/242 top-3, 1/27 false causes; with Go slog lines read as
# logfmt (their INFO lines are chatter) and the longest matched phrase winning: 204, 208, 0/27.
# heldout5 (94 cases, scored once) promoted into tune 2026-12-01 (branch rcaround5), both weight files
# refitted on the 363 cases: 290/326 top-1, 291/326 top-3, 1/37 false causes (the dcgm-exporter v4 startup
# log again), measured with `bench/rca.py --real`; after that round's rules from heldout5's misses (abseil
# crash reports, DataLoader SIGKILL, TensorRT 5-7's size assertion, hot-swap wordings, kubectl's container
# notice is chatter) and both weight files refitted: 297/326 top-1, 298/326 top-3, 0/37 false causes.
# tune7 (120 cases gathered for tuning, prose-heavy) added 2026-12-01: before any refit its cases scored
# 72/108 top-1 and 1/12 false causes (nvidia-smi's "Reset Required : <not Yes>" read as a reset request:
# fixed); both weight files refitted on the 483 cases, supporting words (prior <= 0.4) never fitted above
# their prior: 376/434 top-1, 377/434 top-3, 0/49 false causes; with round 6's rules (branch rcaround6,
# tuned on the 363) merged and both files refitted: 388/434 top-1, 388/434 top-3, 0/49 false causes; the
# same after the second primary-source wording round (branch rcawords2) and the refit; round 7 (branch
# rcaround7: wordings and readers for the cross-validation misses) and both files refitted: 399/434 top-1,
# 399/434 top-3, 0/49 false causes.
# A phrase denied by the words before it in its clause names nothing ("no memory leak"): 398/434, 398/434.
# heldout6 and heldout7 (90 cases each, scored three times) promoted into tune in the next session, both
# weight files refitted on the 663 cases: 509/594 top-1, 511/594 top-3, 0/69 false causes. The text fit also
# counts the message tests' labelled wordings as cases (a tool's own message seen beside another cause in one
# thread no longer sinks below an anchor): 508/594, 510/594, 0/69.
# The prose tier also trains on the corpora's prose-only incident texts (in-sample now, so this floor guards
# against regressions, not generalisation: bench/rca_crossval.py measures that): 554/594, 556/594, 0/69.
# tune8 (113 cases gathered for tuning, 72 of them prose) added: before any refit its 101 incidents scored 55
# top-1 and its 12 healthy texts stayed quiet; both files refitted on the 776 cases: 647/695, 649/695, 0/81.
# rcaround8b (tuned on the 663: told behaviours such as slow loads, stragglers, version regressions and
# prefill waits, vLLM's stats line, TensorRT-LLM's KV cache stage, gdb frames in NCCL, a few wordings; on the
# 663 alone 532/594, 534/594, 0/69) merged, both refitted on the 776: 654/695, 656/695, 0/81.
# The prose tier's score limit per signature (floor 5.0) instead of one for all: 656/695, 658/695, 0/81.
# Round 8a (branch rcaround8a, tuned on the 663: OOM kinds, device plugin, fabric manager, gRPC pools, heat;
# on the 663 alone 533/594, 535/594) merged, both refitted on the 776: 667/695, 669/695, 0/81.
# heldout8 promoted (86 of its 87; tfserving_1795 dropped: its thread reached no cause), both refitted on the
# 862: 738/771, 740/771, 0/91.
# tune9a/tune9b (201 cases gathered for tuning, 163 of them prose, 28 healthy, many of these healthy texts
# discussions that name a failure) added: before any refit 64.2% top-1 of their 173 incidents and 10 of their
# 28 healthy texts given a cause; both files refitted on the 1063: 899/944, 902/944, and 7 of the 119 healthy
# still given a cause (discussions of a failure that is not happening: a feature PR about ECC counters, a
# maintainer's "you can ignore this warning"; see the session's note).
# Round 9h (discussion is not evidence: "zero"/"if"/"whether" deny what follows, a change told in a title or
# bullet, a dismissal or clean verdict nearby, hardware the machines lack, a key read false), both refitted:
# 899/944, 902/944, 1 of the 119 healthy given a cause (a queue-size feature request); a design question
# ("Should requests be rejected ...?") and what the docs say tell no event, refitted: 899/944, 902/944, 0/119.
# Round 9 (branch r9m: tool wordings of UCX, rdma link/ibstat, SD web UIs, Ray 2.0, vLLM's cache checks; an
# OOM told after a long run; leak wordings), both refitted: 906/944, 909/944, the same 7 of 119 healthy.
# A model swap told beside a CUDA OOM (switching checkpoints, a second model, one still loaded): 909/944,
# 912/944, the same 7 of 119. A BMC's "Uncorrectable ECC / other uncorrectable memory error" (IPMI memory
# sensor) is the host's, both refitted: 910/944, 913/944, the same 7 of 119. A host memory module told bad
# (faulty / failed DIMM, faulty RAM), both refitted: 910/944, 914/944, the same 7 of 119.
# Both merged with the prose tier's second reader (lr), both refitted on the 1063: 913/944, 917/944, 0/119.
# tune10/tune11 (407 cases gathered for tuning, 373 prose, 45 healthy) added; fresh looks before the refit
# (fits of the 1063): tune10 52.8% top-1 without the prose tier's second reader, 55.5% with it; tune11 47.8%
# (48.3% before this session's rounds), 4 of 21 healthy given a cause. Both refitted on the 1470:
# 1231/1306, 1237/1306, 0/164. "slow node" supports only (a boot-time near miss had become a cause) and
# "to avoid X" denies X, both refitted: 1229/1306, 1235/1306, 0/164 (the same at agreement floor 2.0).
# Tenth session: heldout10 promoted (88 cases, 11 healthy); go-nvml's "could not load NVML library" is a
# container without the driver's files (gpu_not_visible), kubelet's SystemOOM the node's OOM killer, "well
# within spec" / "nothing to worry about" settle what they answer; all three files refitted on the 1558:
# 1292/1383, 1298/1383, 0/175. Eleventh session: heldout11 promoted (94 cases, 12 healthy) and 119 healthy
# texts gathered straight into tune/ (TUNE12A/12B_README.md); a duration followed by "timeout" or "limit" is
# a setting, not a load time; all three files refitted on the 1771: 1366/1465, 1373/1465, 0/306. Twelfth
# session: an untimed kernel-log record is not ordered against a program's (1368/1465); heldout12 promoted (99
# cases, 16 healthy) and 107 mostly-prose cases gathered straight into tune/ (TUNE13A/13B_README.md, 36
# healthy: feature requests, design questions); all three files refitted on the 1977: 1507/1619, 1514/1619,
# 6/358 (the six are words-only causes in healthy prose: five text-tier phrases, one request-rejection line).
# The text tier's fit counts a phrase where the runtime reads it (not in a settled group) and as right in the
# text of a cause the catalog says produces its signature; "docker update" supports only; a build's
# "Successfully built" settles what it printed; refitted: 1506/1619, 1513/1619, 6/358. Three tools' own
# wordings (Slurm's gres count lower than configured, llama.cpp built without GPU offload, hashcat's driver
# temperature threshold), refitted: 1505/1619, 1512/1619, 6/358 (out of fold: +7 incidents named right).
# Thirteenth session: a phrase in Chinese, Japanese or Korean stands on its own edges, GPU memory running out
# told in Chinese, plain wordings of a missing GPU and slurmd's missing device file; heldout13 promoted (99
# cases, 16 healthy) and 100 cases gathered straight into tune/ (TUNE14A/14B_README.md, 22 healthy); all
# three files refitted on the 2176: 1646/1780, 1655/1780, 8/396 (the six above, a DCGM injection question
# and a straggler detector's clean report). A slower release and a long queue told in plain words (a
# performance drop, a speed that dropped, the queue time), refitted: 1645/1780, 1654/1780, 8/396 (out of fold
# +4 incidents named right by the other tiers, +3 with the semantic tier, the same healthy); the prose tier
# refitted after them: 1646/1780, 1655/1780, 8/396; with a short queue wait among its healthy sentences:
# 1647/1780, 1656/1780, 8/396. Fourteenth session: heldout14 promoted (99 cases, 18 healthy) and 100 cases
# gathered straight into tune/ (TUNE15A/15B_README.md, 21 healthy); all three files refitted on the 2375:
# 1787/1940, 1796/1940, 8/435; a Spring executor's TaskRejectedException read as a gRPC server's pool
# refusing work, refitted: 1788/1940, 1797/1940, 8/435; CUDA's misaligned address (716) an exact fact of
# illegal_memory_access (a tune thread's Xid 13 beside it is now second), refitted: 1787/1940, 1797/1940,
# 8/435. Fifteenth session: heldout15 promoted (101 cases, 20 healthy) and 36 cases gathered straight into
# tune/ (TUNE16A/16B_README.md, 15 healthy); all three files refitted on the 2512 (with the remediation of an
# illegal memory access naming 716): 1878/2042, 1887/2042, 10/470. Sixteenth session: heldout16 promoted (82
# cases, 18 healthy) and 53 cases gathered straight into tune/ (TUNE17A/17B_README.md, 16 healthy); all three
# files refitted on the 2647: 1967/2143, 1976/2143, 12/504. Seventeenth session: heldout17 promoted (97
# cases, 21 healthy); all three files refitted on the 2744: 2028/2219, 2037/2219, 12/525. Nineteenth session:
# RmInitAdapter's failure under the GPU's PCI address and a GSP that never booted read as exact driver facts,
# the NVIDIA kernel module's lines keeping the kernel log's own clock in a paste, GPU memory that keeps
# growing told in Chinese; the text tier refitted: 2033/2219, 2041/2219, 12/525. Twentieth session: a
# stranded allocator pool must beat the request by the figures' slack before an OOM reads as fragmentation:
# 2034/2219, 2042/2219, 12/525; NVML's library missing where the process runs read as no GPU given to it,
# not a failing driver, and the container toolkit's hook error wrapped at a colon read with its NVML answer:
# 2038/2219, 2046/2219, 12/525. Twenty-first session: heldout18 promoted (69 cases, 19 healthy); all three
# files refitted on the 2813: 2080/2269, 2090/2269, 14/544 (two of heldout18's healthy texts named); a node
# that registers MIG slices beside `nvidia.com/gpu: 0` is no node without GPUs, the prose tier refitted:
# 2078/2269, 2088/2269, 13/544; a queue limit's name (`max_queued_requests`) no request refused, and it and
# "load shedding" supporting words only, text and prose tiers refitted: 2078/2269, 2088/2269, 11/544.
# Twenty-second session: heldout19 promoted (81 cases, 19 healthy), with the CUDA container banner "The NVIDIA
# Driver was not detected" read as no GPU; all three files refitted on the 2894: 2136/2331, 2146/2331, 17/563
# (six of heldout19's healthy texts named, by exact facts and wordings of a remedy or a feature); a GPU's PCIe
# link resting at 2.5GT/s no degraded link, Telegraf's nvidia_smi input an exporter, prose refitted:
# 2136/2331, 2146/2331, 16/563. Twenty-third session: heldout20 promoted (77 cases, 17 healthy); all three
# files refitted on the 2971: 2189/2391, 2198/2391, 20/580; Ollama's and Knative's queue refusals, a CDI spec
# gone stale with a driver upgrade and transformers' non-consecutive added token read, prose refitted:
# 2192/2391, 2201/2391, 20/580; llama.cpp's full-context messages read, text refitted: the same.
# Twenty-fifth session: heldout21 promoted (73 cases, 17 healthy); all three files refitted on the 3044:
# 2248/2447, 2257/2447, 22/597; vLLM's preemption total read in the documentation's wording and before a
# trailing caller, a platform's failed-remapped-rows event and the verbs retry error worded, text refitted:
# 2251/2447, 2260/2447, 22/597. Twenty-sixth session: heldout22 promoted (76 cases, 17 healthy); all three
# files refitted on the 3120: 2295/2506, 2307/2506, 23/614. Twenty-seventh session: uncorrectable ECC errors
# reported against a GPU read as its DBE count, dcgm-exporter's own NVML failure its own: 2296/2506,
# 2308/2506, 23/614; heldout23 promoted (40 cases, 11 healthy), all three files refitted on the 3160:
# 2325/2535, 2338/2535, 23/625; the DBE count read as its increase (a count standing still through an exporter
# history's window no increase), text refitted: the same. Twenty-eighth session: five probe-killed model
# loads relabelled model_load_slow (corpus README, labelling rules) and heldout24 promoted (40 cases, 8
# healthy), all three files refitted on the 3200: 2354/2567, 2367/2567, 24/633; PyTorch 1.x's "cached"
# figure read as the unallocated pool, an OOM on a device held elsewhere a neighbour's, LMDeploy's weight bar
# and the toolkit's driver timeout read, text and prose refitted: 2356/2567, 2369/2567, 24/633. Twenty-ninth
# session: heldout25 promoted (43 cases, 10 healthy), all three files refitted on the 3243: 2390/2600,
# 2402/2600, 25/643; a GPU exporter seen from outside (its registration panic, TargetDown, a DOWN target),
# more collectors' failures, TorchServe's and Azure ML's queue refusals and glog's crash report read, text and
# prose refitted: 2396/2600, 2408/2600, 25/643. Thirtieth session: heldout26 promoted (40 cases, 8 healthy),
# all three files refitted on the 3283: 2423/2632, 2435/2632, 25/651; vLLM's start-up free-memory check
# read (a neighbour's device when three fifths of it was taken), Ray's RayOutOfMemoryError, missing GSP
# firmware and host memory errors read: 2424/2632, 2436/2632, 25/651; text and prose refitted with the
# message tests' new wordings: 2426/2632, 2438/2632, 24/651. Thirty-first session: heldout27 promoted (40
# cases, 8 healthy); NCCL's socket failures, the kubelet's GPU admission refusal, TensorRT-LLM's and SGLang's
# KV checks and TensorFlow's driver/library mismatch read; all three files refitted on the 3323: 2460/2664,
# 2472/2664, 24/659; heldout28 promoted (36 cases, 7 healthy), all three files refitted on the 3359:
# 2477/2693, 2490/2693, 24/666. Thirty-second session: heldout29 promoted (30 cases, 6 healthy), all three
# files refitted on the 3389: 2496/2717, 2510/2717, 24/672; text-embeddings-inference's compute-cap refusal,
# a pending MIG mode change and nvidia_gpu_prometheus_exporter's NVML failure read, prose refitted with the
# message tests' new wordings: 2497/2717, 2511/2717, 24/672; with the device plugin's go-nvml return name
# ("nvml init failed: ERROR_LIBRARY_NOT_FOUND") read, prose refitted: 2498/2717, 2512/2717, 24/672.
# Thirty-third session: a node listing no GPU resource, a kubectl pod row without its header and the GPU
# operator's driver container without kernel headers read: 2499/2717, 2513/2717, 24/672; heldout31 promoted
# (42 cases, 13 healthy), all three files refitted on the 3431: 2521/2746, 2535/2746, 24/685; Xid 13 declared
# the cause of the illegal memory access it reports, as Xid 31 is: 2523/2746, 2534/2746, 24/685; other work
# told slowing a shared GPU and a load told slow in Chinese, Japanese or Korean read, text refitted:
# 2528/2746, 2539/2746, 24/685. Thirty-fourth session: heldout30 promoted (38 cases, 9 healthy), all three
# files refitted on the 3469: 2554/2775, 2565/2775, 25/694; tune18 gathered (94 cases, 25 healthy), all
# three files refitted on the 3563: 2611/2844, 2625/2844, 28/719; tune19 gathered (78 cases, 26 healthy),
# all three files refitted on the 3641: 2652/2896, 2666/2896, 29/745; tune20 gathered (89 cases, 34
# healthy), all three files refitted on the 3730: 2697/2951, 2711/2951, 30/779; tune21 gathered (84 cases, 25
# healthy), all three files refitted on the 3814: 2744/3010, 2758/3010, 37/804. Thirty-fifth session:
# heldout32 promoted (39 cases, 10 healthy), all three files refitted on the 3853: 2766/3039, 2780/3039,
# 37/814. Thirty-sixth session: heldout34 promoted (40 cases, 12 healthy), all three files refitted on the
# 3893: 2785/3067, 2799/3067, 37/826. Thirty-seventh session: heldout33 promoted (39 cases, 11 healthy), all
# three files refitted on the 3932: 2816/3095, 2831/3095, 39/837 (two of heldout33's healthy texts are named
# with the semantic tier off). Thirty-eighth session: heldout35 promoted (42 cases, 12 healthy), all three
# files refitted on the 3974: 2836/3125, 2851/3125, 44/849 (the refitted word tiers name five more of tune's
# healthy texts with the semantic tier off; none of them heldout35's). Thirty-ninth session: heldout36
# promoted (42 cases, 13 healthy), all three files refitted on the 4016: 2861/3154, 2878/3154, 44/862.
# Fortieth session: heldout37 promoted (40 cases, 10 healthy), the ONNX parser's INT64 notice under any tag
# and onnxruntime's provider-library load failure no longer TensorRT parse errors, all three files refitted on
# the 4056: 2883/3184, 2900/3184, 41/872. Forty-first session: onnxruntime's logger tag read by the shared
# prefix splitter (no change), an exporter question no failure: 2883/3184, 2900/3184, 40/872; heldout38
# promoted (43 cases, 11 healthy), all three files refitted on the 4099: 2916/3216, 2933/3216, 40/883.
# Forty-second session: heldout39 promoted (41 cases, 11 healthy), all three files refitted on the 4140:
# 2932/3246, 2949/3246, 40/894; tune22 gathered (56 cases, 40 healthy: questions, requests and normal
# behaviour told in failure words), all three files refitted on the 4196: 2963/3262, 2980/3262, 46/934 (six of
# the new healthy texts quote a failure's own message or words); tune23 gathered (40 cases, 32 healthy, the
# same brief), all three files refitted on the 4236: 2961/3270, 2978/3270, 52/966. Forty-third session:
# heldout40 promoted (35 cases, 9 healthy) and tune24 gathered (39 cases from Chinese, Japanese/Korean,
# Windows and HPC scheduler threads), refitted on the 4310 (not pinned); tune25 gathered (40 cases, 13
# healthy), all three files refitted on the 4350: 3017/3347, 3034/3347, 51/1003; tune26 gathered (40 cases, 16
# healthy), all three files refitted on the 4390: 3036/3371, 3053/3371, 52/1019. Forty-fourth session: six
# of tune26's doubtful labels dropped, tune27 (37 cases, 8 healthy) and tune28 (30 cases, 8 healthy)
# gathered, all three files refitted on the 4451: 3064/3416, 3081/3416, 52/1035; tune29 (19 cases, 6
# healthy) gathered, all three files refitted on the 4470: 3084/3429, 3102/3429, 53/1041. Forty-fifth session:
# heldout41 promoted (40 cases, 11 healthy), all three files refitted on the 4510: 3100/3458, 3118/3458,
# 53/1052. Forty-sixth session: heldout42 promoted (40 cases, 12 healthy), all three files refitted on the
# 4550: 3127/3486, 3145/3486, 53/1064. Forty-seventh session: heldout43 promoted (40 cases, 11 healthy), all
# three files refitted on the 4590: 3154/3515, 3172/3515, 53/1075. Forty-eighth session: heldout44 promoted
# (40 cases, 11 healthy), all three files refitted on the 4630: 3183/3544, 3202/3544, 55/1086. Forty-ninth
# session: heldout45 promoted (40 cases, 12 healthy), all three files refitted on the 4670: 3201/3572,
# 3220/3572, 57/1098. Fiftieth session: heldout46 promoted (40 cases, 11 healthy), all three files refitted
# on the 4710: 3227/3601, 3247/3601, 57/1109. Fifty-first session: heldout47 promoted (40 cases, 10
# healthy), all three files refitted on the 4750: 3249/3631, 3269/3631, 59/1119. Fifty-second session:
# heldout48 promoted (38 cases, 11 healthy), all three files refitted on the 4788: 3272/3658, 3292/3658,
# 58/1130. Fifty-third session: heldout49 promoted (38 cases, 11 healthy), all three files refitted on the
# 4826: 3293/3685, 3313/3685, 58/1141. Fifty-fourth session: heldout50 promoted (35 cases, 11 healthy), all
# three files refitted on the 4861: 3313/3709, 3333/3709, 59/1152.
MARGIN_CASES = 2
MEASURED_TOP1 = 3313
MEASURED_TOP3 = 3333
MEASURED_FALSE_CAUSES = 59
# With the semantic tier on (ninth session; fitted on these cases, so this is in-sample: a pin against
# regressions of the whole path, not a measure; its measure is the held-out batches and
# `bench/rca_crossval.py --groups 10 --semantic`): 1240/1306, 1246/1306, 0/164. Tenth session, the tier
# reading TF-IDF terms beside the encoder's vector, on the 1558: 1313/1383, 1319/1383, 0/175. Eleventh
# session, refitted on the 1771: 1391/1465, 1398/1465, 0/306; its incident gate refitted (C 10, >= 0.96):
# 1393/1465, 1400/1465, 0/306. Twelfth session, refitted on the 1977: 1539/1619, 1546/1619, 6/358 (the same
# six as with the tier off); with the text tier's fit above: 1536/1619, 1543/1619, 6/358; the incident reading
# the mean of two readers (both views, words alone), gate >= 0.90: 1548/1619, 1555/1619, 6/358 (the same with
# the three tools' wordings). Thirteenth session, refitted on the 2176, gate >= 0.88, or >= 0.85 when one
# signature reads >= 0.80: 1702/1780, 1711/1780, 8/396 (the same eight as with the tier off); with the
# slower-release and queue-time wordings: 1701/1780, 1710/1780, 8/396; the tier's likeliest other signatures
# after causes named from words alone (up to three causes): 1701/1780, 1724/1780, 8/396. Fourteenth session,
# the alternatives after any cause when fewer than three were named, all files refitted on the 2375 (with the
# TaskRejectedException wording): 1847/1940, 1911/1940, 8/435; with CUDA's misaligned address read as an
# illegal memory access, refitted: 1846/1940, 1911/1940, 8/435. Fifteenth session, the last resort not asked
# after the kernel's or driver's own hardware reports that no signature held on, all files refitted on the
# 2512: 1937/2042, 2006/2042, 10/470. Sixteenth session, all files refitted on the 2647 (heldout16 and tune17
# in): 2027/2143, 2100/2143, 12/504 (the same twelve as with the tier off); a confident reading of a cause the
# catalog declares for the first cause named goes first (a told leak before the OOM fact): 2042/2143,
# 2100/2143, 12/504. Seventeenth session, all files refitted on the 2744 (heldout17 in): 2113/2219,
# 2176/2219, 12/525. Nineteenth session, the signatures of CJK text named by a class reader over MiniLM's and
# the multilingual encoder's vectors (`SemanticModel.cjk`), refitted: 2113/2219, 2176/2219, 12/525 (in
# sample both readers know these texts; out of fold it differs, docs/BENCHMARKS.md); with the driver facts,
# the kernel log's clock and the Chinese wordings above: 2117/2219, 2177/2219, 12/525. Twentieth session,
# with the fragmentation slack above: 2118/2219, 2177/2219, 12/525; with NVML's missing library and the
# wrapped hook error above: 2122/2219, 2177/2219, 12/525. Twenty-first session, all files refitted on the
# 2813 (heldout18 in): 2170/2269, 2226/2269, 14/544 (the same fourteen as with the tier off); with the MIG
# node and the queue limit's name above: 2169/2269, 2225/2269, 11/544. Twenty-second session, all files
# refitted on the 2894 (heldout19 in): 2226/2331, 2285/2331, 17/563 (the same seventeen as with the tier off);
# with the link and Telegraf above and the word tiers' causes withheld in a text the incident readers read as
# no incident (under GUESS_MIN_INCIDENT): 2226/2331, 2285/2331, 2/563 (in sample: out of fold 11 of the 45
# healthy texts named and 2 of the incidents named right are withheld, docs/BENCHMARKS.md). Twenty-third
# session, all files refitted on the 2971 (heldout20 in): 2288/2391, 2347/2391, 2/580; with the queue
# refusals, the stale CDI spec and the added-token error above: the same. Twenty-fifth session, all files
# refitted on the 3044 (heldout21 in), with the preemption total and the wordings above: 2344/2447, 2403/2447,
# 2/597; word causes whose signature the tier gives under GUESS_MIN_SUPPORT withheld one by one (the last
# resort asked when none is left): 2356/2447, 2400/2447, 2/597 (in sample; out of fold in docs/BENCHMARKS.md).
# Twenty-sixth session, all files refitted on the 3120 (heldout22 in): 2408/2506, 2456/2506, 3/614.
# Twenty-seventh session, with the ECC and dcgm-exporter readings above, all files refitted on the 3160
# (heldout23 in): 2438/2535, 2485/2535, 3/625; with the DBE count's increase above: the same. Twenty-eighth
# session, all files refitted on the 3200 (heldout24 in, five probe kills relabelled): 2467/2567, 2514/2567,
# 3/633; with the readings above (a neighbour declared a cause of the capacity OOM): 2471/2567, 2514/2567,
# 3/633. Twenty-ninth session, all files refitted on the 3243 (heldout25 in): 2502/2600, 2546/2600, 3/643;
# with the readings above: 2504/2600, 2548/2600, 3/643. Thirtieth session, all files refitted on the 3283
# (heldout26 in): 2536/2632, 2579/2632, 3/651; with the readings above: the same; text and prose refitted
# with the message tests' new wordings: 2537/2632, 2580/2632, 3/651. Thirty-first session, all files refitted
# on the 3323 (heldout27 in) with the readings above: 2574/2664, 2617/2664, 3/659; on the 3359 (heldout28 in):
# 2597/2693, 2644/2693, 3/666. Thirty-second session, all files refitted on the 3389 (heldout29 in):
# 2615/2717, 2666/2717, 3/672; with the readings above: 2616/2717, 2666/2717, 3/672; with
# the go-nvml return name: 2617/2717, 2666/2717, 3/672. Thirty-third session, all files refitted on the 3431
# (heldout31 in) with the readings above: 2649/2746, 2695/2746, 3/685; with Xid 13 declared the cause of the
# illegal memory access: 2652/2746, 2695/2746, 3/685; with the told readings above, text refitted: the same.
# Thirty-fourth session, all files refitted on the 3469 (heldout30 in): 2680/2775, 2723/2775, 3/694; on the
# 3563 (tune18 in): 2742/2844, 2794/2844, 5/719; on the 3641 (tune19 in): 2788/2896, 2842/2896, 5/745; on
# the 3730 (tune20 in): 2842/2951, 2898/2951, 5/779; on the 3814 (tune21 in): 2891/3010, 2949/3010, 9/804.
# Thirty-fifth session, all files refitted on the 3853 (heldout32 in): 2920/3039, 2978/3039, 9/814.
# Thirty-sixth session, all files refitted on the 3893 (heldout34 in): 2946/3067, 3005/3067, 9/826.
# Thirty-seventh session, all files refitted on the 3932 (heldout33 in): 2969/3095, 3031/3095, 9/837.
# Thirty-eighth session, all files refitted on the 3974 (heldout35 in), the gate weighing the naming reading
# (>= 0.92, or >= 0.84 when the signature is >= 0.60 likely): 3026/3125, 3089/3125, 9/849. Thirty-ninth
# session, all files refitted on the 4016 (heldout36 in): 3051/3154, 3116/3154, 9/862. Fortieth session, the
# TensorRT misfires above mended and all files refitted on the 4056 (heldout37 in): 3076/3184, 3142/3184,
# 6/872; the semantic alternatives' bar lowered to 0.02: the same. Forty-first session, with the readings
# above, all files refitted on the 4099 (heldout38 in): 3108/3216, 3175/3216, 5/883. Forty-second session, all
# files refitted on the 4140 (heldout39 in): 3136/3246, 3204/3246, 5/894; on the 4196 (tune22 in): 3155/3262,
# 3222/3262, 8/934 (three of tune22's feature requests quote the failure's own message); on the 4236 (tune23
# in): 3161/3270, 3228/3270, 8/966. Forty-third session, all files refitted on the 4350 (heldout40, tune24 and
# tune25 in): 3228/3347, 3301/3347, 8/1003 (the same eight healthy texts); on the 4390 (tune26 in): 3252/3371,
# 3326/3371, 9/1019 (one of tune26's healthy questions, on lmdeploy's KV-cache limit, read as that failure).
# Forty-fourth session, six of tune26's labels dropped, all files refitted on the 4470 (tune27 to tune29 in):
# 3299/3429, 3376/3429, 9/1041 (the same nine healthy texts). Forty-fifth session, all files refitted on the
# 4510 (heldout41 in): 3326/3458, 3405/3458, 9/1052 (the same nine). Forty-sixth session, all files refitted
# on the 4550 (heldout42 in): 3353/3486, 3433/3486, 9/1064 (the same nine). Forty-seventh session, all files
# refitted on the 4590 (heldout43 in): 3382/3515, 3462/3515, 9/1075 (the same nine). Forty-eighth session,
# all files refitted on the 4630 (heldout44 in): 3411/3544, 3493/3544, 9/1086 (the same nine). Forty-ninth
# session, all files refitted on the 4670 (heldout45 in): 3435/3572, 3518/3572, 9/1098 (the same nine).
# Fiftieth session, all files refitted on the 4710 (heldout46 in): 3462/3601, 3546/3601, 9/1109 (the same
# nine). Fifty-first session, all files refitted on the 4750 (heldout47 in): 3493/3631, 3576/3631, 9/1119
# (nine tune texts, none of heldout47's). Fifty-second session, all files refitted on the 4788 (heldout48
# in): 3520/3658, 3603/3658, 9/1130 (the same nine, none of heldout48's). Fifty-third session, all files
# refitted on the 4826 (heldout49 in): 3541/3685, 3625/3685, 9/1141 (the same nine, none of heldout49's).
# Fifty-fourth session, all files refitted on the 4861 (heldout50 in): 3562/3709, 3647/3709, 9/1152 (the same
# nine, none of heldout50's).
MEASURED_SEMANTIC_TOP1 = 3562
MEASURED_SEMANTIC_TOP3 = 3647
MEASURED_SEMANTIC_FALSE_CAUSES = 9


def test_tune_split_keeps_its_score() -> None:
    cases = load_cases(TUNE)
    assert len(cases) == TUNE_CASES
    result = score([run_in_process(c) for c in cases])
    incidents = result.incident_cases
    assert incidents == TUNE_INCIDENTS and result.healthy_cases == TUNE_HEALTHY
    floor1 = (MEASURED_TOP1 - MARGIN_CASES) / incidents
    floor3 = (MEASURED_TOP3 - MARGIN_CASES) / incidents
    assert result.top1 >= floor1, "\n".join(result.failures)
    assert result.top3 >= floor3, "\n".join(result.failures)
    assert result.false_cause_rate <= MEASURED_FALSE_CAUSES / result.healthy_cases, "\n".join(result.failures)


# The encoder reads every tune text that gets fewer than three causes (nearly all of the 2813, ~0.05-0.3 s
# each on 2 cores): ~5 min here, more on a slower CI machine, hence a wider guard than the suite's 300 s (a
# hang guard, not a timing assertion).
@pytest.mark.timeout(1800)
def test_tune_split_with_the_semantic_tier_keeps_its_score(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped behaviour (the semantic tier is on where its extra is installed): the real pipeline with
    the real encoder over every tune case."""
    monkeypatch.setenv("GPUOBS_SEMANTIC", "on")
    result = score([run_in_process(c) for c in load_cases(TUNE)])
    incidents = result.incident_cases
    assert result.top1 >= (MEASURED_SEMANTIC_TOP1 - MARGIN_CASES) / incidents, "\n".join(result.failures)
    assert result.top3 >= (MEASURED_SEMANTIC_TOP3 - MARGIN_CASES) / incidents, "\n".join(result.failures)
    assert result.false_cause_rate <= MEASURED_SEMANTIC_FALSE_CAUSES / result.healthy_cases


def _fit_script() -> ModuleType:
    return load_bench_script("fit_text_tier")


def test_the_fitted_weights_are_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    """Phrases edited in a signature file without re-running bench/fit_text_tier.py fail here."""
    assert _fit_script().main(["--check"]) == 0
    assert "[nccl_network_error]" in capsys.readouterr().out


def test_the_fit_counts_a_declared_symptom_as_a_failure_that_happened() -> None:
    """A model swap's text (cuda_oom_hot_swap, which the catalog says causes cuda_oom_capacity) holding a
    capacity phrase tells an OOM that did happen: the phrase is right there, not a false alarm; in healthy
    text it is wrong, and in an unrelated incident too."""
    fit = _fit_script()
    phrase = "failed to allocate memory for requested buffer of size"
    priors = {("cuda_oom_capacity", phrase): 0.7}
    hits = {"cuda_oom_capacity": {phrase}}

    def case(top: str | None) -> Case:
        return Case(name=str(top), path=Path("x"), top=top)

    weights, counts = fit.fit_hits([(case("cuda_oom_hot_swap"), hits)], priors)
    assert counts[("cuda_oom_capacity", phrase)] == (1, 1)
    assert weights["cuda_oom_capacity"][phrase] > 0.7
    for other in (None, "nccl_timeout"):
        weights, counts = fit.fit_hits([(case(other), hits)], priors)
        assert counts[("cuda_oom_capacity", phrase)] == (1, 0)
        assert weights["cuda_oom_capacity"][phrase] < 0.7


def test_the_fit_does_not_count_a_phrase_a_nearby_sentence_settles() -> None:
    """The runtime drops a group of phrases that a sentence within reach settles ("on any GPU system without
    NvLink"); the fit counts the phrases where the runtime would read them, so such a group speaks for nothing
    there either, while the same wording unsettled does."""
    fit = _fit_script()
    book = fit._priors()
    down = "GPU 0's NvLink link 0 is currently down Run a field diagnostic on the GPU.\n"
    assert "nvlink_error" in fit.text_hits("dcgm.txt", down, book)
    settled = down + "This is on any GPU system without NvLink. I have tried several.\n"
    assert "nvlink_error" not in fit.text_hits("dcgm.txt", settled, book)


def test_the_fit_script_refuses_the_held_out_split() -> None:
    with pytest.raises(SystemExit) as exc:
        _fit_script().main(["--corpus", str(REAL / "heldout2")])
    assert exc.value.code == 2
