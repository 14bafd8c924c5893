"""Automatic inputs for compiled regions nobody wrote a factory for (runs in the worker).

Functions get small random tensors for their required parameters; nn.Module subclasses are built
with their defaults and fed a tensor shaped for their first layer. Each input also has a source
recipe (`torch.randn(4, 8)`) so `--repro-dir` scripts can rebuild it without compile-lint.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from compile_lint.confirm import GIVE_INPUTS as HOW
from compile_lint.confirm.run.targets import Target

TENSOR_NAMES = ("Tensor", "torch.Tensor")
CONV_SPATIAL = {nn.Conv1d: (16,), nn.Conv2d: (16, 16), nn.Conv3d: (8, 8, 8)}


class NoInputs(Exception):
    """compile-lint cannot make inputs for this region; the message says how to provide them."""


@dataclass(frozen=True)
class TensorRecipe:
    """How to build one input tensor; `source` is the same thing as Python code."""

    dims: tuple[int, ...]
    high: int = 0  # > 0: integer indices in [0, high), e.g. for nn.Embedding

    def make(self) -> torch.Tensor:
        if self.high:
            return torch.randint(0, self.high, self.dims)
        return torch.randn(*self.dims)

    @property
    def source(self) -> str:
        dims = ", ".join(map(str, self.dims))
        return f"torch.randint(0, {self.high}, ({dims},))" if self.high else f"torch.randn({dims})"


@dataclass
class Made:
    target: Target
    setup: str  # Python source that builds `fn` from the imported module `mod`
    args: list[str] = field(default_factory=list)  # argument sources
    kwargs: dict[str, str] = field(default_factory=dict)


def unwrapped(fn: Any) -> Any:
    """The user's own callable behind a torch.compile wrapper."""
    inner = getattr(fn, "_torchdynamo_orig_callable", None) or getattr(fn, "_orig_mod", None)
    return inner if inner is not None else fn


def function_target(module: Any, qualname: str, shape: list[int]) -> Made:
    fn = getattr(module, qualname, None)
    if not callable(fn):
        raise NoInputs(f"`{qualname}` is not a module-level callable after import; {HOW}")
    made = Made(Target(fn, ()), setup=f"fn = mod.{qualname}")
    _fill(made, inspect.signature(unwrapped(fn)), TensorRecipe(tuple(shape)), qualname)
    return made


def module_target(module: Any, class_name: str, shape: list[int]) -> Made:
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise NoInputs(f"`{class_name}` is not a module-level nn.Module subclass; {HOW}")
    try:
        model = cls()
    except Exception as error:
        raise NoInputs(f"`{class_name}()` failed ({type(error).__name__}: {error}); {HOW}") from None
    made = Made(Target(model, ()), setup=f"fn = mod.{class_name}()")
    _fill(made, inspect.signature(model.forward), first_layer_input(model, shape), f"{class_name}.forward")
    return made


def first_layer_input(model: nn.Module, shape: list[int]) -> TensorRecipe:
    """A batch for the first layer that says what it wants; the default shape when none does."""
    batch = shape[0]
    for layer in model.modules():
        if isinstance(layer, nn.Linear):
            return TensorRecipe((batch, layer.in_features))
        if isinstance(layer, nn.Embedding):
            return TensorRecipe((batch, shape[-1]), high=layer.num_embeddings)
        for conv, spatial in CONV_SPATIAL.items():
            if type(layer) is conv:
                return TensorRecipe((batch, layer.in_channels, *spatial))
        if isinstance(layer, nn.LayerNorm):
            return TensorRecipe((batch, *layer.normalized_shape))
    return TensorRecipe(tuple(shape))


def _fill(made: Made, signature: inspect.Signature, tensor: TensorRecipe, where: str) -> None:
    """Required parameters get the tensor, optional ones None; anything else needs the user."""
    args: list[Any] = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.default is not param.empty:
            continue
        if _optional(param.annotation):
            value, source = None, "None"
        elif _tensor_like(param.annotation):
            value, source = tensor.make(), tensor.source
        else:
            raise NoInputs(
                f"parameter `{param.name}` of {where} is annotated `{param.annotation}`, not a tensor; {HOW}"
            )
        if param.kind is param.KEYWORD_ONLY:
            made.target.kwargs[param.name] = value
            made.kwargs[param.name] = source
        else:
            args.append(value)
            made.args.append(source)
    made.target.args = tuple(args)


def _tensor_like(annotation: Any) -> bool:
    if annotation is inspect.Parameter.empty or annotation is torch.Tensor:
        return True
    return isinstance(annotation, str) and annotation.strip() in TENSOR_NAMES


def _optional(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return "Optional[" in annotation or "None" in (part.strip() for part in annotation.split("|"))
    return type(None) in typing.get_args(annotation)


def parameter_names(fn: Any) -> list[str]:
    """Names of the parameters a target is called with (`forward`'s for a module)."""
    inner = unwrapped(fn)
    inner = inner.forward if isinstance(inner, nn.Module) else inner
    try:
        return list(inspect.signature(inner).parameters)
    except (TypeError, ValueError):  # builtins and C callables may have no signature
        return []


def code_identity(fn: Callable[..., Any]) -> tuple[str, str] | None:
    """(file, qualname) of the code a target runs first, so explicit targets can cover regions."""
    inner = unwrapped(fn)
    if isinstance(inner, nn.Module):
        inner = type(inner).forward
    inner = getattr(inner, "__func__", inner)
    code = getattr(inner, "__code__", None)
    return (code.co_filename, code.co_qualname) if code is not None else None
