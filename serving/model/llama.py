"""A Llama decoder (RMSNorm, RoPE, grouped-query attention, SwiGLU) with a paged-KV serving path.

Two ways to run the same weights:
- `forward_dense(ids)`: the plain unbatched forward pass, pure PyTorch, no cache, no kernels. It is
  the reference that the engine's greedy output is checked against.
- `prefill(...)` / `decode(...)`: the serving path over packed batches and a paged KV cache, through
  the kernel functions of `gpuobs.kernels` (Triton on CUDA, PyTorch references on CPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from gpuobs.errors import InputError
from gpuobs.serving.model.config import LlamaConfig
from gpuobs.serving.model.ops import KernelOps

__all__ = ["LayerWeights", "LlamaModel", "rope_tables", "weight_shape"]


def _inv_freq(config: LlamaConfig) -> torch.Tensor:
    dim = config.head_dim
    inv = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    scaling = config.rope_scaling or {}
    kind = scaling.get("rope_type") or scaling.get("type")
    if kind == "llama3":
        factor = float(scaling["factor"])
        low = float(scaling.get("low_freq_factor", 1.0))
        high = float(scaling.get("high_freq_factor", 4.0))
        old_ctx = float(scaling.get("original_max_position_embeddings", 8192))
        low_wavelen, high_wavelen = old_ctx / low, old_ctx / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old_ctx / wavelen - low) / (high - low)
        mid = (1 - smooth) * scaled / factor + smooth * scaled
        is_mid = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        inv = torch.where(is_mid, mid, scaled)
    elif kind == "linear":
        inv = inv / float(scaling["factor"])
    return inv


def rope_tables(config: LlamaConfig, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """float32 cos/sin [max_positions, head_dim // 2] (the layout gpuobs.kernels.rotary_embedding takes)."""
    t = torch.arange(config.max_position_embeddings, dtype=torch.float64)
    freqs = torch.outer(t, _inv_freq(config))
    return freqs.cos().float().to(device), freqs.sin().float().to(device)


def weight_shape(config: LlamaConfig, name: str) -> tuple[int, ...]:
    """A weight's shape as config.json describes it (Hugging Face name, `model.` prefix dropped): a
    checkpoint that disagrees is refused at load, not found later as a reshape error in the first request
    or, where no reshape notices, served as a model its config does not describe."""
    c = config
    q, kv, hidden, inter = (
        c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim, c.hidden_size,
        c.intermediate_size,
    )
    per_layer = name.split(".", 2)[2] if name.startswith("layers.") else name
    return {
        "embed_tokens.weight": (c.vocab_size, hidden),
        "lm_head.weight": (c.vocab_size, hidden),
        "norm.weight": (hidden,),
        "input_layernorm.weight": (hidden,),
        "post_attention_layernorm.weight": (hidden,),
        "self_attn.q_proj.weight": (q, hidden),
        "self_attn.k_proj.weight": (kv, hidden),
        "self_attn.v_proj.weight": (kv, hidden),
        "self_attn.o_proj.weight": (hidden, q),
        "mlp.gate_proj.weight": (inter, hidden),
        "mlp.up_proj.weight": (inter, hidden),
        "mlp.down_proj.weight": (hidden, inter),
    }[per_layer]


@dataclass
class LayerWeights:
    """One decoder layer; qkv and gate_up are fused, q/k/v/gate/up are views into them."""

    input_norm: torch.Tensor
    qkv: torch.Tensor
    o: torch.Tensor
    post_norm: torch.Tensor
    gate_up: torch.Tensor
    down: torch.Tensor


class LlamaModel:
    """Weights on one device plus the forward passes; holds no per-request state."""

    def __init__(
        self, config: LlamaConfig, weights: dict[str, torch.Tensor], device: torch.device,
        dtype: torch.dtype, ops: KernelOps,
    ) -> None:
        self.config = config
        self.device = device
        self.dtype = dtype
        self.ops = ops

        def w(name: str) -> torch.Tensor:
            for key in (name, f"model.{name}"):
                if key in weights:
                    tensor = weights[key]
                    expected = weight_shape(config, name)
                    if tuple(tensor.shape) != expected:
                        raise InputError(
                            f"weight {key} has shape {list(tensor.shape)} but config.json makes it "
                            f"{list(expected)}: the config does not describe these weights"
                        )
                    return tensor.to(device=device, dtype=dtype).contiguous()
            raise InputError(f"weight {name} is missing from the checkpoint")

        self.embed = w("embed_tokens.weight")
        self.layers: list[LayerWeights] = []
        for i in range(config.num_hidden_layers):
            p = f"layers.{i}."
            self.layers.append(
                LayerWeights(
                    input_norm=w(p + "input_layernorm.weight"),
                    qkv=torch.cat([w(p + f"self_attn.{n}_proj.weight") for n in "qkv"]).contiguous(),
                    o=w(p + "self_attn.o_proj.weight"),
                    post_norm=w(p + "post_attention_layernorm.weight"),
                    gate_up=torch.cat([w(p + f"mlp.{n}_proj.weight") for n in ("gate", "up")]).contiguous(),
                    down=w(p + "mlp.down_proj.weight"),
                )
            )
        self.norm = w("norm.weight")
        if "lm_head.weight" in weights and not config.tie_word_embeddings:
            self.lm_head = w("lm_head.weight")
        else:
            self.lm_head = self.embed
        self.cos, self.sin = rope_tables(config, device)
        self.scale = config.head_dim**-0.5
        c = config
        self._q = c.num_attention_heads * c.head_dim
        self._kv = c.num_key_value_heads * c.head_dim

    # ---- sizes -------------------------------------------------------------------------------
    def parameter_bytes(self) -> int:
        tensors: list[torch.Tensor] = [self.embed, self.norm]
        if self.lm_head is not self.embed:
            tensors.append(self.lm_head)
        for layer in self.layers:
            tensors += [layer.input_norm, layer.qkv, layer.o, layer.post_norm, layer.gate_up, layer.down]
        return sum(t.numel() * t.element_size() for t in tensors)

    def kv_bytes_per_token(self) -> int:
        c = self.config
        return 2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * torch.empty(
            (), dtype=self.dtype
        ).element_size()

    # ---- the plain reference -----------------------------------------------------------------
    @torch.inference_mode()
    def forward_dense(self, ids: list[int]) -> torch.Tensor:
        """Logits [len(ids), vocab] (float32) of one sequence: plain PyTorch, full causal attention."""
        c = self.config
        x = self.embed[torch.tensor(ids, device=self.device, dtype=torch.long)]
        n = x.shape[0]
        pos = torch.arange(n, device=self.device)
        cos, sin = self.cos[pos][:, None, :], self.sin[pos][:, None, :]

        def norm(h: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
            h32 = h.float()
            inv = torch.rsqrt(h32.pow(2).mean(-1, keepdim=True) + c.rms_norm_eps)
            return (h32 * inv * weight.float()).to(h.dtype)

        def rope(t: torch.Tensor) -> torch.Tensor:
            t32 = t.float()
            half = c.head_dim // 2
            rotated = torch.cat([-t32[..., half:], t32[..., :half]], dim=-1)
            return (t32 * torch.cat([cos, cos], -1) + rotated * torch.cat([sin, sin], -1)).to(t.dtype)

        group = c.num_attention_heads // c.num_key_value_heads
        for layer in self.layers:
            h = norm(x, layer.input_norm)
            q = (h @ layer.qkv[: self._q].T).view(n, c.num_attention_heads, c.head_dim)
            k = (h @ layer.qkv[self._q : self._q + self._kv].T).view(n, c.num_key_value_heads, c.head_dim)
            v = (h @ layer.qkv[self._q + self._kv :].T).view(n, c.num_key_value_heads, c.head_dim)
            q, k = rope(q), rope(k)
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
            attn = F.scaled_dot_product_attention(
                q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), is_causal=True, scale=self.scale
            ).transpose(0, 1)
            x = x + attn.reshape(n, self._q) @ layer.o.T
            h = norm(x, layer.post_norm)
            inter = layer.gate_up.shape[0] // 2
            x = x + (F.silu(h @ layer.gate_up[:inter].T) * (h @ layer.gate_up[inter:].T)) @ layer.down.T
        return (norm(x, self.norm) @ self.lm_head.T).float()

    # ---- the serving path --------------------------------------------------------------------
    def _layers(
        self, x: torch.Tensor, positions: torch.Tensor, kv: Any, slot_mapping: torch.Tensor, attend: Any
    ) -> torch.Tensor:
        c = self.config
        ops = self.ops
        n = x.shape[0]
        residual: torch.Tensor | None = None
        for i, layer in enumerate(self.layers):
            h, residual = ops.rms_norm(x, residual, layer.input_norm, c.rms_norm_eps)
            qkv = h @ layer.qkv.T
            q = qkv[:, : self._q].view(n, c.num_attention_heads, c.head_dim)
            k = qkv[:, self._q : self._q + self._kv].view(n, c.num_key_value_heads, c.head_dim)
            v = qkv[:, self._q + self._kv :].view(n, c.num_key_value_heads, c.head_dim)
            ops.rotary_embedding(q, k, positions, self.cos, self.sin)
            k_cache, v_cache = kv.layer(i)
            ops.write_kv_cache(k, v, k_cache, v_cache, slot_mapping)
            attn = attend(q, k, v, k_cache, v_cache)
            x = attn.reshape(n, self._q) @ layer.o.T
            h, residual = ops.rms_norm(x, residual, layer.post_norm, c.rms_norm_eps)
            x = ops.silu_and_mul(h @ layer.gate_up.T) @ layer.down.T
        out, _ = ops.rms_norm(x, residual, self.norm, c.rms_norm_eps)
        return out

    @torch.inference_mode()
    def prefill(self, seqs: list[list[int]], kv: Any, slot_mapping: torch.Tensor) -> torch.Tensor:
        """Packed prompts fill their KV slots; returns the logits [len(seqs), vocab] of their last tokens."""
        lens = [len(s) for s in seqs]
        flat = torch.tensor([t for s in seqs for t in s], device=self.device, dtype=torch.long)
        positions = torch.cat([torch.arange(n, device=self.device) for n in lens])
        cu = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32, device=self.device)
        max_len = max(lens)

        def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, _kc: Any, _vc: Any) -> torch.Tensor:
            if self.ops.name == "kernels":
                return self.ops.prefill_attention(q, k, v, cu, self.scale, max_len)  # type: ignore[no-any-return]
            return self.ops.prefill_attention(q, k, v, cu, self.scale)  # type: ignore[no-any-return]

        hidden = self._layers(self.embed[flat], positions, kv, slot_mapping, attend)
        last = (cu[1:] - 1).long()
        return (hidden[last] @ self.lm_head.T).float()

    @torch.inference_mode()
    def decode(
        self, tokens: list[int], positions: list[int], kv: Any, slot_mapping: torch.Tensor,
        block_tables: torch.Tensor, context_lens: torch.Tensor,
    ) -> torch.Tensor:
        """One new token per sequence against the paged cache; logits [len(tokens), vocab]."""
        ids = torch.tensor(tokens, device=self.device, dtype=torch.long)
        pos = torch.tensor(positions, device=self.device, dtype=torch.long)

        def attend(
            q: torch.Tensor, _k: Any, _v: Any, k_cache: torch.Tensor, v_cache: torch.Tensor
        ) -> torch.Tensor:
            if self.ops.name == "kernels":
                return self.ops.paged_attention_decode(  # type: ignore[no-any-return]
                    q, k_cache, v_cache, block_tables, context_lens, self.scale, check_bounds=False
                )
            return self.ops.paged_attention_decode(  # type: ignore[no-any-return]
                q, k_cache, v_cache, block_tables, context_lens, self.scale
            )

        hidden = self._layers(self.embed[ids], pos, kv, slot_mapping, attend)
        return (hidden @ self.lm_head.T).float()
