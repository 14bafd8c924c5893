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


NAMESPACE_CALLER = (
    "import torch\nimport nspkg.sub.mod\nimport nspkg.gone.mod\n\n\n@torch.compile\ndef f(x):\n"
    "    s = nspkg.sub.mod.scale_of(x)\n    if s > 1:\n        x = x / s\n    return nspkg.gone.mod.g(x)\n"
)


def test_namespace_portion_inside_a_regular_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`nspkg/sub/` has no `__init__.py` inside a regular `nspkg` (opencv's `cv2/dnn`): importlib's finder
    raised KeyError: 'nspkg' for it and killed the run. The helper is now followed, and a module that is not
    there is simply not followed."""
    site = tmp_path / "site"
    (site / "nspkg" / "sub").mkdir(parents=True)
    (site / "nspkg" / "__init__.py").write_text("")
    (site / "nspkg" / "sub" / "mod.py").write_text("def scale_of(x):\n    return x.abs().max()\n")
    monkeypatch.syspath_prepend(str(site))
    packages.installed_source.cache_clear()
    (tmp_path / "model.py").write_text(NAMESPACE_CALLER)
    try:
        findings = lint([str(tmp_path / "model.py")], Config(root=tmp_path), use_cache=False).findings
    finally:
        packages.installed_source.cache_clear()
    assert [(f.line, f.code) for f in findings] == [(9, "TCL103")]  # the helper's tensor was followed
