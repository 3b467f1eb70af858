"""Figures told in a sentence (rca/parsers/told.py): a model's load time names a slow load at the limit of
`model_load_slow`'s own rule, a slowdown told at 80 C or hotter a thermal slowdown; shorter times, times
of something else, cool or idle temperatures and logs with facts do not."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pasted import pasted_causes

from gpuobs.evidence import EvidenceTier
from gpuobs.rca import DiagnoseInputs, diagnose
from gpuobs.rca.catalog import load_catalog
from gpuobs.rca.parsers.told import (
    LOAD_RATE_SLOW,
    LOAD_SLOW_S,
    QUEUED_S,
    told_hot_celsius,
    told_late_oom,
    told_load_rate,
    told_load_seconds,
    told_prefill_wait,
    told_queue_seconds,
    told_records,
    told_shared_gpu,
    told_slow_load,
    told_straggler,
    told_swap,
    told_under_limits,
    told_version_regression,
)


@pytest.mark.parametrize(
    ("sentence", "seconds"),
    [
        ("The weights take 400+ seconds to load after every reboot.", 400.0),
        ("It can take over 20 minutes for the checkpoint to load from the share.", 1200.0),
        ("Loading the 70B checkpoint from object storage takes 12 minutes.", 720.0),
        ("On the old node the model loaded in about 7 mins.", 420.0),
        ("Load time: 2 hours on the first start.", 7200.0),
        # short loads are told too (and stay under the limit)
        ("Loading took 40 seconds, as expected.", 40.0),
        ("The model loads in ~12s from local NVMe.", 12.0),
        # an hour or a minute told with an article, the thing loaded named at length before the verb
        ("Loading the same model from the second drive from within the app (in its UI) takes an hour.", 3600),
        ("Loading the small model takes a minute.", 60.0),
    ],
)
def test_told_load_times_are_read(sentence: str, seconds: float) -> None:
    assert told_load_seconds(sentence) == seconds


@pytest.mark.parametrize(
    "sentence",
    [
        "After loading, generation takes 10 minutes for the whole batch.",
        "It takes 10 minutes to generate the images after loading.",
        "The download takes 30 minutes on this link.",
        "Training takes 3 hours per epoch.",
        # denied or retired: a fix told, not a failure
        "Since the cache fix it no longer takes 20 minutes to load.",
        "Now the model loads in 10 s instead of 20 minutes.",
        # a timeout set or asked for, not a time taken
        "Some data loading and need a barrier with a 30 minute timeout.",
        "Loading the weights needs a 20-minute time limit on the probe.",
    ],
)
def test_times_of_something_else_are_not_load_times(sentence: str) -> None:
    assert told_load_seconds(sentence) is None


def test_the_limit_is_the_rule_s_own() -> None:
    """The told time is held to the limit the exact rule applies to a loader's timing line."""
    sig = next(s for s in load_catalog().signatures if s.id == "model_load_slow")
    mins = {m.min for v in sig.variants for c in v.require for m in c.matchers if m.min is not None}
    assert mins == {LOAD_SLOW_S}


def test_a_told_slow_load_names_model_load_slow_on_the_text_tier(tmp_path: Path) -> None:
    path = tmp_path / "issue.log"
    path.write_text("Since the upgrade the safetensors take 600+ seconds to load on the first start.\n")
    report = diagnose(DiagnoseInputs(logs=[str(path)]))
    assert [c.id for c in report.causes] == ["model_load_slow"]
    assert report.causes[0].evidence[0].tier == EvidenceTier.TEXT.value


@pytest.mark.parametrize(
    "text",
    [
        "Loading took 40 seconds, which is what we expect for this size.\n",
        "Loading the tokenizer takes a minute on the first start.\n",
        "After loading, generation takes 10 minutes for the whole batch of prompts.\n",
    ],
)
def test_short_or_other_times_give_no_cause(tmp_path: Path, text: str) -> None:
    assert pasted_causes(tmp_path, text) == []


def test_a_log_with_facts_is_not_read_for_told_times(tmp_path: Path) -> None:
    """Only a document in which nothing was recognised is read (the prose tier's lines and window)."""
    lines = ["The weights take 900 seconds to load on this node.", "x"]
    assert [r.value for r in told_records(lines, "issue.log")] == ["model_load_slow"]
    assert told_records(lines, "issue.log", skip={0}) == []


@pytest.mark.parametrize(
    ("sentence", "celsius"),
    [
        ("After a while the card throttles down to hold 84 degrees.", 84.0),
        ("It slows down as soon as it reaches 87°C.", 87.0),
        ("Clocks drop when the GPU hits 91 C under load.", 91.0),
        ("There is a clear slowdown once the card reaches 89 degrees.", 89.0),
        ("The job is slow although the GPU sits at 65 C.", 65.0),
    ],
)
def test_told_slowdown_temperatures_are_read(sentence: str, celsius: float) -> None:
    assert told_hot_celsius(sentence) == celsius


@pytest.mark.parametrize(
    "sentence",
    [
        "The GPU idles at 85C with the fan at 30%.",
        "It runs at 85 C under load but does not throttle.",
        "Even at 88 C there is no slowdown in the step time.",
    ],
)
def test_a_hot_gpu_without_a_told_slowdown_is_none(sentence: str) -> None:
    assert told_hot_celsius(sentence) is None


def test_a_told_hot_slowdown_names_thermal_throttling(tmp_path: Path) -> None:
    text = "The first ten minutes run at full speed, then the card throttles down and holds 86 C.\n"
    assert pasted_causes(tmp_path, text) == ["thermal_throttling"]
    cool = "The first ten minutes run at full speed, then the step time slows although it holds 70 C.\n"
    # the told-temperature reader stays silent at 70 C; the slowdown itself is still a words-tier reading (the
    # prose tier refitted in the fiftieth session reads it as model_load_slow at 0.22), not this reader's
    assert "thermal_throttling" not in pasted_causes(tmp_path, cool)


@pytest.mark.parametrize(
    ("sentence", "seconds"),
    [
        ("Under the load test the queue time is 12 s for every request.", 12.0),
        ("The p99 queueing delay reached 40 seconds at 200 users.", 40.0),
        ("Most requests wait 30 s in the queue before they run.", 30.0),
        ("They sit in the queue for about 2 minutes.", 120.0),
        ("Queue time stays at 400ms.", 0.4),
    ],
)
def test_told_queue_times_are_read(sentence: str, seconds: float) -> None:
    assert told_queue_seconds(sentence) == seconds


@pytest.mark.parametrize(
    "sentence",
    [
        "Short requests wait 20 s in the queue behind one long prefill.",
        "The queue time is no longer 10 s after the fix.",
        "Generation takes 30 s per request.",
    ],
)
def test_head_of_line_waits_fixes_and_other_times_are_not_queue_times(sentence: str) -> None:
    assert told_queue_seconds(sentence) is None


def test_the_queue_limit_is_the_rule_s_own() -> None:
    """The told queue time is held to the limit the window-summary rule applies to the queue-time metric."""
    sig = next(s for s in load_catalog().signatures if s.id == "queue_saturation")
    mins = {
        m.min
        for v in sig.variants
        for c in v.require
        for m in c.matchers
        if m.min is not None and any("queue_time" in k for k in m.keys)
    }
    assert mins == {QUEUED_S}


def test_a_told_long_queue_names_queue_saturation(tmp_path: Path) -> None:
    text = "With 64 concurrent clients every request sits in the queue for 25 seconds before it starts.\n"
    assert pasted_causes(tmp_path, text) == ["queue_saturation"]
    short = "With 64 concurrent clients every request sits in the queue for 300 ms before it starts.\n"
    assert pasted_causes(tmp_path, short) == []


# --- round 8: figures and behaviours told without a tool's reading -----------------------------------
# The sentences below are written for these tests (not taken from the corpus).


@pytest.mark.parametrize(
    "sentence",
    [
        "Mounting the bucket with s3fs really slows down the checkpoint loading on every start.",
        "Since we moved to the NFS share the loading speed is painfully slow.",
        "It takes ages to load the 70B weights from the network drive.",
        "Loading flux1-dev.safetensors from the external disk takes forever compared to the SSD.",
    ],
)
def test_a_load_told_slow_in_words_is_read(sentence: str) -> None:
    assert told_slow_load(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Loading is not slow any more after moving the weights to NVMe.",
        "Does the safetensors format slow down loading?",
        "After loading, generation slows down when the batch grows.",
        "The model loads quickly and inference is fast.",
    ],
)
def test_a_load_not_told_slow_is_not_read(sentence: str) -> None:
    assert not told_slow_load(sentence)


@pytest.mark.parametrize(
    ("sentence", "rate"),
    [
        ("Inside the container the shards load at about 35 MB/s, on the host at 2 GB/s.", 35e6),
        ("The drive reads 12M/s while the weights load.", 12e6),
    ],
)
def test_told_load_rates_are_read(sentence: str, rate: float) -> None:
    assert told_load_rate(sentence) == rate


def test_a_fast_load_rate_or_a_data_loader_rate_names_nothing(tmp_path: Path) -> None:
    assert told_load_rate("The weights load at 1.8 GB/s from the local NVMe.") == 1.8e9
    assert told_load_rate("Our dataloader reads 40 MB/s of images from the bucket.") is None
    # (the prose tier's bag of words has its own say on such a sentence: the reader alone is checked)
    assert told_records(["The weights load at 1.8 GB/s from the local NVMe drive."], "issue.log") == []
    slow = "In the container the weights load at only 15 MB/s from the mounted drive.\n"
    assert pasted_causes(tmp_path, slow) == ["model_load_slow"]
    assert LOAD_RATE_SLOW > 15e6


def test_a_long_wait_names_a_slow_load_only_when_the_log_ends_at_a_loading_step(tmp_path: Path) -> None:
    log = "INFO starting the trainer\nINFO Loading checkpoint from /data/ckpt/model-00001.safetensors\n"
    waited = "The console has been stuck for 25 minutes with nothing new printed after this.\n"
    assert pasted_causes(tmp_path, waited + log) == ["model_load_slow"]
    done = log + "INFO Loaded checkpoint in 4.1 s\nINFO step 1 loss 2.31\n"
    assert pasted_causes(tmp_path, waited + done) == []
    short = "The console has been stuck for 20 seconds with nothing new printed after this.\n"
    assert pasted_causes(tmp_path, short + log) == []


@pytest.mark.parametrize(
    "sentence",
    [
        "Two of the eight A100s are about 30% slower than the others in every benchmark.",
        "A single node with a bad cable holds back the whole job.",
        "We found that some workers are 5x slower than the rest of the cluster.",
        "One GPU can drag down the whole training run, it is just slower.",
        "Rank 0 finishes the step at once, but rank 5 arrives about 40 seconds later.",
    ],
)
def test_a_few_gpus_told_slower_than_the_rest_are_read(sentence: str) -> None:
    assert told_straggler(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "All eight GPUs are slower than on the old cluster after the driver update.",
        "With two GPUs the training is not slower than with one.",
        "Is one GPU slower than the others when the fans spin up?",
        "The new H100 nodes are much faster than the rest.",
        "GPU 0 and GPU 1 both finished the epoch a bit later than yesterday.",
    ],
)
def test_a_uniform_slowdown_a_question_or_a_faster_node_is_no_straggler(sentence: str) -> None:
    assert not told_straggler(sentence)


@pytest.mark.parametrize(
    ("sentence", "slow"),
    [
        ("在本地docker中部署，执行工作流时加载模型会非常的慢，第一次基本在几分钟", True),
        ("我也有同样的问题，r1Q3的模型加载完需要30min", True),
        ("モデルのロードに数分かかります", True),
        ("모델 로딩이 너무 느려요", True),
        # told quick, or not slow
        ("加载模型不慢，几秒就可以了", False),
        ("モデルの読み込みは遅くないです", False),
        ("推理速度很慢，但是加载很快", False),
    ],
)
def test_a_load_told_slow_in_chinese_japanese_or_korean(sentence: str, slow: bool) -> None:
    assert told_slow_load(sentence) is slow


def test_a_chinese_text_telling_a_slow_load_names_it(tmp_path: Path) -> None:
    """Chinese lines hold no spaces, so the sentence readers never took them (`is_prose` counts words);
    a line of the window written in Chinese, Japanese or Korean is read as one sentence."""
    text = (
        "# 加载模型非常慢，大概要几分钟\n"
        "在本地docker中部署，安装完成后，执行工作流时加载模型会非常的慢。\n"
    )
    assert pasted_causes(tmp_path, text) == ["model_load_slow"]
    quick = "# 加载模型很快\n在本地docker中部署，安装完成后，执行工作流一切正常。\n"
    assert "model_load_slow" not in pasted_causes(tmp_path, quick)


@pytest.mark.parametrize(
    "line",
    [
        "2024-05-01 12:00:00 正在加载模型，加载模型非常慢，预计需要几分钟",
        "[INFO] 加载模型非常慢，预计需要几分钟",
        "loader.py:88: 加载模型非常慢，预计需要几分钟",
    ],
)
def test_a_program_line_written_in_chinese_is_not_a_told_slow_load(line: str) -> None:
    """A line a program printed in Chinese (a timestamp, a level or a source tag at its head, as `is_prose`
    reads them in any script) is not a person telling a slow load."""
    assert not told_records([line], "log")


@pytest.mark.parametrize(
    "sentence",
    [
        "When I run two training scripts on gpu0, each one takes more than twice as long.",
        "Running multiple models at the same time, the inference speed of each model slows down.",
        "The frame times were bimodal from contention: the live server shared a GPU with another job.",
        "Two pods with half a card each are slower than one pod with the whole card.",
    ],
)
def test_other_work_told_slowing_a_shared_gpu_is_read(sentence: str) -> None:
    assert told_shared_gpu(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Running two models on the same GPU causes no slowdown at all.",
        "Two processes on the same GPU run without any contention.",
        "The second model loads slower from the network share.",
        "Running multiple models on one GPU is supported since 0.4.",
    ],
)
def test_a_denied_slowdown_one_process_or_no_slowdown_is_no_shared_gpu(sentence: str) -> None:
    assert not told_shared_gpu(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "After upgrading to 2.4 the generation throughput dropped from 95 to 40 tokens/s.",
        "We got 1200 tok/s on the old image but only 610 tok/s after the update.",
        "Rolling back to the previous release restores the throughput we had.",
        "The regression between v0.5.1 and v0.6.0 halves our samples/s.",
    ],
)
def test_a_throughput_lost_with_a_version_is_read(sentence: str) -> None:
    assert told_version_regression(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "After upgrading to 2.4 the throughput went up from 40 to 95 tokens/s.",
        "Is there a way to upgrade without losing throughput?",
        "Throughput did not drop after the update.",
        "After upgrading, the server no longer crashes at start-up.",
    ],
)
def test_a_faster_new_version_a_question_or_no_drop_is_no_regression(sentence: str) -> None:
    assert not told_version_regression(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Every short request has to wait until the prefill of the 100k-token prompt is done.",
        "A big prefill stalls the decode of all the other requests for seconds.",
        "Right now the prefill of different requests runs serially.",
        "Chat users are stuck behind one long document prefill.",
    ],
)
def test_requests_told_waiting_for_a_prefill_are_read(sentence: str) -> None:
    assert told_prefill_wait(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Chunked prefill keeps decode from being blocked by other requests.",
        "Is the prefill of different requests serial?",
        "We wait for the prefill to finish before we measure the decode speed.",
        "The prefill did not block any requests in our test.",
    ],
)
def test_prefill_that_blocks_nothing_is_not_read(sentence: str) -> None:
    assert not told_prefill_wait(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "My fine-tuning job OOMs after 12000 steps every single time.",
        "Training runs fine for a while, but after roughly 8 hours it dies with CUDA out of memory.",
        "It ran out of memory after 2k iterations on all four GPUs.",
        "After 25 epochs I get an out-of-memory error although the first epochs use only 9 GB.",
        "The server goes out of memory after 3 days of inference.",
    ],
)
def test_an_out_of_memory_told_after_a_long_run_is_read(sentence: str) -> None:
    assert told_late_oom(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "CUDA out of memory after 3 steps with batch size 64.",
        "It hits out of memory right after the first epoch, during validation.",
        "Does it run out of memory after 5000 iterations for you too?",
        "No out of memory after 20k iterations with the smaller batch.",
        "The OOM after 10k steps is fixed by the new release.",
        "After 30 epochs the loss converged and the room stayed quiet.",
    ],
)
def test_a_short_run_a_question_or_a_fixed_oom_is_not_a_late_oom(sentence: str) -> None:
    assert not told_late_oom(sentence)


_OOM_LINE = (
    "RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 23.65 GiB total capacity; "
    "22.10 GiB already allocated; 18.56 MiB free; 22.50 GiB reserved in total by PyTorch)\n"
)


def test_an_oom_told_after_a_long_run_beside_its_traceback_is_a_leak(tmp_path: Path) -> None:
    told = "Our detector trains fine, but after about 6 hours it stops with the error below.\n"
    assert pasted_causes(tmp_path, told.replace("the error below", "CUDA out of memory") + _OOM_LINE)[:1] == [
        "cuda_oom_leak"
    ]
    assert pasted_causes(tmp_path, "It fails after 3 steps with batch size 64.\n" + _OOM_LINE)[:1] == [
        "cuda_oom_capacity"
    ]


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("Since moving to the lustre mount the checkpoint loading is extremely slow.\n", "model_load_slow"),
        (
            "Three of our sixteen nodes are twice as slow as the others, compared to the rest they lag.\n",
            "straggler_gpu",
        ),
        (
            "Since upgrading the engine to 0.9 the decode throughput dropped to half of what it was.\n",
            "kernel_slowdown",
        ),
        (
            "Interactive requests wait behind the prefill of long documents for several seconds.\n",
            "head_of_line_blocking",
        ),
        (
            "When another team's training job runs on the same GPU, our inference latency doubles.\n",
            "noisy_neighbor",
        ),
    ],
)
def test_told_behaviours_name_their_cause(tmp_path: Path, text: str, cause: str) -> None:
    assert pasted_causes(tmp_path, text) == [cause]


@pytest.mark.parametrize(
    "sentence",
    [
        "Every time I switch checkpoints in the UI it dies.",
        "The web server crashes while swapping between two LoRAs.",
        "Loading the next model in the pipeline fails.",
        "It breaks as soon as a second fine-tuned model is requested.",
        "The error appears when the first model is still loaded in VRAM.",
        "It fails when one of the models has already been loaded.",
    ],
)
def test_a_model_swap_told_is_read(sentence: str) -> None:
    assert told_swap(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "I switched to a smaller model and everything fits.",
        "Changing the model to a larger one makes it fail.",
        "Does switching models free the memory?",
        "Swapping the checkpoint fixed it for me.",
        "The model loads in 40 seconds and serves requests.",
        "We use one model per GPU.",
    ],
)
def test_a_remedy_a_question_or_no_swap_is_not_a_told_swap(sentence: str) -> None:
    assert not told_swap(sentence)


def test_an_oom_told_at_a_model_swap_beside_its_traceback_is_a_hot_swap(tmp_path: Path) -> None:
    told = "The UI runs out of memory whenever I change checkpoints; a fresh start loads either one fine.\n"
    assert pasted_causes(tmp_path, told + _OOM_LINE)[:1] == ["cuda_oom_hot_swap"]
    assert pasted_causes(tmp_path, "I moved to a larger model and now it fails.\n" + _OOM_LINE)[:1] == [
        "cuda_oom_capacity"
    ]


@pytest.mark.parametrize(
    ("lines", "under"),
    [
        (["Loading the tokenizer takes a minute on the first start."], {"model_load_slow"}),
        (["It takes 50 seconds to load the model. It is fine."], {"model_load_slow"}),
        (["The step time slows after a while although the card holds 71 C."], {"thermal_throttling"}),
        (["Loading the weights takes 25 minutes from the NFS share."], set()),
        (["The draft model loads in 30 s.", "The big one takes 20 minutes to load."], set()),
        (["The card throttles down once it reaches 87 C."], set()),
        (["Requests are slow and the queue keeps growing."], set()),
    ],
)
def test_told_figures_under_their_limits_are_found(lines: list[str], under: set[str]) -> None:
    """The signatures whose own figure a text tells only under its limit: the prose tier does not name them
    (a told load time under LOAD_SLOW_S, a slowdown told at a temperature under HOT_C)."""
    assert told_under_limits(lines) == under


def test_a_quick_load_told_in_words_keeps_the_prose_tier_from_naming_a_slow_load(tmp_path: Path) -> None:
    """Words about loading lean to `model_load_slow`; a load time told under the limit decides against it,
    and a long one does not."""
    quick = "Loading the tokenizer and the weights takes a minute on the first start of the server.\n"
    assert pasted_causes(tmp_path, quick) == []
    slow = "Loading the tokenizer and the weights takes 40 minutes on the first start of the server.\n"
    assert pasted_causes(tmp_path, slow) == ["model_load_slow"]
