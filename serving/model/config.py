"""Llama configuration read from (and written to) a Hugging Face `config.json`."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuobs.errors import InputError
from gpuobs.json_input import loads

# The sizes a decoder cannot be built with at 0: a config.json saying so is refused before any weight loads
# (a zero head count divided by zero; a zero layer count served a model of nothing).
_SIZES = (
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "max_position_embeddings",
)

__all__ = ["LlamaConfig"]


@dataclass(frozen=True)
class LlamaConfig:
    """The fields of a Hugging Face `LlamaConfig` that the decoder needs."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    max_position_embeddings: int
    head_dim: int = 0  # 0: hidden_size // num_attention_heads
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    tie_word_embeddings: bool = False
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    torch_dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in _SIZES:
            if getattr(self, name) < 1:
                raise InputError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("rms_norm_eps", "rope_theta"):
            if not 0 < getattr(self, name) < math.inf:
                raise InputError(f"{name} must be a number > 0, got {getattr(self, name)}")
        if self.head_dim == 0:
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_attention_heads)
        if self.head_dim < 1:
            raise InputError(
                f"head_dim must be >= 1, got {self.head_dim} (config.json's, or hidden_size // "
                "num_attention_heads)"
            )
        if self.num_attention_heads % self.num_key_value_heads:
            raise InputError(
                f"num_attention_heads {self.num_attention_heads} is not a multiple of "
                f"num_key_value_heads {self.num_key_value_heads}"
            )
        if self.head_dim % 2:
            raise InputError(f"head_dim {self.head_dim} must be even for rotary embeddings")

    @classmethod
    def from_hf_dict(cls, raw: dict[str, Any]) -> LlamaConfig:
        """Build from a parsed `config.json` (architecture Llama, Mistral-like without sliding window)."""
        if raw.get("attention_bias") or raw.get("mlp_bias"):
            raise InputError("Llama variants with attention or MLP biases are not supported")
        try:
            eos = raw.get("eos_token_id")
            eos_ids: tuple[int, ...] = (
                () if eos is None else tuple(int(e) for e in eos) if isinstance(eos, list) else (int(eos),)
            )
            n_heads = int(raw["num_attention_heads"])
            return cls(
                vocab_size=int(raw["vocab_size"]),
                hidden_size=int(raw["hidden_size"]),
                intermediate_size=int(raw["intermediate_size"]),
                num_hidden_layers=int(raw["num_hidden_layers"]),
                num_attention_heads=n_heads,
                num_key_value_heads=int(raw.get("num_key_value_heads") or n_heads),
                max_position_embeddings=int(raw.get("max_position_embeddings", 2048)),
                head_dim=int(raw.get("head_dim") or 0),
                rms_norm_eps=float(raw.get("rms_norm_eps", 1e-5)),
                rope_theta=float(raw.get("rope_theta", 10000.0)),
                rope_scaling=raw.get("rope_scaling"),
                tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
                bos_token_id=None if raw.get("bos_token_id") is None else int(raw["bos_token_id"]),
                eos_token_ids=eos_ids,
                torch_dtype=str(raw.get("torch_dtype") or raw.get("dtype") or "float32"),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as exc:  # OverflowError: int(Infinity)
            raise InputError(f"config.json is not a Llama configuration: {exc!r}") from exc

    @classmethod
    def from_dir(cls, model_dir: Path) -> LlamaConfig:
        path = model_dir / "config.json"
        raw = _json_object(path)
        archs = raw.get("architectures") or ["LlamaForCausalLM"]
        archs = archs if isinstance(archs, list) else [archs]
        if not any(a in ("LlamaForCausalLM", "MistralForCausalLM") for a in archs):
            raise InputError(f"{path}: architecture {archs} is not supported (Llama only)")
        if raw.get("sliding_window"):
            raise InputError(f"{path}: sliding-window attention is not supported")
        config = cls.from_hf_dict(raw)
        # generation_config.json may name more end-of-sequence tokens (Llama 3 instruct models do)
        gen_path = model_dir / "generation_config.json"
        if gen_path.is_file():
            eos = _json_object(gen_path).get("eos_token_id")
            listed = eos if isinstance(eos, list) else [eos]
            extra = [e for e in listed if isinstance(e, int) and not isinstance(e, bool)]
            merged = tuple(dict.fromkeys([*config.eos_token_ids, *extra]))
            config = replace(config, eos_token_ids=merged)
        return config

    def to_hf_dict(self) -> dict[str, Any]:
        """The `config.json` content for this configuration."""
        out = asdict(self)
        eos = out.pop("eos_token_ids")
        out["eos_token_id"] = eos[0] if len(eos) == 1 else list(eos)
        out["architectures"] = ["LlamaForCausalLM"]
        out["model_type"] = "llama"
        out["hidden_act"] = "silu"
        if out["rope_scaling"] is None:
            del out["rope_scaling"]
        return out


def _json_object(path: Path) -> dict[str, Any]:
    """A JSON object file of a model directory, or an InputError naming the file and what is wrong."""
    try:
        raw = loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: JSONDecodeError, NestedTooDeeply
        raise InputError(f"cannot read {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise InputError(f"{path} is not a JSON object (it holds a {type(raw).__name__})")
    return raw
