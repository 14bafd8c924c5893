"""Every finding's path condition (when its line runs) is what the fixture line says: `# path: training`,
`# path: loss`, ...; lines without a marker run on the default path. Also checked: `--mode`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compile_lint.config import Config
from compile_lint.engine import lint
from fixture_support import FIXTURES, ROOT, fixture_files, lint_unit

PATH = re.compile(r"#\s*path:\s*(?P<condition>[a-z-]+)")


def markers(path: Path) -> dict[int, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {n: m.group("condition") for n, line in enumerate(lines, start=1) if (m := PATH.search(line))}


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_findings_carry_the_path_condition_of_their_line(path: Path) -> None:
    config = Config(root=ROOT, half_precision=True)
    findings = lint([str(p) for p in lint_unit(path)], config, use_cache=False).findings
    expected = markers(path)
    seen = {f.line: f.path_condition for f in findings if f.path == str(path)}
    assert seen == {line: expected.get(line, "default") for line in seen}
    assert set(expected) <= set(seen), "a `# path:` marker on a line without a finding"


def test_half_precision_findings_need_the_setting() -> None:
    """Weights are float32 by default: a break behind `x.dtype == torch.float16` is reported only for a project
    that says it runs half precision."""
    fixture = FIXTURES / "default_path_noise.py"
    half_lines = {line for line, condition in markers(fixture).items() if condition == "half-precision"}
    default = lint([str(fixture)], Config(root=ROOT), use_cache=False).findings
    half = lint([str(fixture)], Config(root=ROOT, half_precision=True), use_cache=False).findings
    assert half_lines and half_lines <= {f.line for f in half}
    assert {(f.line, f.code) for f in default} == {(f.line, f.code) for f in half if f.line not in half_lines}


def test_inference_mode_drops_training_only_findings() -> None:
    fixture = FIXTURES / "semantic_paths.py"
    everything = lint([str(fixture)], Config(root=ROOT), use_cache=False).findings
    inference = lint([str(fixture)], Config(root=ROOT, mode="inference"), use_cache=False).findings
    training_lines = {line for line, condition in markers(fixture).items() if condition == "training"}
    assert training_lines and training_lines <= {f.line for f in everything}
    assert {(f.line, f.code) for f in inference} == {
        (f.line, f.code) for f in everything if f.line not in training_lines
    }


def test_training_mode_takes_the_training_branch_only(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        if self.training:\n            print('train')\n        else:\n            print('eval')\n"
        "        return x\n"
    )
    lines = {mode: {f.line for f in lint([str(source)], Config(root=tmp_path, mode=mode), use_cache=False).findings}
             for mode in ("all", "inference", "training")}  # fmt: skip
    assert lines == {"all": {8, 10}, "inference": {10}, "training": {8}}


def test_default_path_findings_sort_first() -> None:
    findings = lint([str(FIXTURES / "semantic_paths.py")], Config(root=ROOT), use_cache=False).findings
    conditions = [f.path_condition == "default" for f in findings]
    assert conditions == sorted(conditions, reverse=True) and conditions.count(True) >= 1
