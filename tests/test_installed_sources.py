"""Bases and helpers imported from an installed package are read from its source, never imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from compile_lint.analysis import packages
from compile_lint.config import Config
from compile_lint.engine import build_project, lint

PACKAGE = {
    "__init__.py": "raise RuntimeError('compile-lint must not import this package')\n",
    "modeling.py": (
        "import torch\nfrom torch import nn\n\n\nclass PreTrained(nn.Module):\n    pass\n\n\n"
        "def scale_of(x):\n    return x.abs().max()\n"
    ),
}
MODEL = (
    "import torch\nfrom fakepkg.modeling import PreTrained, scale_of\n\n\nclass Model(PreTrained):\n"
    "    def forward(self, x):\n        s = scale_of(x)\n        if s > 1:\n            x = x / s\n        return x\n"
)


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    (site / "fakepkg").mkdir(parents=True)
    for name, text in PACKAGE.items():
        (site / "fakepkg" / name).write_text(text)
    monkeypatch.syspath_prepend(str(site))
    packages.installed_source.cache_clear()
    project = tmp_path / "project"
    project.mkdir()
    (project / "model.py").write_text(MODEL)
    yield project
    packages.installed_source.cache_clear()


def test_base_and_helper_from_an_installed_package(installed: Path) -> None:
    findings = lint([str(installed / "model.py")], Config(root=installed), use_cache=False).findings
    assert [(f.line, f.code) for f in findings] == [(8, "TCL103")]  # the helper returns a tensor
    project = build_project([str(installed / "model.py")], Config(root=installed))
    (root,) = project.root_list
    assert "derives from fakepkg.modeling.PreTrained, which derives from torch.nn.Module" in root.reason
