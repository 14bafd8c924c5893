"""The recompile rules' claims, measured: TCL501 (int attribute counters) and TCL502 (str arguments).

Each test compiles a fixture's code with backend="eager", calls it several times and counts the
recompiles Dynamo logs, for the flagged code (`fixtures/recompiles.py`) and for the fixes the
rules suggest (`fixtures/clean_a2_recompile_fixes.py`).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from compile_lint.versions import target_version
from fixture_support import FIXTURES, expected_codes

torch = pytest.importorskip("torch")

from compile_lint.confirm.run.capture import DynamoLog, capture_dynamo_log, forced_backend  # noqa: E402

pytestmark = pytest.mark.dynamo
FLAGGED = FIXTURES / "recompiles.py"
FIXED = FIXTURES / "clean_a2_recompile_fixes.py"


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"recompile_claims_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    with forced_backend("eager"):  # module-level torch.compile(...) calls too
        spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def flagged() -> ModuleType:
    return load(FLAGGED)


@pytest.fixture(scope="module")
def fixed() -> ModuleType:
    return load(FIXED)


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def run(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], **config: Any) -> DynamoLog:
    """Compile `fn` once and call it with each argument tuple; the Dynamo log of those calls."""
    with torch._dynamo.config.patch(**config), capture_dynamo_log() as log:
        compiled = torch.compile(fn, backend="eager")
        for args in calls:
            compiled(*args)
    assert not log.breaks, [b.gb_type for b in log.breaks]  # recompile risks never break the graph
    return log


def guards_on_flagged_lines(log: DynamoLog, code: str) -> bool:
    """Do the failing guards name only lines the rule flags (`# self.steps += 1  # ...recompiles.py:18`)?"""
    pattern = rf"{re.escape(FLAGGED.name)}:(\d+) in"
    guarded = {int(n) for text in log.recompiles for n in re.findall(pattern, text)}
    flagged = {line for line, codes in expected_codes(FLAGGED, target_version()).items() if code in codes}
    return bool(guarded) and guarded <= flagged


X = torch.randn(4, 8)
THREE_CALLS = [(X,)] * 3


# -- TCL501: int attributes of an nn.Module ------------------------------------------------------


def test_int_attribute_counter_recompiles_every_call(flagged: ModuleType) -> None:
    log = run(flagged.StepCounter(), THREE_CALLS)
    assert len(log.recompiles) == 2
    assert "self.steps == 0" in log.recompiles[0] and "self.steps == 1" in log.recompiles[1]
    assert guards_on_flagged_lines(log, "TCL501")


def test_class_level_int_counter_recompiles_every_call(flagged: ModuleType) -> None:
    log = run(flagged.CallTally(), THREE_CALLS)
    assert len(log.recompiles) == 2
    assert guards_on_flagged_lines(log, "TCL501")


def test_int_counter_hits_the_recompile_limit(flagged: ModuleType) -> None:
    log = run(flagged.StepCounter(), [(X,)] * 10)
    assert len(log.recompiles) == 8  # recompile_limit: the 10th call runs eagerly
    assert log.limit_hits


def test_buffer_counter_never_recompiles(fixed: ModuleType) -> None:
    module = fixed.BufferStepCounter()
    log = run(module, THREE_CALLS)
    assert log.recompiles == []
    assert int(module.steps) == 3  # the in-place update still counts


@pytest.mark.parametrize(("factory", "expected"), [("StepCounter", 1), ("CallTally", 2)])
def test_allow_unspec_int_makes_the_counter_dynamic(flagged: ModuleType, factory: str, expected: int) -> None:
    """The config fix: one recompile for an `__init__` attribute (two for a class attribute, whose first
    write moves it into the instance), then the int is dynamic and later calls reuse the graph."""
    log = run(getattr(flagged, factory)(), [(X,)] * 6, allow_unspec_int_on_nn_module=True)
    assert len(log.recompiles) == expected


def test_float_attribute_recompiles_once(fixed: ModuleType) -> None:
    """Why TCL501 is about ints: a float attribute becomes dynamic after one recompile."""
    log = run(fixed.RunningTotal(), [(X,)] * 6)
    assert len(log.recompiles) == 1


# -- TCL502: branching on a str argument ---------------------------------------------------------


def test_each_distinct_string_recompiles(flagged: ModuleType) -> None:
    log = run(flagged.head, [(X, "train"), (X, "eval"), (X, "test")])
    assert len(log.recompiles) == 2
    assert "mode == 'train'" in log.recompiles[0] and "mode == 'eval'" in log.recompiles[1]
    assert guards_on_flagged_lines(log, "TCL502")


def test_string_default_recompiles_on_a_new_value(flagged: ModuleType) -> None:
    pool = flagged.Pool()
    log = run(lambda x, r: pool(x, reduction=r), [(X, "mean"), (X, "sum"), (X, "max")])
    assert len(log.recompiles) == 2


def test_unannotated_argument_compared_with_strings_recompiles(flagged: ModuleType) -> None:
    log = run(flagged.activate, [(X, "abs"), (X, "relu"), (X, "tanh")])
    assert len(log.recompiles) == 2
    assert guards_on_flagged_lines(log, "TCL502")


def test_strings_never_become_dynamic(flagged: ModuleType) -> None:
    log = run(flagged.head, [(X, f"mode{i}") for i in range(10)])
    assert len(log.recompiles) == 8
    assert log.limit_hits


def test_the_same_string_does_not_recompile(flagged: ModuleType) -> None:
    assert run(flagged.head, [(X, "train")] * 3).recompiles == []


def test_bool_instead_of_string_compiles_at_most_twice(fixed: ModuleType) -> None:
    log = run(fixed.head, [(X, True), (X, False), (X, True), (X, False)])
    assert len(log.recompiles) == 1


def test_one_compiled_function_per_value_never_recompiles(fixed: ModuleType) -> None:
    with capture_dynamo_log() as log:
        for mode in ("train", "eval", "train", "eval"):
            fixed.run_head(X, mode)
    assert log.recompiles == [] and log.breaks == []


# -- TCL503: range() over an int parameter or a tensor size ----------------------------------------

TEN = range(1, 11)


def test_range_over_int_parameter_recompiles_per_value(flagged: ModuleType) -> None:
    log = run(flagged.Denoiser(), [(X, n) for n in TEN])
    assert len(log.recompiles) == 8 and log.limit_hits  # every new value, up to recompile_limit
    assert guards_on_flagged_lines(log, "TCL503") or "n_steps == 1" in log.recompiles[0]


def test_range_over_size_recompiles_per_size(flagged: ModuleType) -> None:
    log = run(flagged.rows_twice, [(torch.randn(n, 8),) for n in TEN])
    assert len(log.recompiles) == 8 and log.limit_hits  # automatic dynamic does not help a loop bound


def test_range_over_size_recompiles_per_size_with_dynamic_true(flagged: ModuleType) -> None:
    with capture_dynamo_log() as log:
        compiled = torch.compile(flagged.rows_twice, backend="eager", dynamic=True)
        for n in TEN:
            compiled(torch.randn(n, 8))
    assert len(log.recompiles) == 8


def test_sliced_int_parameter_recompiles_once(flagged: ModuleType) -> None:
    """Why TCL503 is about range(): the same int used as a slice bound or a factor becomes dynamic."""
    rows = torch.randn(12, 8)  # every bound within the rows: `x[:n]` never clamps
    log = run(flagged.first_rows, [(rows, n) for n in TEN])
    assert len(log.recompiles) == 1


# -- TCL504: int and str module attributes changed by a setter between calls ---------------------


def _setter_calls(module: Any, change: Callable[[Any, int], None]) -> DynamoLog:
    with capture_dynamo_log() as log:
        compiled = torch.compile(module, backend="eager")
        for n in TEN:
            change(module, n)
            compiled(X)
    assert not log.breaks
    return log


def test_int_attribute_setter_recompiles_per_value(flagged: ModuleType) -> None:
    log = _setter_calls(flagged.ScaledHead(), lambda m, n: m.set_scale(n + 1))
    assert len(log.recompiles) == 8 and log.limit_hits
    assert guards_on_flagged_lines(log, "TCL504") or "self.scale ==" in log.recompiles[0]


def test_str_attribute_setter_recompiles_per_value(flagged: ModuleType) -> None:
    log = _setter_calls(flagged.ScaledHead(), lambda m, n: m.use("sum" * n))
    assert len(log.recompiles) == 8 and log.limit_hits
