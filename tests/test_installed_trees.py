"""Linting real installed packages (as a user pointing compile-lint at site-packages would) never ends in an
internal error: whatever cannot be parsed or resolved is reported or not followed, and the run goes on."""

from __future__ import annotations

import importlib.machinery
from pathlib import Path

import pytest

from compile_lint.config import Config
from compile_lint.engine import lint

# Installed with the test extras (torch, numpy) or by the bench (transformers): a folder of each, chosen to
# cover what trips resolution (relative imports, try/except fallbacks, namespace portions, C extensions).
TREES = ("numpy", "torch/nn", "torch/distributions", "libcst", "transformers/models/llama", "transformers/utils")


def _installed(tree: str) -> Path | None:
    top, _, rest = tree.partition("/")
    spec = importlib.machinery.PathFinder.find_spec(top)  # finds without importing
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / rest
    return folder if folder.is_dir() else None


@pytest.mark.slow
@pytest.mark.parametrize("tree", TREES)
def test_installed_tree_lints_without_internal_error(tree: str) -> None:
    folder = _installed(tree)
    if folder is None:
        pytest.skip(f"{tree} is not installed")
    result = lint([str(folder)], Config(root=folder), use_cache=False)  # an internal error would raise here
    assert result.files > 0
