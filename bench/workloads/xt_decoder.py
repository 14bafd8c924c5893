"""x-transformers: a 2-layer decoder with rotary embeddings over 2 x 32 tokens (compiles whole)."""

from __future__ import annotations

from typing import Any

import torch
from x_transformers import Decoder, TransformerWrapper


def make() -> tuple[Any, ...]:
    torch.manual_seed(0)
    net = TransformerWrapper(
        num_tokens=256, max_seq_len=64, attn_layers=Decoder(dim=64, depth=2, heads=4, rotary_pos_emb=True)
    )
    return net.eval(), (torch.randint(0, 256, (2, 32)),)
