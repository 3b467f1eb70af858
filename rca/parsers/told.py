"""Figures and behaviours people tell in prose: a model's load time written in a sentence ("the weights take
300+ seconds to load", "loading the checkpoint took 25 minutes"), a GPU that slows down at a told
temperature ("it throttles down to hold 84 degrees"); a load told slow in words or at a told read rate, a
few GPUs told slower than the rest, a throughput told lost with a new version, requests told waiting for
another's prefill, an out-of-memory told to come only after a long run or at a model swap, other work told
slowing a GPU it shares.

Descriptions rarely hold a tool's own reading; they say how long it took or how hot it got. This reads such
sentences on the prose lines of a document in which nothing else was recognised (the same lines and window
as the prose tier, so a long log with facts costs nothing) and, when the told figure reaches a limit the
catalog or the vendor states, gives one `text_match` record of tier TEXT for it: a wording, ranked as the
text tier's are, under any structured fact.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterator, Sequence

from gpuobs.evidence import Evidence, EvidenceKind, EvidenceTier
from gpuobs.rca import keys
from gpuobs.rca.multilingual import cjk_chars
from gpuobs.rca.parsers.text import asks
from gpuobs.rca.prose import log_headed, prose_window, window_lines

__all__ = [
    "HOT_C",
    "LOAD_RATE_SLOW",
    "LOAD_SLOW_S",
    "QUEUED_S",
    "oom_told_records",
    "told_hot_celsius",
    "told_late_oom",
    "told_load_rate",
    "told_load_seconds",
    "told_prefill_wait",
    "told_queue_seconds",
    "told_records",
    "told_shared_gpu",
    "told_slow_load",
    "told_straggler",
    "told_swap",
    "told_under_limits",
    "told_version_regression",
]

# The load time from which `model_load_slow` holds (its rule's `min = 300` on `model_load` seconds).
LOAD_SLOW_S = 300.0
_LOAD_SLOW = "model_load_slow"
_SCORE = 0.7  # a told time over the limit: as telling as a fitted phrase of the signature
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?;])\s+")
# A figure, or one hour or minute told with an article ("takes an hour").
_DUR = (
    r"(?:(?P<n>\d+(?:\.\d+)?)\s*\+?\s*"
    r"(?P<u>ms|milliseconds?|hours?|hrs?|h|minutes?|mins?|mn|seconds?|secs?|s)\b"
    r"|(?P<one>an|a|one) (?P<word>hour|minute)\b)"
)


def _dur(m: re.Match[str]) -> float:
    """The seconds of a `_DUR` match."""
    if m["word"]:
        return _seconds("1", m["word"])
    return _seconds(m["n"], m["u"])


def _dur_end(m: re.Match[str]) -> int:
    """Where the duration of a `_DUR` match ends in the sentence (what follows it may make it a setting)."""
    return m.end("word") if m["word"] else m.end("u")


def _seconds(n: str, unit: str) -> float:
    if unit == "ms" or unit.startswith("milli"):
        return float(n) / 1000.0
    return float(n) * {"h": 3600.0, "m": 60.0}.get(unit[0], 1.0)


# What may stand between "to" and "load": the thing loaded ("to load the model", "for the weights to load").
_LOADED = (
    r"(?:(?:the|a|my|our|this|its|it|them|whole|full|entire|model|models|weights|checkpoint|shards?|"
    r"safetensors?|file|files) ){0,3}"
)
_SENTENCE = r"[^.!?;\n]"
_TOLD_RES = (
    # "takes 300+ seconds to load", "took over 25 minutes for the weights to load"
    re.compile(
        rf"\b(?:takes?|took|taking|needs?|needed|spends?|spent|waited|waiting)\b{_SENTENCE}{{0,40}}?{_DUR}"
        rf"{_SENTENCE}{{0,25}}?\b(?:to|for) {_LOADED}(?:fully |completely )?(?:load|loading)\b"
    ),
    # "loading the checkpoint takes 12 minutes" (no comma between: "after loading, generation takes ...")
    re.compile(
        rf"\b(?:load|loads|loaded|loading)\b[^.!?;,\n]{{0,80}}?\b(?:takes?|took|taking|needs?|needed|lasts?|"
        rf"lasted)\b[^.!?;,\n]{{0,30}}?{_DUR}"
    ),
    # "the model loads in 420 s", "loaded in about 25 minutes"
    re.compile(rf"\b(?:loads|loaded)\b (?:[\w.-]+ ){{0,4}}?in (?:about |around |over |roughly |~)?{_DUR}"),
    # "load time: 12 minutes", "loading time is over 600 seconds"
    re.compile(rf"\bload(?:ing)? time(?: of| is| was|:)? (?:about |around |over |~)?{_DUR}"),
)


# The time a request waited in the queue from which `queue_saturation` holds on a window summary (its rule's
# `min = 2.0` on serving.REQUEST_QUEUE_TIME): a queue time told in a sentence is held to the same limit.
QUEUED_S = 2.0
_QUEUED = "queue_saturation"
_QUEUE_RES = (
    # "queue time is 12 s", "the p99 queueing delay reached 40 seconds", "queue duration: 9.5s"
    re.compile(
        rf"\bqueu(?:e|ing|eing)[ -]?(?:time|duration|delay|latency|wait)s?\b{_SENTENCE}{{0,40}}?{_DUR}"
    ),
    # "requests wait 30 s in the queue", "sat for about 2 minutes in the queue"
    re.compile(
        rf"\b(?:wait(?:s|ed|ing)?|sit(?:s|ting)?|sat|spen(?:d|ds|t))\b{_SENTENCE}{{0,30}}?{_DUR}"
        rf"{_SENTENCE}{{0,15}}?\bin (?:the |a |its )?queue\b"
    ),
    # "they sit in the queue for 40 seconds"
    re.compile(rf"\bin (?:the |a |its )?queue (?:for )?(?:about |around |over |up to |~)?{_DUR}"),
)


# Waiting behind a long prefill is head-of-line blocking, which the queue rule rules out (its rule_out on
# anomaly.head_of_line): a sentence that tells it tells no saturated queue.
_BEHIND_RE = re.compile(r"\bbehind\b|\bprefill|\blong (?:prompts?|requests?|context)")


def told_queue_seconds(sentence: str) -> float | None:
    """The longest time in a queue a sentence tells (seconds), or None when it tells none."""
    low = sentence.lower()
    if "queu" not in low or _NEGATED_RE.search(low) or _BEHIND_RE.search(low):
        return None
    found = [_dur(m) for pattern in _QUEUE_RES for m in pattern.finditer(low)]
    return max(found) if found else None


# A GPU told to slow down while this hot: NVIDIA's GeForce cards lower their boost clocks at a temperature
# target of 83-84 C (GPU Boost), data-centre cards' "GPU Slowdown Temp" (nvidia-smi -q) is higher; at 80 C
# and above, a sentence that says the GPU throttles, slows or drops its clocks tells a thermal slowdown.
HOT_C = 80
_THERMAL = "thermal_throttling"
_STRAGGLER = "straggler_gpu"
_REGRESSION = "kernel_slowdown"
_HOL = "head_of_line_blocking"
_TEMP_RE = re.compile(r"\b(?P<t>\d{2,3}(?:\.\d)?) ?(?:°|º)? ?(?:c\b|celsius\b|degrees?\b)")
_SLOWS_RE = re.compile(
    r"\bthrottl\w*|\bslow(?:s|ed|ing|er|downs?|s down|ed down| down)?\b|\bdown-?clock\w*|"
    r"\bclocks? (?:drop|fall|fell|go down)"
)


# A sentence that denies or retires what it tells ("85 C but no throttling", "no longer takes 20 minutes to
# load", "loads in 10 s instead of 20 minutes") tells no failure.
_NEGATED_RE = re.compile(r"\b(?:no|not|no longer|never|without|instead of)\b|n't\b")


def told_hot_celsius(sentence: str) -> float | None:
    """The highest temperature (C) a sentence that tells a slowdown gives, or None."""
    low = sentence.lower()
    if not _SLOWS_RE.search(low) or _NEGATED_RE.search(low):
        return None
    temps = [float(m["t"]) for m in _TEMP_RE.finditer(low)]
    return max(temps) if temps else None


# A duration followed by "timeout" or "limit" is a setting asked for or set ("need a barrier with a 30
# minute timeout"), not the time the load took.
_SETTING_RE = re.compile(r"\s*(?:-\s*)?(?:time[- ]?outs?|time limits?|deadlines?|limits?)\b")


def told_load_seconds(sentence: str) -> float | None:
    """The longest load time a sentence tells (seconds), or None when it tells none."""
    low = sentence.lower()
    if "load" not in low or _NEGATED_RE.search(low):
        return None
    found = [
        _dur(m)
        for pattern in _TOLD_RES
        for m in pattern.finditer(low)
        if not _SETTING_RE.match(low, _dur_end(m))
    ]
    return max(found) if found else None


def _prose_sentences(lines: Sequence[str], skip: Container[int] = ()) -> Iterator[tuple[int, str, str]]:
    """(0-based line, line, sentence) for each sentence of the prose lines the readers take
    (`prose_window`)."""
    for n, line in prose_window(lines, skip):
        for sentence in _SENTENCE_SPLIT_RE.split(line):
            yield n, line, sentence


# Chinese, Japanese and Korean sentences are not split by spaces, so `is_prose` (which counts words) never
# takes them: a line of the same window holding a few kana, ideographs or Hangul syllables and no log prefix
# is read as one sentence (`log_headed`: the test `is_prose` makes of a line's head).
_CJK_MIN_CHARS = 4


def _cjk_sentences(lines: Sequence[str], skip: Container[int] = ()) -> Iterator[tuple[int, str]]:
    """(0-based line, line) for each line of the prose window written in Chinese, Japanese or Korean."""
    for n, line in window_lines(lines, skip):
        if cjk_chars(line) >= _CJK_MIN_CHARS and not log_headed(line):
            yield n, line


def told_under_limits(lines: Sequence[str], skip: Container[int] = ()) -> frozenset[str]:
    """The signatures whose own figure the prose lines (outside `skip`) tell, and tell under its limit
    wherever they tell one: a load time under LOAD_SLOW_S (`model_load_slow`), a slowdown at a temperature
    under HOT_C (`thermal_throttling`). The prose tier does not name them: a figure read exactly outranks a
    bag of words ("loading the tokenizer takes a minute" is about loading, and says it is quick)."""
    loads: list[float] = []
    temps: list[float] = []
    for _, _, sentence in _prose_sentences(lines, skip):
        if (seconds := told_load_seconds(sentence)) is not None:
            loads.append(seconds)
        if (celsius := told_hot_celsius(sentence)) is not None:
            temps.append(celsius)
    under = {_LOAD_SLOW} if loads and max(loads) < LOAD_SLOW_S else set()
    if temps and max(temps) < HOT_C:
        under.add(_THERMAL)
    return frozenset(under)


# A question tells nothing that happened ("is the prefill serial?"): the readers below, which need no figure,
# leave it alone (`asks`).

# A model load told slow without a time: in words ("severely slows down the weight loading", "loading is
# painfully slow", "loading it takes ages"), or at a read rate below a hard disk's (LOAD_RATE_SLOW).
_SLOW_LOAD_RES = (
    re.compile(r"\bslow(?:s|ed|ing)? down (?:the |our |my |its )?(?:[\w-]+ ){0,2}?(?:load|loading)\b"),
    re.compile(
        r"\b(?:load|loading)(?: speed| time| process)? (?:is|was|became|becomes|gets|got|seems) "
        r"(?:very |extremely |really |painfully |super |so |too |incredibly |unbearably )?slow\b"
    ),
    re.compile(
        r"\btak(?:e|es|ing|en)\b (?:literally |like |almost )?(?:ages|forever|an eternity)\b"
        rf"{_SENTENCE}{{0,25}}?\b(?:to|for) {_LOADED}(?:load|loading)\b"
    ),
    # "loading <a model name with dots> ... takes ages"
    re.compile(
        r"\b(?:load|loads|loaded|loading)\b(?:[^.!?;,\n]|\.(?=\w)){0,100}?\btak(?:e|es|ing|en)\b "
        r"(?:literally |like |almost )?(?:ages|forever|an eternity)\b"
    ),
)
# The same told in Chinese, Japanese or Korean: a load (加载 / 读取, ロード / 読み込み, 로딩 / 로드) told
# slow, or told to take minutes or hours ("加载模型非常慢", "加载完需要30min", "ロードに数分かかる",
# "로딩이 너무 느려요"); one told not slow ("不慢", "遅くない", "느리지 않") tells none.
_CJK_SLOW_LOAD_RE = re.compile(
    r"(?:加载|加載|载入|載入|读取|讀取)[^。！？\n]{0,20}?(?:很慢|非常慢|特别慢|特別慢|太慢|好慢|极慢|巨慢|这么慢|這麼慢|"
    r"速度慢|几分钟|幾分鐘|几十分钟|幾十分鐘|几个小时|幾個小時|好几个小时|数小时|半小时|\d+\s*(?:分钟|分鐘|min|小时|小時))|"
    r"(?:ロード|読み込み|読込)[^。！？\n]{0,20}?(?:遅い|遅く|遅すぎ|時間がかか|数分|何分|数時間|\d+\s*(?:分|時間))|"
    r"(?:로딩|로드|불러오)[^.!?\n]{0,20}?(?:느리|느려|느립|오래 걸|몇 분|몇 시간|\d+\s*(?:분|시간))"
)
_CJK_NOT_SLOW_RE = re.compile(r"不(?:算|太|是很|怎么)?慢|没(?:有)?(?:那么|很)?慢|遅くな|느리지 않|느리지않")
# Hard disks stream 100-200 MB/s, SATA SSDs about 500 MB/s, NVMe drives several GB/s: weights read slower
# than a hard disk ("the SSD loads 20M/s in the container", "it reads the shards at 30 MB/s") crawl.
LOAD_RATE_SLOW = 100e6  # bytes per second
_RATE_RE = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?P<u>[kmg])(?:i?b)?/s(?:ec)?\b")
_RATE_UNIT = {"k": 1e3, "m": 1e6, "g": 1e9}
_LOADING_RE = re.compile(r"\b(?:load|loads|loaded|loading|reads?|reading)\b")
_DATA_RE = re.compile(r"\bdata ?(?:loaders?|sets?)\b|\bdataloader|\bdataset")


def told_slow_load(sentence: str) -> bool:
    """Whether a sentence tells a model load slow in words (no figure needed), in English or in Chinese,
    Japanese or Korean."""
    if _CJK_SLOW_LOAD_RE.search(sentence):
        return not _CJK_NOT_SLOW_RE.search(sentence)
    low = sentence.lower()
    if "load" not in low or asks(low) or _NEGATED_RE.search(low):
        return False
    return any(pattern.search(low) for pattern in _SLOW_LOAD_RES)


def told_load_rate(sentence: str) -> float | None:
    """The slowest read rate (bytes/s) a sentence about loading tells, or None."""
    low = sentence.lower()
    if "/s" not in low or not _LOADING_RE.search(low) or _NEGATED_RE.search(low) or _DATA_RE.search(low):
        return None
    rates = [float(m["n"]) * _RATE_UNIT[m["u"]] for m in _RATE_RE.finditer(low)]
    return min(rates) if rates else None


# A time told waiting at a step ("I have been waiting 15 minutes on this screen", "stuck for 20 min"): a
# slow load when the log pasted with it ends at a loading step (the last line the tool printed).
_WAITED_RE = re.compile(
    rf"\b(?:waiting|waited|stuck|hangs?|hanging|hung|frozen|sitting|sat|stalled)\b{_SENTENCE}{{0,30}}?{_DUR}"
)
_FENCE_RE = re.compile(r"^\s*(?:```\w*|~~~)\s*$")
_LOADING_STEP_RE = re.compile(r"\bloading\b")
_LOAD_DONE_RE = re.compile(r"100%|\bdone\b|\bfinished\b|\bloaded\b")


def _waited_seconds(sentence: str) -> float | None:
    low = sentence.lower()
    if _NEGATED_RE.search(low):
        return None
    found = [_dur(m) for m in _WAITED_RE.finditer(low)]
    return max(found) if found else None


def _ends_loading(lines: Sequence[str]) -> bool:
    """Whether the last printed line of the text is a loading step still under way."""
    for line in reversed(lines):
        if not line.strip() or _FENCE_RE.match(line):
            continue
        low = line.lower()
        return bool(_LOADING_STEP_RE.search(low)) and not _LOAD_DONE_RE.search(low)
    return False


# A few GPUs (nodes, ranks) told slower than the rest of the job's, or holding the whole job back: the
# way people describe a straggler without a per-rank timing table ("two of the cards are 40% slower than
# the others", "one GPU can slow down the whole training", "some nodes are 10x slower than other").
_UNITS = r"(?:gpus?|cards?|nodes?|ranks?|devices?|workers?|hosts?|machines?|servers?|[a-z]{1,3}\d{2,4}s?)"
_SUBSET_RE = re.compile(
    rf"\b(?:one|a single|two|three|\d+|some|a few|several|certain|particular|a couple of)\s+"
    rf"(?:of (?:the |our |my |these |those )?)?(?:[\w-]+ )?{_UNITS}\b"
)
_SLOWER_RE = re.compile(r"\bslow(?:er|s|ed|ing)?\b|\blag(?:s|ging|ged)?\b")
_THAN_REST_RE = re.compile(
    rf"\bthan (?:the |all )?(?:others?|rest)\b|\bthan (?:the |all )?other {_UNITS}|"
    r"\bcompared (?:to|with) (?:the |all )?(?:others?|rest)\b|"
    r"\bthe (?:whole|entire) (?:training|job|run|cluster)\b|"
    r"\b(?:holds?|held|holding) (?:back|up) (?:the|all|every)\b"
)
# holding the others back is itself the slowness: "one node with a bad cable holds back the whole job"
_HOLDS_BACK_RE = re.compile(
    r"\b(?:holds?|held|holding|drags?|dragged|dragging) (?:back|down) (?:the|all|every)\b"
)
# "GPU 0 started at once, but GPU 3 began about a minute later": one numbered device behind another
_NAMED_LATE_RE = re.compile(
    rf"\b(?P<unit>gpu|rank|node|device) ?#?(?P<a>\d+)\b{_SENTENCE}{{0,80}}?\b(?:but|while|whereas|yet)\b"
    rf"{_SENTENCE}{{0,20}}?\b(?P=unit) ?#?(?P<b>\d+)\b{_SENTENCE}{{0,60}}?\b(?:later|behind|slower)\b"
)


def told_straggler(sentence: str) -> bool:
    """Whether a sentence tells a few GPUs (nodes, ranks) slower than the rest or one lagging another."""
    low = sentence.lower()
    if not any(word in low for word in ("slow", "lag", "later", "behind", "back", "down")):
        return False
    if asks(low) or _NEGATED_RE.search(low):
        return False
    if _SUBSET_RE.search(low) and (
        (_SLOWER_RE.search(low) and _THAN_REST_RE.search(low)) or _HOLDS_BACK_RE.search(low)
    ):
        return True
    return any(m["a"] != m["b"] for m in _NAMED_LATE_RE.finditer(low))


# A throughput told lower across a version change: "~60 tok/s but only 28 tok/s after upgrading to
# v0.12", "downgrading to 0.9 solves it and returns the throughput to expected numbers".
_VERSION_CHANGE_RE = re.compile(
    r"\b(?:upgrad\w*|after (?:the |an )?update|updat(?:ed|ing) (?:to|from)|"
    r"between v?\d+\.\d+[\w.*]* and v?\d+\.\d+)"
)
_ROLLBACK_RE = re.compile(r"\b(?:downgrad\w*|revert\w*|roll(?:ed|ing)? ?back)")
_RATE_WORDS_RE = re.compile(
    r"tok(?:en)?s?/s\b|\btokens? per second|\btps\b|it/s\b|samples?/s\b|images?/s\b|\bthroughput\b"
)
_WORSE_RE = re.compile(
    r"\bslower\b|\bregress\w*|\bdrop(?:s|ped|ping)?\b|\bhalv\w*|\bhalf\b|\bbut only\b|\bonly \d|"
    r"\bdecreas\w*|\bdegrad\w*|\bfell\b|\bfalls?\b"
)
_RESTORED_RE = re.compile(r"\b(?:solves?|solved|fix(?:es|ed)?|restores?|restored|returns?)\b")


def told_version_regression(sentence: str) -> bool:
    """Whether a sentence tells a throughput lost with a new version (or won back by going back)."""
    low = sentence.lower()
    if not _RATE_WORDS_RE.search(low) or asks(low) or _NEGATED_RE.search(low):
        return False
    if _ROLLBACK_RE.search(low) and (_RESTORED_RE.search(low) or _WORSE_RE.search(low)):
        return True
    return bool(_VERSION_CHANGE_RE.search(low) and _WORSE_RE.search(low))


# Requests told waiting for another request's prefill: head-of-line blocking in words ("the second request
# has to wait until the prefill of the first is completed", "a large prefill starves concurrent decode",
# "the prefill of different requests is serial").
_PREFILL_WAIT_RES = (
    # the waiter named before the wait: "the second request has to wait until the prefill ..."
    re.compile(
        rf"\b(?:requests?|quer(?:y|ies)|prompts?|users?|clients?|decod\w*)\b{_SENTENCE}{{0,40}}?"
        rf"\b(?:wait\w*|block\w*|stall\w*|delay\w*|stuck|starv\w*|queued|held)\b{_SENTENCE}{{0,40}}?"
        rf"\b(?:until|behind|for)\b{_SENTENCE}{{0,40}}?\bprefill"
    ),
    re.compile(
        rf"\bprefill\w*\b{_SENTENCE}{{0,40}}?\b(?:starv\w*|block\w*|stall\w*|delay\w*|freez\w*|paus\w*)\b"
        rf"{_SENTENCE}{{0,30}}?\b(?:decod\w*|other requests?|short(?:er)? requests?|requests?)\b"
    ),
    re.compile(rf"\bprefill\w*\b{_SENTENCE}{{0,50}}?\b(?:is|are|runs?) (?:processed )?serial(?:ly)?\b"),
)
_WAITERS_RE = re.compile(r"\brequests?\b|\bdecod\w*|\bquer(?:y|ies)\b|\bprompts?\b|\busers?\b|\bclients?\b")
_KEPT_FROM_RE = re.compile(r"\b(?:prevents?|avoids?|keeps?)\b")


def told_prefill_wait(sentence: str) -> bool:
    """Whether a sentence tells requests waiting for (or starved by) another request's prefill."""
    low = sentence.lower()
    if "prefill" not in low or asks(low) or _NEGATED_RE.search(low) or _KEPT_FROM_RE.search(low):
        return False
    return bool(_WAITERS_RE.search(low)) and any(pattern.search(low) for pattern in _PREFILL_WAIT_RES)


# An out-of-memory told to come only after a long run ("out of memory after 15K iterations", "it OOMs after
# about 6 hours of training", "after 20 epochs I get CUDA out of memory"): the first steps fit, so memory
# grew until it did not (`cuda_oom_leak`). A few steps or one epoch is a batch that never fit, or a larger
# evaluation pass; these limits are the least that tell a run, not a figure fitted to a case.
_LEAK = "cuda_oom_leak"
_OOM_WORDS_RE = re.compile(r"\bout[ -]of[ -]memory\b|\bo\.?o\.?m(?:s|ed|ing)?\b|outofmemory")
_AFTER_RUN_RE = re.compile(
    r"\bafter (?:about |around |roughly |nearly |over |some |~)?(?P<n>\d+(?:\.\d+)?) ?(?P<k>k\b)? ?"
    r"(?:(?:training|train|inference|successful) )?(?P<u>iterations?|iters?|its|steps?|batches|epochs?|"
    r"hours?|hrs?|days?)\b"
)
_LONG_RUN = {"i": 1000.0, "s": 1000.0, "b": 1000.0, "e": 3.0, "h": 1.0, "d": 1.0}
_GONE_RE = re.compile(r"\b(?:gone|disappear\w*|resolved|works? (?:fine|now))\b")


def told_late_oom(sentence: str) -> bool:
    """Whether a sentence tells an out-of-memory that came only after a long run (many steps, epochs,
    hours)."""
    low = sentence.lower()
    if "after" not in low or not _OOM_WORDS_RE.search(low) or asks(low) or _NEGATED_RE.search(low):
        return False
    if _RESTORED_RE.search(low) or _GONE_RE.search(low):
        return False
    for m in _AFTER_RUN_RE.finditer(low):
        n = float(m["n"]) * (1000.0 if m["k"] else 1.0)
        if n >= _LONG_RUN[m["u"][0]]:
            return True
    return False


# Other work told slowing a GPU it shares ("when I run two `mnist_conv.py`s on gpu0, each took more time",
# "running multiple models at the same time, the inference speed of each model will slow down", "the live
# server shared a GPU with another job"): `noisy_neighbor`. All three parts in one sentence: more than one
# process (job, model, pod, session...), one GPU or one time, and a slowdown; a slowdown denied ("no
# slowdown", "not slower") tells none.
_NEIGHBOR = "noisy_neighbor"
_SHARERS_RE = re.compile(
    r"\b(?:two|2|three|multiple|several|many|both|other|another|second|more)\b[^.?!\n]{0,40}?\b(?:process(?:es)?|"
    r"models?|programs?|scripts?|sessions?|instances?|jobs?|engines?|exes?|apps?|applications?|containers?|"
    r"pods?|workloads?|tasks?|users?|people's jobs)\b"
)
_ONE_GPU_RE = re.compile(
    r"\b(?:(?:same|one|single|a|the) (?:physical )?(?:gpu|card|device)|"
    r"share[sd]? (?:(?:the|a|one|same) )?(?:gpu|card|device)|shared (?:gpu|vm|node|machine)|gpu ?0|cuda:0)\b"
)
_AT_ONCE_RE = re.compile(
    r"\b(?:in parallel|parallel(?:ly)?|at the same time|simultaneous(?:ly)?|concurrent(?:ly)?|alongside|"
    r"together|meantime|co-?locat\w*)\b"
)
_SLOWDOWN_RE = re.compile(
    r"\b(?:slow(?:s|ed|er|ly|ing)?(?: down)?|doubl(?:e|ed|es)|drop(?:s|ped)?|decreas(?:e|es|ed)|degrad\w*|"
    r"halv\w*|longer|twice as long|more time|serially|collapse[sd]?|impact(?:ed|s)?|contention|interfer\w*)\b"
)
_DENIED_SLOWDOWN_RE = re.compile(
    r"\b(?:no|not|never|without|n't)\b(?: \w+){0,2} (?:slow\w*|impact\w*|degrad\w*|contention|interfer\w*)"
)


def told_shared_gpu(sentence: str) -> bool:
    """Whether a sentence tells other processes (jobs, models, pods) on one GPU, or at one time, slowing
    each other down."""
    low = sentence.lower()
    if not _SLOWDOWN_RE.search(low) or not _SHARERS_RE.search(low) or _DENIED_SLOWDOWN_RE.search(low):
        return False
    return bool(_ONE_GPU_RE.search(low) or _AT_ONCE_RE.search(low))


# A swap told beside an out-of-memory: the OOM came as another model or checkpoint was loaded, or while the
# one before it was still resident ("it OOMs when I switch checkpoints", "during the second model", "when
# one of the models has already been loaded into VRAM"): `cuda_oom_hot_swap`. A move to a smaller or
# quantised model is the remedy of a model that never fit, a move to a larger one a model that does not fit,
# and a told fix ends the story: none of them counts.
_SWAP = "cuda_oom_hot_swap"
_MODELS = r"(?:models?|checkpoints?|ckpts?|finetunes?|fine-tunes?|loras?|llms?)\b"
_SWAP_RES = (
    re.compile(
        rf"\b(?:swap\w*|switch\w*|chang(?:e|es|ed|ing))\b (?:(?:the|a|my|our|between|to|from|of)\s)?"
        rf"(?:[\w-]+ )?{_MODELS}"
    ),
    re.compile(r"\b(?:model|checkpoint) (?:swap\w*|switch\w*|chang(?:e|es|ing))\b"),
    re.compile(rf"\b(?:second|another|next) (?:[\w-]+ )?{_MODELS}"),
    re.compile(
        rf"\b{_MODELS} (?:(?:is|are|has|have) )?(?:already (?:(?:has|have) )?(?:been |being )?loaded|"
        r"still (?:loaded|resident|in (?:vram|memory|gpu)))"
    ),
)
_REMEDY_RE = re.compile(r"\b(?:smaller|lighter|bigger|larger|quantized|quantised|int4|int8|fp16|cpu)\b")


def told_swap(sentence: str) -> bool:
    """Whether a sentence tells a model or checkpoint swapped in (or another loaded next to one still
    resident); read only beside an out-of-memory."""
    low = sentence.lower()
    if asks(low) or _REMEDY_RE.search(low) or _RESTORED_RE.search(low) or _GONE_RE.search(low):
        return False
    return any(pattern.search(low) for pattern in _SWAP_RES)


def oom_told_records(lines: Sequence[str], source: str) -> list[Evidence]:
    """What the prose beside an out-of-memory tells of it, read also on lines a parser read (the OOM's own
    line, or a title quoting it): a `cuda_oom_leak` wording for the first sentence telling the OOM came only
    after a long run, else a `cuda_oom_hot_swap` one for the first telling a model swapped in. Empty when
    no line tells either."""
    swap: list[Evidence] = []
    for n, line, sentence in _prose_sentences(lines):
        if told_late_oom(sentence):
            return [_told(_LEAK, "an out-of-memory told after a long run", {}, n, line, source)]
        if not swap and told_swap(sentence):
            swap.append(_told(_SWAP, "an out-of-memory told at a model swap", {}, n, line, source))
    return swap


def told_records(lines: Sequence[str], source: str, skip: Container[int] = ()) -> list[Evidence]:
    """`text_match` records for the first prose line (outside `skip`, 0-based lines the exact tier read)
    that tells each failure: a load time of at least `LOAD_SLOW_S`, a load told slow in words or read
    slower than `LOAD_RATE_SLOW`, or a long wait at the loading step the log ends on (`model_load_slow`);
    a time in the queue of at least `QUEUED_S` (`queue_saturation`); a slowdown at `HOT_C` or hotter
    (`thermal_throttling`); a few GPUs slower than the rest (`straggler_gpu`); a throughput lost with a
    new version (`kernel_slowdown`); requests waiting for another's prefill (`head_of_line_blocking`); an
    out-of-memory only after a long run (`cuda_oom_leak`); other work slowing a shared GPU
    (`noisy_neighbor`).
    None when no line tells one."""
    out: dict[str, Evidence] = {}
    loading_last: list[bool] = []  # computed once, on the first told wait

    def put(sig: str, phrase: str, figure: dict[str, object], n: int, line: str) -> None:
        if sig not in out:
            out[sig] = _told(sig, phrase, figure, n, line, source)

    for n, line, sentence in _prose_sentences(lines, skip):
        if _LOAD_SLOW not in out:
            if (seconds := told_load_seconds(sentence)) and seconds >= LOAD_SLOW_S:
                put(_LOAD_SLOW, "a load time told in prose", {"told_seconds": seconds}, n, line)
            elif told_slow_load(sentence):
                put(_LOAD_SLOW, "a load told slow in prose", {}, n, line)
            elif (rate := told_load_rate(sentence)) is not None and rate < LOAD_RATE_SLOW:
                put(_LOAD_SLOW, "a slow read rate told for a load", {"told_bytes_per_s": rate}, n, line)
            elif (waited := _waited_seconds(sentence)) and waited >= LOAD_SLOW_S:
                if not loading_last:
                    loading_last.append(_ends_loading(lines))
                if loading_last[0]:
                    put(
                        _LOAD_SLOW,
                        "a long wait told at a loading step",
                        {"told_seconds": waited},
                        n,
                        line,
                    )
        if _QUEUED not in out and (queued := told_queue_seconds(sentence)) and queued >= QUEUED_S:
            put(_QUEUED, "a queue time told in prose", {"told_seconds": queued}, n, line)
        if _THERMAL not in out and (celsius := told_hot_celsius(sentence)) and celsius >= HOT_C:
            put(_THERMAL, "a slowdown told at a hot temperature", {"told_celsius": celsius}, n, line)
        if _STRAGGLER not in out and told_straggler(sentence):
            put(_STRAGGLER, "a few GPUs told slower than the rest", {}, n, line)
        if _REGRESSION not in out and told_version_regression(sentence):
            put(_REGRESSION, "a throughput told lost with a version", {}, n, line)
        if _HOL not in out and told_prefill_wait(sentence):
            put(_HOL, "requests told waiting for a prefill", {}, n, line)
        if _LEAK not in out and told_late_oom(sentence):
            put(_LEAK, "an out-of-memory told after a long run", {}, n, line)
        if _NEIGHBOR not in out and told_shared_gpu(sentence):
            put(_NEIGHBOR, "other work told slowing a shared GPU", {}, n, line)
    if _LOAD_SLOW not in out:
        for n, line in _cjk_sentences(lines, skip):
            if told_slow_load(line):
                put(_LOAD_SLOW, "a load told slow in prose", {}, n, line)
                break
    return list(out.values())


def _told(sig: str, phrase: str, figure: dict[str, object], n: int, line: str, source: str) -> Evidence:
    return Evidence(
        kind=EvidenceKind.LOG,
        key=keys.TEXT_MATCH,
        value=sig,
        source=source,
        raw=" ".join(line.split())[:400],
        attrs={"score": _SCORE, "phrases": [phrase], **figure, "line": n + 1, "lines": [n + 1]},
        tier=EvidenceTier.TEXT,
    )
