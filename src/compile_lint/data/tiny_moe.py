"""A small mixture-of-experts language model, written the way such models often are (compile-lint's demo)."""

import torch
import torch.nn.functional as F
from torch import nn


class Expert(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class MoE(nn.Module):
    def __init__(self, dim: int, n_experts: int, top_k: int = 2) -> None:
        super().__init__()
        self.router = nn.Linear(dim, n_experts)
        self.experts = nn.ModuleList(Expert(dim) for _ in range(n_experts))
        self.top_k = top_k
        self.balance = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, chosen = self.router(x).softmax(-1).topk(self.top_k, dim=-1)
        out = torch.zeros_like(x)
        for index, expert in enumerate(self.experts):
            token, slot = torch.where(chosen == index)
            if token.numel() == 0:
                continue
            out[token] += weights[token, slot, None] * expert(x[token])
        load = torch.bincount(chosen.flatten(), minlength=len(self.experts)).float()
        self.balance = (load.std() / load.mean()).item()
        return out


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, n_experts: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.moe = MoE(dim, n_experts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        b, t, d = x.shape
        return x + self.moe(self.norm2(x).reshape(b * t, d)).reshape(b, t, d)


class TinyMoE(nn.Module):
    def __init__(self, vocab: int = 256, dim: int = 64, depth: int = 2, heads: int = 4, n_experts: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, n_experts) for _ in range(depth))
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        if not torch.isfinite(x).all():
            print("non-finite activations")
        return self.head(x)


model = torch.compile(TinyMoE())


def make():
    """The model and its inputs, for `compile-lint --confirm --target tiny_moe.py:make`."""
    return (model, (torch.randint(0, 256, (2, 16)),))
