"""TCL601's claim, proven: numpy called on a tensor compiles without a break but computes something
other than eager (torch 2.13). Uses the functions of `fixtures/numpy_and_config.py`."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from fixture_support import FIXTURES

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")


@pytest.fixture(scope="module")
def fixture() -> ModuleType:
    spec = importlib.util.spec_from_file_location("numpy_and_config_fixture", FIXTURES / "numpy_and_config.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compiled(fn):  # type: ignore[no-untyped-def]
    torch._dynamo.reset()
    return torch.compile(fn, backend="eager")


@pytest.mark.dynamo
def test_numpy_reduction_on_tensor_fails_eagerly_but_compiles(fixture: ModuleType) -> None:
    x = torch.randn(4, 3)
    with pytest.raises(TypeError, match="axis"):
        fixture.numpy_reduction(x)
    result = compiled(fixture.numpy_reduction)(x)
    assert isinstance(result, np.ndarray)
    assert result == pytest.approx(x.sum().item(), rel=1e-5)


@pytest.mark.dynamo
def test_numpy_ufunc_on_tensor_changes_type_when_compiled(fixture: ModuleType) -> None:
    x = torch.randn(4, 3)
    eager = fixture.numpy_ufunc(x)
    result = compiled(fixture.numpy_ufunc)(x)
    assert isinstance(eager, torch.Tensor)
    assert isinstance(result, np.ndarray)
    assert np.allclose(result, eager.numpy(), atol=1e-6)  # same numbers, different type


@pytest.mark.dynamo
def test_explicit_conversion_agrees(fixture: ModuleType) -> None:
    x = torch.randn(4, 3)
    eager = fixture.numpy_on_copies(x)
    result = compiled(fixture.numpy_on_copies)(x)
    assert type(result) is type(eager)
    assert np.allclose(result, eager, atol=1e-6)
