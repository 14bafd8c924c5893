"""What keeps a run cheap without changing its findings (issue 20): shared whitespace in packed trees, nodes
unpickled by their kind's maker, no torch source read through a package installed next to it, no reference
cycles left for a frozen collector, no TOML parsed for a pyproject.toml that does not name compile-lint, the
findings' function starts taken from the parse guard's tree."""

from __future__ import annotations

import gc
import pickle
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from compile_lint.analysis.index import FileIndex
from compile_lint.analysis.nodes import string_value
from compile_lint.analysis.packages import rooted_source
from compile_lint.analysis.packing import pack_index, shared_whitespace
from compile_lint.analysis.positions import function_starts
from compile_lint.config import find_pyproject
from compile_lint.engine import parse_source

SOURCE = "import torch\n\n\ndef f(x, y):  # note\n    return x + y, [x, y]\n\n\nclass M:\n    def g(self, x):\n        return x * 2\n"


def test_a_packed_index_loads_back_the_same_code_with_one_node_per_whitespace_value() -> None:
    index = parse_source("m.py", SOURCE)
    assert isinstance(index, FileIndex)
    first, second = pickle.loads(pack_index(index)), pickle.loads(pack_index(index))
    assert first.tree.code == second.tree.code == SOURCE
    assert index.tree.code == SOURCE  # packing left the parsed index as it was
    space = shared_whitespace(cst.SimpleWhitespace, " ")
    returned = first.functions["M.g"].definition.body.body[0].body[0].value
    assert returned.operator.whitespace_before is space  # shared across both loads
    assert second.functions["M.g"].definition.body.body[0].body[0].value.operator.whitespace_before is space
    comment = first.functions["f"].definition.body.header.comment
    assert comment is not None and comment.value == "# note"  # a comment keeps its own node


def test_a_packed_index_loads_back_in_a_fresh_process_with_the_same_tree(tmp_path: Path) -> None:
    """Each node kind's maker is found by name (`packing.node_Name`) in a process that never made one."""
    index = parse_source("m.py", SOURCE)
    assert isinstance(index, FileIndex)
    (tmp_path / "entry.pickle").write_bytes(pack_index(index))
    load = "import pickle, sys; print(pickle.loads(open(sys.argv[1], 'rb').read()).tree.code, end='')"
    loaded = subprocess.run(
        [sys.executable, "-c", load, str(tmp_path / "entry.pickle")], capture_output=True, text=True, check=True
    )
    assert loaded.stdout == SOURCE
    again = pickle.loads(pack_index(index))
    assert again.tree.deep_equals(index.tree)
    assert type(again.functions["f"].definition.body.body[0].body[0].value) is cst.Tuple


def test_an_import_of_torch_from_an_installed_package_never_reads_torch_from_source(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    for package in ("kernels", "torch", "helpers"):
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text("")
    importer = site / "kernels" / "layer.py"
    importer.write_text("import torch\nimport helpers\n")
    assert rooted_source(str(importer), importer, "kernels.layer", "torch") is None
    assert rooted_source(str(importer), importer, "kernels.layer", "torch.nn") is None
    assert rooted_source(str(importer), importer, "kernels.layer", "helpers") == str(site / "helpers" / "__init__.py")


@pytest.mark.parametrize("literal", ["'a'", '"forward"', "b'\\x00z'", "r'\\d+'", '"""two\nlines"""', "'\\N{EM DASH}'"])
def test_string_value_is_libcst_evaluated_value_without_a_reference_cycle(literal: str) -> None:
    node = cst.parse_expression(literal)
    assert isinstance(node, cst.SimpleString)
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        value = string_value(node)
        assert gc.collect() == 0  # what a frozen collector would never free
    finally:
        if enabled:
            gc.enable()
    assert value == node.evaluated_value


def test_a_pyproject_that_does_not_name_compile_lint_is_not_parsed(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project\nname = broken TOML, never read\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    assert find_pyproject(tmp_path / "m.py") is None
    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint]\nselect = ["TCL1"]\n')
    assert find_pyproject(tmp_path / "m.py") == (tmp_path / "pyproject.toml").resolve()


def test_a_parsed_index_carries_the_function_starts_of_its_text() -> None:
    index = parse_source("m.py", SOURCE)
    assert isinstance(index, FileIndex)
    assert index.starts == function_starts(SOURCE) == {"f": (4, ""), "M.g": (9, "    ")}
    assert pickle.loads(pack_index(index)).starts == index.starts  # and the cache keeps them
    plain = parse_source("m.py", "def f(x):\n\x0c    if x:\n        y = 1\n    return 1\n")
    assert isinstance(plain, FileIndex) and plain.starts is None  # text made plain: computed from it when needed
