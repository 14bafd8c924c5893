"""The per-version skip lists TCL310 reads: present for every supported torch, and what the script makes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from compile_lint.rules.tcl310_skipped_module import skip_lists
from compile_lint.versions import KNOWN, installed

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gen_dynamo_skips.py"


@pytest.mark.parametrize("version", KNOWN, ids=lambda v: f"{v[0]}.{v[1]}")
def test_every_supported_torch_has_skip_lists(version: tuple[int, int]) -> None:
    lists = skip_lists(version)
    assert {"unittest", "importlib", "linecache", "tqdm"} <= lists.modules
    assert "numpy" not in lists.modules  # traced through torch._numpy
    assert "assertEqual" in lists.testcase_methods


@pytest.mark.parametrize("version", KNOWN, ids=lambda v: f"{v[0]}.{v[1]}")
def test_skipped_module_finds_the_module_and_spares_what_dynamo_handles(version: tuple[int, int]) -> None:
    lists = skip_lists(version)
    assert lists.skipped_module("importlib.import_module") == "importlib"
    assert lists.skipped_module("tqdm.tqdm.write") == "tqdm"
    assert lists.skipped_module("importlib.util.find_spec") is None  # constant-folded
    assert lists.skipped_module("re.match") is None
    assert lists.skipped_module("torch.sin") is None
    assert lists.skipped_module("tqdmx.run") is None


def test_committed_file_is_what_the_script_generates_from_the_installed_torch() -> None:
    pytest.importorskip("torch")
    version = installed()
    assert version in KNOWN
    spec = importlib.util.spec_from_file_location("gen_dynamo_skips", SCRIPT)
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    generated = script.generate()
    committed = json.loads(script.output_path(generated["torch"]).read_text(encoding="utf-8"))
    assert {k: v for k, v in generated.items() if k != "torch"} == {k: v for k, v in committed.items() if k != "torch"}
