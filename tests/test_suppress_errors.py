"""TCL901's claims, proven on torch 2.13: `suppress_errors` hides a real compile failure, and the
`TORCHDYNAMO_SUPPRESS_ERRORS` environment variable turns it on even when set to "0"."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")


def broken_backend(gm: object, example_inputs: object) -> object:
    raise RuntimeError("a compiler bug")


def step(x: Any) -> Any:
    return x.sin() + 1


@pytest.fixture
def suppressed() -> Iterator[None]:
    torch._dynamo.reset()
    with torch._dynamo.config.patch(suppress_errors=True):
        yield
    torch._dynamo.reset()


@pytest.mark.dynamo
def test_compile_failure_raises_by_default() -> None:
    torch._dynamo.reset()
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed):
        torch.compile(step, backend=broken_backend)(torch.randn(3))


@pytest.mark.dynamo
@pytest.mark.usefixtures("suppressed")
def test_suppress_errors_runs_eagerly_without_a_word() -> None:
    x = torch.randn(3)
    assert torch.equal(torch.compile(step, backend=broken_backend)(x), step(x))


@pytest.mark.dynamo
def test_environment_variable_set_to_zero_turns_it_on() -> None:
    env = {**os.environ, "TORCHDYNAMO_SUPPRESS_ERRORS": "0"}
    script = "import torch._dynamo; print(torch._dynamo.config.suppress_errors)"
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
