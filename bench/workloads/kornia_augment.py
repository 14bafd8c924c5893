"""kornia: an augmentation pipeline (color jitter, random affine, flip) on 2 images (breaks in the library)."""

from __future__ import annotations

from typing import Any

import kornia.augmentation as K
import torch


def make() -> tuple[Any, ...]:
    torch.manual_seed(0)
    pipeline = K.AugmentationSequential(
        K.ColorJiggle(0.1, 0.1, 0.1, 0.1, p=1.0),
        K.RandomAffine(degrees=15.0, translate=(0.1, 0.1), p=1.0),
        K.RandomHorizontalFlip(p=0.5),
    )
    return pipeline, (torch.rand(2, 3, 32, 32),)
