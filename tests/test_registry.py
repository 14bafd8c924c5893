"""The graph-break registries shipped as package data (scripts/gen_torch_data.py copies them out of
the wheels): one per known torch version, every wording mapped to its code, and every code a rule
or a fixture names exists in the registry of the version it is named for."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from compile_lint import registry, versions
from compile_lint.rules import all_rules
from fixture_support import ROOT, expectations, fixture_files


@pytest.mark.parametrize("version", versions.KNOWN, ids=versions.label)
def test_one_registry_per_known_version(version: versions.TorchVersion) -> None:
    loaded = registry.registry(version)
    assert versions.parse(loaded.torch) == version
    assert len(loaded.breaks) > 500


def test_every_wording_maps_to_its_code_and_renamed_ones_keep_their_old_name() -> None:
    newest = registry.registry((2, 14))
    for entry in newest.breaks.values():
        assert all(wording in newest.breaks[newest.code_of(wording) or ""].gb_types for wording in entry.gb_types)
    assert newest.code_of("Failed to make weakref to User Object") == "GB0272"  # shared with GB0276
    assert newest.get("GB2483").gb_types == ("tp_str_impl not implemented", "str_impl not implemented")
    assert newest.code_of("str_impl not implemented") == newest.code_of("tp_str_impl not implemented") == "GB2483"
    assert registry.registry((2, 13)).code_of("tp_str_impl not implemented") is None  # the 2.14 name


def test_explanation_and_hints_are_per_version() -> None:
    entry = registry.registry((2, 14)).get("GB0291")
    assert entry is not None and "registered as reorderable" in entry.explanation
    older = registry.registry((2, 13)).get("GB0291")
    assert older is not None and older.explanation == "logging.Logger methods are not supported for non-export cases."
    assert registry.describe("GB5687") == registry.registry((2, 14)).get("GB5687")  # only in 2.14
    assert registry.describe("GB0060", (2, 14)) == registry.registry((2, 13)).get("GB0060")  # removed in 2.14


def test_split_hints_are_rejoined() -> None:
    entry = registry.GraphBreak("GB0000", ("t",), "e", ("Use a to ", "register b.", "Report it."))
    assert entry.hint_lines() == ["Use a to register b.", "Report it."]


@pytest.mark.parametrize("version", versions.KNOWN, ids=versions.label)
def test_codes_rules_and_fixtures_name_exist_in_that_version(version: versions.TorchVersion) -> None:
    known = registry.registry(version).breaks
    for rule in all_rules():
        missing = [code for code in rule.codes_for(version) if code not in known]
        assert not missing, f"{rule.code} predicts {missing}, unknown to torch {versions.label(version)}"
    for path in fixture_files():
        for line, expected in expectations(path, version).items():
            pinned = {code for codes in expected.values() for code in codes}
            assert pinned <= set(known), f"{path.name}:{line}"


@pytest.mark.installed_torch
def test_shipped_registry_is_the_installed_wheels(tmp_path: Path) -> None:
    torch_version = pytest.importorskip("torch").__version__.split("+")[0]
    version = versions.parse(torch_version)
    if version not in versions.KNOWN:
        pytest.skip(f"torch {torch_version} is not a known version")
    assert registry.registry(version).torch == torch_version, "run scripts/gen_torch_data.py with this torch"
    script = (ROOT / "scripts" / "gen_torch_data.py").read_text(encoding="utf-8")
    copy = tmp_path / "scripts" / "gen_torch_data.py"
    copy.parent.mkdir()
    copy.write_text(script)
    (tmp_path / "src" / "compile_lint" / "data").mkdir(parents=True)
    subprocess.run([sys.executable, str(copy)], check=True, capture_output=True, timeout=120)
    fresh = tmp_path / "src" / "compile_lint" / "data" / f"graph_breaks-torch{torch_version}.json"
    shipped = ROOT / "src" / "compile_lint" / "data" / fresh.name
    assert json.loads(fresh.read_text()) == json.loads(shipped.read_text())
    assert metadata.version("torch").startswith(torch_version)
