"""Atomic hot-swap on a real `gpuobs serve`: no request fails while the model changes under load, requests
in flight finish on the old model, the old one is freed, and a model that would not fit is refused.

`--memory-budget-bytes` stands in for the GPU's free memory on this machine without a GPU (on CUDA the
server reads it from the device).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from support.serve import ServeProcess, http_json

from gpuobs.serving.model.loader import TINY_CONFIG, write_random_model

MODEL = "gpuobs-tiny-llama"
LOAD = "POST"
BUDGET = 48 * 2**20  # the tiny model with a 16 MiB KV cache takes ~18 MiB: room for one more of it


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    small = write_random_model(root / "tiny-v2", TINY_CONFIG, seed=99)
    big_cfg = dataclasses.replace(
        TINY_CONFIG,
        hidden_size=512,
        intermediate_size=1024,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=0,
    )
    big = root / "big"
    big.mkdir()
    (big / "config.json").write_text(json.dumps(big_cfg.to_hf_dict()))  # config is enough
    return {"small": small, "big": big}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    workdir = tmp_path_factory.mktemp("serve-swap")
    with ServeProcess(
        workdir, "--memory-budget-bytes", str(BUDGET), "-E", "kv_cache_bytes=16777216", grpc=False
    ) as proc:
        yield proc


def greedy(cli: openai.OpenAI, prompt: str, n: int) -> str:
    return (
        cli.completions.create(
            model=MODEL, prompt=prompt, max_tokens=n, temperature=0, extra_body={"ignore_eos": True}
        )
        .choices[0]
        .text
    )


def test_swap_that_does_not_fit_is_refused(server: ServeProcess, models: dict[str, Path]) -> None:
    status, body = http_json(
        "POST", f"{server.url}/admin/models/load", {"model": str(models["big"]), "wait": True}
    )
    assert status == 409, body
    assert body["error"]["code"] == "swap_refused"
    assert "MiB" in body["error"]["message"] and "refused" in body["error"]["message"]
    status, body = http_json("POST", f"{server.url}/admin/models/load", {"model": "/no/such/dir"})
    assert status == 409 and "does not exist" in body["error"]["message"]
    status, body = http_json("POST", f"{server.url}/admin/models/load", {"model": 5})
    assert status == 400
    assert http_json("GET", f"{server.url}/ready")[0] == 200
    assert 'gpuobs_serving_model_swaps_total{result="refused"} 2.0' in server.metrics()


def test_swap_under_load_loses_no_request(server: ServeProcess, models: dict[str, Path]) -> None:
    cli = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0, timeout=120)
    old_short = greedy(cli, "swap me", 16)
    old_ref = greedy(cli, "steady", 12)
    results: list[tuple[str, str | BaseException]] = []
    stop = threading.Event()

    def load(i: int) -> None:
        deadline = time.monotonic() + 60
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                if i % 2:
                    text = "".join(
                        c.choices[0].text
                        for c in cli.completions.create(
                            model=MODEL,
                            prompt="steady",
                            max_tokens=12,
                            temperature=0,
                            stream=True,
                            extra_body={"ignore_eos": True},
                        )
                    )
                else:
                    text = greedy(cli, "steady", 12)
                results.append(("ok", text))
            except BaseException as exc:  # every failure is collected and asserted on
                results.append(("error", exc))

    long_result: dict[str, object] = {}

    def long_request() -> None:
        try:
            chunks = []
            for c in cli.completions.create(
                model=MODEL,
                prompt="swap me",
                max_tokens=1500,
                temperature=0,
                stream=True,
                extra_body={"ignore_eos": True},
            ):
                chunks.append(c.choices[0].text)
                long_result.setdefault("first_chunk", time.monotonic())
            long_result["text"] = "".join(chunks)
            long_result["end"] = time.monotonic()
        except BaseException as exc:  # asserted below
            long_result["error"] = exc

    threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
    long_thread = threading.Thread(target=long_request)
    long_thread.start()
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while "first_chunk" not in long_result and time.monotonic() < deadline:
        time.sleep(0.02)
    status, body = http_json(
        "POST",
        f"{server.url}/admin/models/load",
        {"model": str(models["small"]), "wait": True, "timeout_s": 60},
        timeout=90,
    )
    switched_at = time.monotonic()
    assert status == 200 and body["state"] == "switched", body
    time.sleep(1.0)
    stop.set()
    for t in threads:
        t.join(60)
    long_thread.join(120)

    errors = [r for kind, r in results if kind == "error"]
    assert not errors, errors[:3]
    texts = {r for kind, r in results if kind == "ok"}
    new_ref = greedy(cli, "steady", 12)
    assert new_ref != old_ref  # the new weights really serve
    assert texts <= {old_ref, new_ref}, texts
    assert old_ref in texts and new_ref in texts  # traffic saw both models, none failed
    # the long request started on the old model and finished there after the switch
    assert "error" not in long_result, long_result.get("error")
    assert float(long_result["end"]) > switched_at  # type: ignore[arg-type]
    assert str(long_result["text"]).startswith(old_short)
    assert not str(long_result["text"]).startswith(greedy(cli, "swap me", 16))

    # the old engine is freed once its last request ended
    deadline = time.monotonic() + 30
    state = http_json("GET", f"{server.url}/admin/models")[1]
    while state["draining"] and time.monotonic() < deadline:
        time.sleep(0.2)
        state = http_json("GET", f"{server.url}/admin/models")[1]
    assert state["draining"] == []
    assert state["current"]["generation"] == 2 and state["current"]["model_dir"] == str(models["small"])
    assert any(r.get("event") == "swap_freed" for r in server.json_logs())
    metrics = server.metrics()
    assert 'gpuobs_serving_model_swaps_total{result="ok"} 1.0' in metrics
    # the fit check's estimate (from config.json, before loading) is close to what the engine holds
    held = next(
        float(ln.split()[-1])
        for ln in metrics.splitlines()
        if ln.startswith(f'gpuobs_serving_memory_bytes{{model_name="{MODEL}"}}')
    )
    assert abs(body["estimated_bytes"] - held) / held < 0.1, (body["estimated_bytes"], held)
    assert f'gpuobs_serving_ready{{model_name="{MODEL}"}} 1.0' in metrics


def test_background_swap_reports_progress(server: ServeProcess, models: dict[str, Path]) -> None:
    status, body = http_json("POST", f"{server.url}/admin/models/load", {"model": None})
    assert status == 202 and body["state"] in ("loading", "warming", "switched")
    swap_id = body["swap_id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, body = http_json("GET", f"{server.url}/admin/models/swaps/{swap_id}")
        if body["state"] not in ("loading", "warming"):
            break
        time.sleep(0.2)
    assert status == 200 and body["state"] == "switched", body
    assert http_json("GET", f"{server.url}/admin/models/swaps/nope")[0] == 404


def test_swap_with_hostile_inputs_answers_4xx(server: ServeProcess) -> None:
    """A 300-character path component and a huge `timeout_s` are bad requests, not 500s (issue 10 item 15)."""
    status, body = http_json("POST", f"{server.url}/admin/models/load", {"model": "/tmp/" + "a" * 300})
    assert status == 409, body
    assert "cannot be read" in body["error"]["message"]
    for timeout in (1e308, -1, 0):
        status, body = http_json(
            "POST", f"{server.url}/admin/models/load", {"model": None, "wait": True, "timeout_s": timeout}
        )
        assert status == 400, body
        assert body["error"]["param"] == "timeout_s"
    assert http_json("GET", f"{server.url}/ready")[0] == 200


def _broken_copy(root: Path, name: str, good: Path, config: str | None) -> str:
    """`good`'s weights and tokenizer under a config.json of `config` (None: no weights, a good config)."""
    target = root / name
    target.mkdir()
    for f in good.iterdir():
        if f.name != "config.json" and (config is not None or f.suffix != ".safetensors"):
            shutil.copy(f, target / f.name)
    (target / "config.json").write_text(config if config is not None else (good / "config.json").read_text())
    return str(target)


def test_swap_to_a_broken_model_directory_is_refused_and_the_old_model_serves_on(
    server: ServeProcess, models: dict[str, Path], tmp_path: Path
) -> None:
    """A model directory whose config.json cannot describe a model was a 500 "internal error: RecursionError"
    or "OverflowError" (the size estimate choked on it), or a swap that failed later with an AttributeError; a
    config.json that disagrees with the weights beside it was switched to and served. Each is now refused
    before the load (409) or fails the load as the directory's fault (422), in one line naming the file; the
    old model serves on and the log holds no traceback."""
    good = models["small"]
    config = json.loads((good / "config.json").read_text())
    refused = {  # name: (config.json text, words of the 409)
        "nested": ("[" * 100_000 + "]" * 100_000, "config.json: nested too deeply to read"),
        "list": ("[1, 2]", "config.json is not a JSON object (it holds a list)"),
        "infinite": (json.dumps({**config, "hidden_size": float("inf")}), "cannot convert float infinity"),
        "zero-heads": (json.dumps({**config, "num_attention_heads": 0}), "num_attention_heads must be >= 1"),
    }
    for name, (text, words) in refused.items():
        model_dir = _broken_copy(tmp_path, name, good, text)
        status, body = http_json(LOAD, f"{server.url}/admin/models/load", {"model": model_dir, "wait": True})
        assert status == 409 and body["error"]["code"] == "swap_refused", (name, body)
        assert words in body["error"]["message"] and model_dir in body["error"]["message"], (name, body)
    failed = {  # name: (config.json text or None for no weights, words of the 422)
        "wider": (json.dumps({**config, "hidden_size": 2 * config["hidden_size"]}), "does not describe"),
        "no-weights": (None, "has no *.safetensors weights"),
    }
    for name, (maybe_text, words) in failed.items():
        model_dir = _broken_copy(tmp_path, name, good, maybe_text)
        status, body = http_json(LOAD, f"{server.url}/admin/models/load", {"model": model_dir, "wait": True})
        assert status == 422 and body["error"]["code"] == "swap_failed", (name, body)
        assert words in body["error"]["message"], (name, body)
    names = (("", "is empty"), (" ", "is empty"), ("a\nb", "control character"), ("x" * 300, "at most 256"))
    for bad_name, words in names:
        load = {"model": str(good), "name": bad_name}
        status, body = http_json(LOAD, f"{server.url}/admin/models/load", load)
        assert status == 400 and body["error"]["param"] == "name" and words in body["error"]["message"], body
    assert http_json("GET", f"{server.url}/ready")[0] == 200
    status, body = http_json(
        "POST", f"{server.url}/v1/completions", {"model": MODEL, "prompt": "still here", "max_tokens": 2}
    )
    assert status == 200 and body["usage"]["completion_tokens"] == 2, body
    assert "Traceback" not in server.logs()
    failures = [r for r in server.json_logs() if r.get("msg") == "hot-swap failed"]
    assert len(failures) == 2, failures  # one line each, the reason in its `error` field
    assert failures[0]["error"].startswith("weight model.embed_tokens.weight has shape [260, 128] but")
    assert failures[1]["error"] == f"{tmp_path / 'no-weights'} has no *.safetensors weights"


class _NamedEngine:
    """Just what ModelManager reads of an engine: its name, device, memory; stop() is a no-op."""

    def __init__(self, model_dir: str | None, name: str | None) -> None:
        self.model_name = name or f"dir-{model_dir}"
        self.device = "cpu"

    def memory_bytes(self) -> int:
        return 1

    def stop(self, drain: bool = True, timeout_s: float = 30) -> None:
        return None


def test_a_swapped_in_engine_serves_under_the_served_name(tmp_path: Path) -> None:
    """The engine's own log lines and spans carry its model_name: after a swap it must be the name the
    metrics use, or a diagnosis cannot put the engine's lines (preemptions, OOMs) next to the metrics."""
    from gpuobs.serving.hotswap import ModelManager

    built: list[tuple[str | None, str | None]] = []

    def factory(model_dir: str | None, name: str | None) -> Any:
        built.append((model_dir, name))
        return _NamedEngine(model_dir, name)

    manager = ModelManager(factory, warmup=lambda engine: None)
    first = manager.load_initial(None)
    assert built == [(None, None)] and first.name == "dir-None"  # no served name given: the engine's own
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG.to_hf_dict()))
    status = manager.start_swap(str(tmp_path))
    assert status.done.wait(10) and status.state == "switched", status.error
    assert built[-1] == (str(tmp_path), "dir-None")
    assert manager.current is not None and manager.current.engine.model_name == manager.current.name
    renamed = manager.start_swap(str(tmp_path), name="other")
    assert renamed.done.wait(10) and manager.current.engine.model_name == "other"
