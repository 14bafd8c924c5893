"""PyTorch Geometric: a 2-layer GCN on a random graph of 20 nodes and 60 edges (breaks in the library)."""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.nn.models import GCN


def make() -> tuple[Any, ...]:
    torch.manual_seed(0)
    net = GCN(in_channels=16, hidden_channels=32, num_layers=2, out_channels=4)
    return net.eval(), (torch.randn(20, 16), torch.randint(0, 20, (2, 60)))
