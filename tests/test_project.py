"""Regions across files: what is reached, how it is described, and where capture flags hold."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from compile_lint.analysis.index import FileIndex
from compile_lint.analysis.program import Program
from compile_lint.config import Config
from compile_lint.engine import lint, parse_source
from compile_lint.finding import Finding
from fixture_support import FIXTURES, ROOT

ITEM_IN_REGION = "import torch\n\n@torch.compile\ndef f(x):\n    return x * x.sum().item()\n"
SETS_CAPTURE = "import torch\n\ntorch._dynamo.config.capture_scalar_outputs = True\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def codes(root: Path) -> dict[str, list[str]]:
    result = lint([str(root)], Config(root=root), use_cache=False)
    found: dict[str, list[str]] = {}
    for finding in result.findings:
        found.setdefault(Path(finding.path).relative_to(root).as_posix(), []).append(finding.code)
    return found


def test_capture_flag_covers_its_folder_and_below_only(tmp_path: Path) -> None:
    write(tmp_path / "app" / "train.py", SETS_CAPTURE)
    write(tmp_path / "app" / "model" / "net.py", ITEM_IN_REGION)
    write(tmp_path / "other" / "net.py", ITEM_IN_REGION)
    assert codes(tmp_path) == {"other/net.py": ["TCL101"]}


def test_helpers_reached_through_self_imports_and_module_attributes(tmp_path: Path) -> None:
    write(
        tmp_path / "pkg" / "model.py",
        "import torch\nfrom torch import nn\nfrom pkg.util import scale\nimport pkg.more as more\n\n"
        "class Base(nn.Module):\n    def _norm(self, x):\n        print(x)\n        return x\n\n"
        "class Net(Base):\n    def forward(self, x):\n        return more.shift(scale(self._norm(x)))\n",
    )
    write(tmp_path / "pkg" / "__init__.py", "")
    write(
        tmp_path / "pkg" / "util.py", "def scale(x):\n    return x * x.max().item()\n\ndef unused(x):\n    print(x)\n"
    )
    write(tmp_path / "pkg" / "more.py", "def shift(x):\n    print('shift')\n    return x\n")
    result = lint([str(tmp_path)], Config(root=tmp_path), use_cache=False)
    messages = {(Path(f.path).name, f.code): f.message for f in result.findings}
    assert set(messages) == {("model.py", "TCL201"), ("util.py", "TCL101"), ("more.py", "TCL201")}
    assert messages["util.py", "TCL101"].endswith("(reached from Net.forward via scale)")
    assert messages["more.py", "TCL201"].endswith("(reached from Net.forward via more.shift)")
    assert messages["model.py", "TCL201"].endswith("(reached from Net.forward via self._norm)")


def test_is_compiling_guard_and_disabled_helpers_are_not_regions(tmp_path: Path) -> None:
    write(
        tmp_path / "m.py",
        "import torch\n\n@torch.compiler.disable\ndef log(x):\n    print(x)\n\n"
        "@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print(x)\n"
        "    if torch._dynamo.is_compiling():\n        y = x\n    else:\n        y = x.sum().item()\n"
        "    log(x)\n    return y\n",
    )
    result = lint([str(tmp_path)], Config(root=tmp_path), use_cache=False)
    assert [(f.code, f.line, f.severity) for f in result.findings] == [("TCL302", 15, "info")]


def test_self_calls_resolve_in_the_callers_own_class_when_names_repeat(tmp_path: Path) -> None:
    module = (
        "import torch\nfrom torch import nn\n\nclass Gate(nn.Module):\n    def forward(self, x):\n"
        "        return self._route(x)\n\n    def _route(self, x):\n        {body}\n        return x\n"
    )
    write(tmp_path / "a.py", module.format(body="print(x)"))
    write(tmp_path / "b.py", module.format(body="y = x.sum().item()"))
    assert codes(tmp_path) == {"a.py": ["TCL201"], "b.py": ["TCL101"]}


def test_wrappers_of_decorators_from_files_not_linted_are_reported_where_applied() -> None:
    """Linting one model file: the decorators come from the package's utils (not linted), and what their
    wrappers do on every call (a context variable, logging, a lock; a dispatch to another implementation)
    is reported at the decorator, naming the wrapper's line."""
    model = FIXTURES / "decorators_pkg" / "models" / "model.py"
    findings = lint([str(model)], Config(root=ROOT), use_cache=False).findings
    assert [(f.line, f.code) for f in findings] == [(11, "TCL101"), (19, "TCL312"), (29, "TCL204"), (39, "TCL704")]
    assert all(f.path == str(model) for f in findings)
    assert "(generic.py:37)" in findings[2].message


def test_decorators_that_return_what_they_are_given_are_no_wrappers() -> None:
    """`@documented` (a docstring generator, bare or with arguments) and `@registered("name")` hand back the
    function itself: their code ran at import, so nothing of theirs is reported where they are applied."""
    model = FIXTURES / "decorators_pkg" / "models" / "documented.py"
    findings = lint([str(model)], Config(root=ROOT), use_cache=False).findings
    assert [(f.line, f.code) for f in findings] == [(38, "TCL101")]


ATTRIBUTES = """import torch
from torch import nn


class Base(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.scale = kwargs.get("scale", 1)

    def setup_cache(self):
        self.cache = {}

    def load(self):
        self.loaded = True


class Net(Base):
    def __init__(self):
        super().__init__(scale=torch.ones(1))

    def forward(self, x):
        if self.scale.sum() > 0:
            return x
        return x * 2
"""


def test_an_attribute_lookup_walks_only_the_methods_that_may_assign_it(tmp_path: Path) -> None:
    """`self.scale` walks the classes' `__init__`s (the one that writes it, and the one forwarding to it), not
    `setup_cache` or `load`: a base class with many such methods (transformers' PreTrainedModel) was walked
    whole on a model's first attribute lookup, again in each file flake8 hands the plugin."""
    from compile_lint.config import Options
    from compile_lint.engine import load_source, parse_source
    from compile_lint.project import Project

    path = write(tmp_path / "model.py", ATTRIBUTES)
    parsed = parse_source(str(path), path.read_text())
    assert not isinstance(parsed, Finding)
    project = Project([parsed], Options(), (), load_source)
    walked = {qualname for _, qualname in project.program._attribute_walks}
    assert "Base.__init__" in walked and not walked & {"Base.setup_cache", "Base.load"}
    assert [f.code for f in project.findings()] == ["TCL103"]


REGISTERED = [  # module names as guessed from paths, in the order a program registers their files
    "transformers.models.llama.modeling_llama", "llama.modeling_llama", "models.bert.modeling_bert",
    "modeling_bert", "a.b", "x.a.b", "b",
]  # fmt: skip


@pytest.mark.parametrize(
    "imported",
    [
        "modeling_llama", "llama.modeling_llama", "models.llama.modeling_llama", "transformers.models.bert.modeling_bert",
        "bert.modeling_bert", "y.a.b", "a.b", "c.b", "a", "x", "modeling_gpt2", "z.models.llama.modeling_llama",
    ],
)  # fmt: skip
def test_an_absolute_import_finds_the_first_file_registered_under_a_longer_or_shorter_dotted_name(
    imported: str,
) -> None:
    """What a scan of the registered names in order finds: the name itself, else the first that ends with the
    imported name or with which it ends, at a dot."""
    indexes = []
    for place, name in enumerate(REGISTERED):
        parsed = parse_source(f"/project/file{place}.py", "x = 1\n")
        assert isinstance(parsed, FileIndex)
        indexes.append(replace(parsed, module=name))
    program = Program(indexes)
    matches = [
        place
        for place, name in enumerate(REGISTERED)
        if name == imported or name.endswith("." + imported) or imported.endswith("." + name)
    ]
    exact = [place for place, name in enumerate(REGISTERED) if name == imported]
    expected = (exact or matches or [None])[0]
    found = program.file_for_module(imported, indexes[0].path)
    assert (found.path if found else None) == (indexes[expected].path if expected is not None else None)
