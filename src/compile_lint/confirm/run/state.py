"""Process-wide state a target can change and the next target would inherit (runs in the worker).

One worker runs many targets, so each starts from a snapshot: the state after the worker started,
or, for a module already imported, the state its import left (a module that sets
`torch.set_default_dtype` or a Dynamo flag at import keeps that for its own targets only).
"""

from __future__ import annotations

import os
import random
import sys
import warnings
from dataclasses import dataclass
from typing import Any

import torch
import torch._dynamo
import torch._inductor.config


@dataclass
class State:
    cwd: str
    path: list[str]
    environ: dict[str, str]
    default_dtype: torch.dtype
    default_device: Any  # torch.utils._device.DeviceContext or None
    grad_enabled: bool
    dynamo_config: dict[str, Any]
    inductor_config: dict[str, Any]
    torch_rng: torch.Tensor
    python_rng: Any
    threads: int
    deterministic: bool
    matmul_precision: str

    @classmethod
    def now(cls) -> State:
        return cls(
            cwd=os.getcwd(),
            path=list(sys.path),
            environ=dict(os.environ),
            default_dtype=torch.get_default_dtype(),
            default_device=_device_context(),
            grad_enabled=torch.is_grad_enabled(),
            dynamo_config=torch._dynamo.config.get_config_copy(),
            inductor_config=torch._inductor.config.get_config_copy(),
            torch_rng=torch.get_rng_state(),
            python_rng=random.getstate(),
            threads=torch.get_num_threads(),
            deterministic=torch.are_deterministic_algorithms_enabled(),
            matmul_precision=torch.get_float32_matmul_precision(),
        )

    def restore(self) -> None:
        os.chdir(self.cwd)
        sys.path[:] = self.path
        if dict(os.environ) != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        torch.set_default_dtype(self.default_dtype)
        if _device_context() is not self.default_device:
            torch.set_default_device(None)  # leaves the target's device context
            if self.default_device is not None:
                self.default_device.__enter__()
                torch._GLOBAL_DEVICE_CONTEXT.device_context = self.default_device
        torch.set_grad_enabled(self.grad_enabled)
        with warnings.catch_warnings():  # the copies include deprecated keys, which warn on load
            warnings.simplefilter("ignore")
            torch._dynamo.config.load_config(self.dynamo_config)
            torch._inductor.config.load_config(self.inductor_config)
        torch.set_rng_state(self.torch_rng)
        random.setstate(self.python_rng)
        if torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        torch.use_deterministic_algorithms(self.deterministic)
        torch.set_float32_matmul_precision(self.matmul_precision)


def _device_context() -> Any:
    return getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)


class CleanStates:
    """The state each target starts from: the worker's, or the one its module's import left."""

    def __init__(self) -> None:
        self.baseline = State.now()
        self.after_import: dict[str, State] = {}

    def before_import(self, module: str) -> None:
        self.after_import.get(module, self.baseline).restore()

    def imported(self, module: str) -> None:
        """Call once `module` is imported: its targets (now and later) start from this state."""
        self.after_import.setdefault(module, State.now())

    def forget(self, module: str) -> None:
        """The module is imported afresh next time (a fix check loads other code under its name)."""
        self.after_import.pop(module, None)
