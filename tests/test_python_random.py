"""TCL301's claims about Python's `random` module, proven under the installed torch with the default
backend (inductor), as users run it: a call it flags with a GB code breaks and draws what eager
draws; a call it flags without one is traced without a break but gives other results than eager
(`uniform`, and from torch 2.14 on `random`, `shuffle`, `sample`, `seed`); a call it leaves alone
(`randint`) is traced and draws what eager draws."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

from compile_lint import versions  # noqa: E402
from compile_lint.confirm.run.capture import capture_dynamo_log  # noqa: E402
from compile_lint.engine import lint_source  # noqa: E402

INSTALLED = versions.parse(torch.__version__)
BODIES = {
    "random": "return x * random.random()",
    "shuffle": "order = [0, 1, 2, 3, 4, 5, 6, 7]\n    random.shuffle(order)\n    return x * order[0]",
    "sample": "return x * random.sample(range(100), 1)[0]",
    "seed": "random.seed(0)\n    return x * random.random()",
    "gauss": "return x * random.gauss(0.0, 1.0)",
    "uniform": "return x * random.uniform(0.0, 1.0)",
    "randint": "return x * random.randint(1, 1000)",
}


def module_of(tmp_path: Path, name: str) -> tuple[Path, ModuleType]:
    path = tmp_path / f"draw_{name}.py"
    path.write_text(f"import random\n\nimport torch\n\n\n@torch.compile\ndef draw(x):\n    {BODIES[name]}\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def runs(fn: object, calls: int = 3) -> tuple[list[float], float]:
    """The values of `calls` calls after seeding, and the next draw of the global RNG."""
    random.seed(5)
    values = [fn(torch.ones(1)).item() for _ in range(calls)]  # type: ignore[operator]
    return values, random.random()


@pytest.mark.dynamo
@pytest.mark.skipif(INSTALLED not in versions.KNOWN, reason=f"no claims for torch {torch.__version__}")
@pytest.mark.parametrize("name", sorted(BODIES))
def test_tcl301_tells_breaks_divergent_draws_and_faithful_draws_apart(tmp_path: Path, name: str) -> None:
    path, module = module_of(tmp_path, name)
    findings = [f for f in lint_source(path.read_text(), str(path), torch_version=INSTALLED) if f.code == "TCL301"]
    torch._dynamo.reset()
    try:
        with capture_dynamo_log() as log:
            compiled = runs(module.draw)
    finally:
        torch._dynamo.reset()
    eager = runs(module.draw.__wrapped__)
    codes = {brk.gb_code for brk in log.breaks}
    if not findings:
        assert not codes and compiled == eager
    elif findings[0].gb_codes:
        assert codes == set(findings[0].gb_codes) and compiled == eager
    else:
        assert not codes and compiled != eager, "TCL301 claims this draw differs from eager"
