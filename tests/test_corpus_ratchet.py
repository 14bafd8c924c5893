"""The static pass scored against the committed truth of the accuracy corpus (bench/corpus), without compiling:
recall, precision on lines Dynamo ran and GB agreement may not drop below bench/corpus/figures.json.

Only the corpus packages' source is needed: the test pip-installs it (pinned, no dependencies, no torch) into
bench/corpus/.sources once, and again when bench/corpus/requirements.txt changes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import accuracy  # noqa: E402

SOURCES = ROOT / "bench" / "corpus" / ".sources"
RATCHETED = ("recall", "precision_on_ran", "gb_agreement")


@pytest.fixture(scope="module")
def sources() -> Path:
    stamp = SOURCES / "requirements.sha256"
    if stamp.exists() and stamp.read_text() == accuracy.requirements_hash():
        return SOURCES
    shutil.rmtree(SOURCES, ignore_errors=True)
    try:
        accuracy.install_sources(SOURCES)
    except subprocess.CalledProcessError as error:
        pytest.skip(f"cannot pip install the corpus packages' source into {SOURCES} (no package index?): {error}")
    stamp.write_text(accuracy.requirements_hash())
    return SOURCES


@pytest.mark.slow
def test_static_pass_keeps_its_corpus_figures(sources: Path) -> None:
    floor = json.loads(accuracy.FIGURES.read_text())
    measured = accuracy.score_sources(sources, jobs=2)
    assert set(measured) == set(floor), "truth and figures.json cover other torch versions: see bench/corpus/README.md"
    dropped = [
        f"torch {version} {key}: {measured[version]['overall'][key]} < {floor[version]['overall'][key]}"
        for version in floor
        for key in RATCHETED
        if (measured[version]["overall"][key] or 0) < (floor[version]["overall"][key] or 0)
    ]
    assert not dropped, "the static pass got worse on the corpus (python bench/accuracy.py --details): " + "; ".join(
        dropped
    )
