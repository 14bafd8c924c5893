"""A user's own model around PyTorch Geometric layers, with the kind of code that breaks graphs:
`--confirm` confirms the findings in this file and checks their fixes."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch_geometric.nn import GATv2Conv, global_mean_pool


class GraphClassifier(nn.Module):
    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 3) -> None:
        super().__init__()
        self.conv1 = GATv2Conv(features, hidden, heads=2, concat=False)
        self.conv2 = GATv2Conv(hidden, hidden, heads=2, concat=False)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor) -> torch.Tensor:
        x = self.conv1(x, edge_index).relu()
        if x.abs().max().item() > 100.0:  # rescale exploding activations
            x = x / 100.0
        x = self.conv2(x, edge_index).relu()
        print("pooled over", batch.shape[0], "nodes")
        return self.head(global_mean_pool(x, batch))


def make() -> tuple[Any, ...]:
    torch.manual_seed(0)
    x, edge_index = torch.randn(20, 16), torch.randint(0, 20, (2, 60))
    batch = torch.cat([torch.zeros(10, dtype=torch.long), torch.ones(10, dtype=torch.long)])
    return GraphClassifier().eval(), (x, edge_index, batch)
