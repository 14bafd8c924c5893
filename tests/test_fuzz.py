"""A bounded fuzz of the static pass (bench/fuzz.py runs the larger one): hypothesmith programs and
mutated torch.nn source files give findings or one TCL000 diagnostic each, never a traceback."""

from __future__ import annotations

import random
import sys
from itertools import islice
from pathlib import Path

import hypothesmith
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import fuzz  # bench/ is not a package


def test_mutated_model_files_never_raise() -> None:
    tally = fuzz.Tally()
    rng = random.Random(13)
    for _name, data in islice(fuzz.mutated(fuzz.seed_sources(), rng), 40):
        fuzz.check(data, tally)
    assert tally.programs == 40
    assert tally.tracebacks == []
    assert tally.refused_valid == []
    assert sum(tally.diagnostics.values()) > 0  # the mutations do break files: the diagnostics are exercised


def test_every_mutation_keeps_the_run_alive() -> None:
    tally = fuzz.Tally()
    rng = random.Random(7)
    seed = fuzz.seed_sources()[0]
    for name, mutate in fuzz.MUTATIONS.items():
        fuzz.check(mutate(seed, rng), tally)
        assert tally.tracebacks == [], name
    assert tally.refused_valid == []


@settings(max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_grammar_programs_never_raise(source: str) -> None:
    tally = fuzz.Tally()
    fuzz.check(source.encode(), tally)
    assert tally.tracebacks == []
    assert tally.refused_valid == []
