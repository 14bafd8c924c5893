"""`--show-regions` lists each region, why it is one, and how every other reached function is reached."""

from __future__ import annotations

import pytest

from compile_lint.cli import main
from fixture_support import FIXTURES


def test_show_regions_names_every_way_in(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    paths = [FIXTURES / "semantic_regions", FIXTURES / "semantic_inherit.py", FIXTURES / "semantic_paths.py"]
    assert main(["--show-regions", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    lines = {line.split("  ", 1)[0].rsplit(":", 1)[-1]: line for line in out.splitlines() if "  " in line}
    assert "registered with register_forward_hook" in lines["report_hook"]
    assert "setattr (__setattr__)" in lines["Tracked.__setattr__"]
    assert "(decorator)" in lines["logged"] and "nested wrapper functions only" in lines["logged"]
    assert "via ATTENTION[self.kind]" in lines["eager_attention"]
    assert (
        "derives from semantic_lib._base.PreTrainedBase, which derives from torch.nn.Module" in lines["Model.forward"]
    )
    assert "is assumed to be one: its base `DynamicBase` could not be read" in lines["Assumed.forward"]
    assert "[only when: training]" in lines["Head._noise"]
    assert "class decorator `kernel_forward` may replace it" in lines["Norm.forward"]


def test_excluded_regions_are_not_regions(capsys: pytest.CaptureFixture[str], tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint]\nexclude-regions = ["Assumed"]\n')
    (tmp_path / "m.py").write_text(
        "import torch\nBase = type('Base', (object,), {})\n\n\nclass Assumed(Base):\n    def forward(self, x):\n"
        "        print(x)\n        return x\n"
    )
    assert main(["m.py"]) == 0
    assert "All clear" in capsys.readouterr().out
