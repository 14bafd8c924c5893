"""MONAI: a 2-D BasicUNet on one 32 x 32 image (breaks in the library)."""

from __future__ import annotations

from typing import Any

import torch
from monai.networks.nets.basic_unet import BasicUNet


def make() -> tuple[Any, ...]:
    torch.manual_seed(0)
    net = BasicUNet(spatial_dims=2, in_channels=1, out_channels=2, features=(8, 8, 16, 32, 64, 8))
    return net.eval(), (torch.randn(1, 1, 32, 32),)
