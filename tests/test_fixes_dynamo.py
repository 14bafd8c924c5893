"""Every codemod, proven under real Dynamo: each fixture in fixtures/fixes is fixed, then the fixed
code must compile (backend="eager") with no graph break in the fixed file, where the original broke,
and give the original's outputs on inputs that take each branch."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fixture_support import FIXTURES

torch = pytest.importorskip("torch")

from compile_lint.config import Config  # noqa: E402
from compile_lint.confirm.run.capture import Break, capture_dynamo_log, forced_backend  # noqa: E402
from compile_lint.engine import lint_source  # noqa: E402
from compile_lint.fixes.codemods import CODEMODS  # noqa: E402
from compile_lint.fixes.runner import plan_fixes  # noqa: E402

FIX_FIXTURES = sorted((FIXTURES / "fixes").glob("_*.py"))


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with forced_backend("eager"):
        spec.loader.exec_module(module)
    return module


def plain(module: ModuleType, name: str) -> Callable[..., Any]:
    """The function itself, unwrapped if `@torch.compile` decorated it: runs eagerly."""
    fn = getattr(module, name)
    return getattr(fn, "_torchdynamo_orig_callable", fn)  # type: ignore[no-any-return]


def breaks_in(path: Path, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, list[Break]]:
    torch._dynamo.reset()
    with capture_dynamo_log() as log:
        out = torch.compile(fn, backend="eager")(*args)
    mine = [b for b in log.breaks if b.innermost(lambda f: Path(f).resolve() == path.resolve())]
    return out, mine


def code_run(path: Path, fn: Callable[..., Any], args: tuple[Any, ...]) -> frozenset[tuple[str, int]]:
    """Bytecode offsets of `path` run by `fn(*args)` eagerly: tells which branch was taken, even
    within one line (a conditional expression)."""
    seen: set[tuple[str, int]] = set()
    target = str(path.resolve())

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != target:
            return None
        frame.f_trace_opcodes = True
        if event == "opcode":
            seen.add((frame.f_code.co_qualname, frame.f_lasti))
        return tracer

    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
    return frozenset(seen)


def as_tensors(value: Any) -> Any:
    """Python bools/numbers as 0-d tensors: the TCL104 fix turns `not t` into a bool tensor (which
    is why it is unsafe), so its outputs are compared by value."""
    if isinstance(value, (bool, int, float)):
        return torch.as_tensor(value)
    if isinstance(value, tuple):
        return tuple(as_tensors(v) for v in value)
    return value


@pytest.fixture(autouse=True)
def no_debugger(monkeypatch: pytest.MonkeyPatch) -> None:
    """`breakpoint()` in a fixture must not stop the test run."""
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")


@pytest.fixture(params=FIX_FIXTURES, ids=lambda p: p.stem)
def fixed_pair(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path, str, set[str]]:
    original = request.param
    copy = tmp_path / f"fixed{original.name}"
    shutil.copyfile(original, copy)
    plan = plan_fixes([str(copy)], Config(root=tmp_path), {"safe", "unsafe"})
    assert len(plan.files) == 1 and not plan.errors
    fixed_text = plan.files[0].text
    copy.write_text(fixed_text, encoding="utf-8")
    return original, copy, fixed_text, {edit.finding.code for edit in plan.files[0].applied}


@pytest.mark.dynamo
def test_fixed_code_compiles_without_breaks_and_matches(fixed_pair: tuple[Path, Path, str, set[str]]) -> None:
    original_path, fixed_path, fixed_text, codes = fixed_pair
    left = [f for f in lint_source(fixed_text, str(fixed_path)) if f.code in CODEMODS]
    assert not left, f"fixable findings left after fixing: {left}"
    stem = original_path.stem
    original = load(original_path, f"fixes_original{stem}")
    fixed = load(fixed_path, f"fixes_fixed{stem}")
    torch.manual_seed(0)
    for name, inputs in original.branch_inputs().items():
        paths_taken = set()
        for args in inputs:
            reference = plain(original, name)(*args)
            if "TCL104" in codes:
                reference = as_tensors(reference)
            _, original_breaks = breaks_in(original_path, plain(original, name), args)
            assert original_breaks, f"{name}: the original does not break, so the fix proves nothing"
            compiled_out, fixed_breaks = breaks_in(fixed_path, plain(fixed, name), args)
            assert not fixed_breaks, f"{name}: fixed code still breaks: {fixed_breaks}"
            torch.testing.assert_close(compiled_out, reference)
            torch.testing.assert_close(plain(fixed, name)(*args), reference)
            paths_taken.add(code_run(original_path, plain(original, name), args))
        if "TCL103" in codes:  # a branch was rewritten: the inputs must have taken both sides
            assert len(paths_taken) >= 2, f"{name}: the inputs do not take both branches"


@pytest.mark.dynamo
def test_detach_fix_keeps_gradients(tmp_path: Path) -> None:
    """The safe `.item()` -> `.detach()` rewrite must not let gradients flow through the scale."""
    source = FIXTURES / "fixes" / "_detach_item.py"
    copy = tmp_path / "fixed_detach.py"
    shutil.copyfile(source, copy)
    plan = plan_fixes([str(copy)], Config(root=tmp_path), {"safe"})
    safe_lines = {e.finding.line for e in plan.files[0].applied}
    assert safe_lines == {8, 12}, "normalize and center are the safe ones; scale_by mixes two tensors"
    copy.write_text(plan.files[0].text, encoding="utf-8")
    original, fixed = load(source, "grad_original"), load(copy, "grad_fixed")
    for name in ("normalize", "center"):
        x = torch.randn(4, 8, requires_grad=True)
        x_fixed = x.detach().clone().requires_grad_(True)
        plain(original, name)(x).square().sum().backward()
        torch.compile(plain(fixed, name), backend="eager")(x_fixed).square().sum().backward()
        torch.testing.assert_close(x_fixed.grad, x.grad)


def test_guarded_print_still_prints_eagerly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = FIXTURES / "fixes" / "_guard_print.py"
    copy = tmp_path / "fixed_print.py"
    shutil.copyfile(source, copy)
    plan = plan_fixes([str(copy)], Config(root=tmp_path), {"safe", "unsafe"})
    codes = sorted(e.finding.code for e in plan.files[0].applied)
    assert codes == ["TCL201", "TCL201", "TCL202", "TCL204", "TCL204", "TCL205"]
    copy.write_text(plan.files[0].text, encoding="utf-8")
    load(copy, "print_fixed").noisy(torch.ones(2, 2))
    assert "relu done" in capsys.readouterr().out


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int32", "int64", "uint8"])
@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
@pytest.mark.parametrize(
    ("op", "reduce"), [("/", "abs().max"), ("*", "max"), ("+", "min"), ("-", "amax"), ("/", "mean"), ("*", "std")]
)
def test_safe_detach_rewrite_is_bitwise_identical(dtype: str, shape: tuple[int, ...], op: str, reduce: str) -> None:
    """What makes the `.item()` -> `.detach()` rewrite "safe": same dtype and bit-identical values
    (or the same error) for every dtype, including 0-d inputs, where a 0-d tensor could promote."""
    torch.manual_seed(0)
    x = (torch.randn(shape) * 50).to(getattr(torch, dtype))
    results = []
    for read in ("item", "detach"):
        try:
            results.append(eval(f"x {op} x.{reduce}().{read}()", {"x": x}))
        except RuntimeError as error:  # e.g. mean/std of an integer tensor: must fail both ways
            results.append(type(error))
    item, detached = results
    if isinstance(item, torch.Tensor):
        assert isinstance(detached, torch.Tensor) and detached.dtype == item.dtype
        assert torch.equal(detached, item) or (item.isnan().all() and detached.isnan().all())
    else:
        assert item == detached
