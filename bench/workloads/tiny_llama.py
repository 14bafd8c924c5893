"""transformers: a one-layer Llama causal LM built from its config (random weights) over 1 x 8 tokens,
with its `DynamicCache` (`use_cache` defaults to True)."""

from __future__ import annotations

from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def make() -> tuple[Any, ...]:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(config).eval(), (torch.randint(0, 64, (1, 8)),)
