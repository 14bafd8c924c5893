"""`compile-lint rules --coverage`: which graph-break codes the rules predict, how often each occurs in
the accuracy corpus (real models under real Dynamo, bench/corpus), and which are dynamic-only by nature.

The 60 codes listed are the registry's (newest known torch) ordered by how often they occur in the
corpus, then by code; so every code seen in real models comes first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from compile_lint.registry import registry
from compile_lint.rules import all_rules
from compile_lint.versions import NEWEST

LISTED = 60
# Codes no rule predicts: why a static pass cannot (dynamic-only by nature), or what a rule would need.
DYNAMIC_ONLY = "dynamic-only"
NOT_YET = "no rule yet"
UNCOVERED: dict[str, tuple[str, str]] = {
    "GB0000": (DYNAMIC_ONLY, "depends on which __torch_function__ overrides the runtime tensor types have"),
    "GB0001": (DYNAMIC_ONLY, "depends on the runtime tensor subclass"),
    "GB0002": (DYNAMIC_ONLY, "a symbolic-shape assertion failing for the traced sizes"),
    "GB0003": (NOT_YET, "tracing a generator object created outside the region"),
    "GB0004": (NOT_YET, "super().__delattr__() on an object Dynamo does not track"),
    "GB0005": (DYNAMIC_ONLY, "str() of an object whose type implements it in C, known only from its runtime type"),
    "GB0009": (DYNAMIC_ONLY, "a skipped function reached through a value Dynamo wraps at run time"),
    "GB0010": (NOT_YET, "reading a name after `del`"),
    "GB0011": (NOT_YET, "reading an unbound local (a bug in the traced code)"),
    "GB0012": (NOT_YET, "reading an unbound local (a bug in the traced code)"),
    "GB0013": (DYNAMIC_ONLY, "a hook handle created outside the region"),
    "GB0014": (NOT_YET, "nn.RNN/GRU/LSTM modules called in a region (not seen in the corpus)"),
    "GB0016": (DYNAMIC_ONLY, "nested tensors are a runtime layout"),
    "GB0017": (DYNAMIC_ONLY, "Dynamo's own invoke_subgraph machinery"),
    "GB0018": (DYNAMIC_ONLY, "an unbacked SymInt arises from traced data"),
    "GB0019": (NOT_YET, "an autograd.Function context escaping the region"),
    "GB0020": (DYNAMIC_ONLY, "Dynamo's bytecode handling of string building"),
    "GB0021": (DYNAMIC_ONLY, "Dynamo's bytecode handling of string building"),
    "GB0022": (DYNAMIC_ONLY, "an import whose result depends on the runtime module state"),
    "GB0023": (DYNAMIC_ONLY, "an operator comparison failing on a constant at trace time"),
    "GB0024": (DYNAMIC_ONLY, "generator clean-up bytecode"),
    "GB0026": (DYNAMIC_ONLY, "depends on the tensor subclass constructed"),
    "GB0027": (DYNAMIC_ONLY, "tensor identity on values Dynamo holds no fake tensor for"),
    "GB0028": (DYNAMIC_ONLY, "an exception value known only at run time"),
    "GB0029": (DYNAMIC_ONLY, "hooks on intermediates need compiled autograd, a configuration"),
    "GB0030": (DYNAMIC_ONLY, "an explicit comptime break, Dynamo's own debugging API"),
    "GB0031": (NOT_YET, "an nn.Module class with its own __getattribute__"),
    "GB0032": (NOT_YET, "an nn.Module class with its own __getattribute__"),
    "GB0034": (DYNAMIC_ONLY, "a data-dependent assertion failing for the traced data"),
    "GB0035": (DYNAMIC_ONLY, "an object whose __bool__ depends on tensor data"),
    "GB0037": (DYNAMIC_ONLY, "a dynamic-shape op without a meta kernel: a property of the op implementation"),
    "GB0038": (NOT_YET, "slicing with tensor bounds in dynamic-shape mode (TCL107 covers the default mode)"),
    "GB0039": (DYNAMIC_ONLY, "the recompile limit: counted at run time (the --confirm probe reports it)"),
    "GB0040": (DYNAMIC_ONLY, "aliasing inside a higher-order op body, found while tracing it"),
    "GB0041": (DYNAMIC_ONLY, "input mutation inside a higher-order op body, found while tracing it"),
    "GB0042": (DYNAMIC_ONLY, "Dynamo's own invoke_subgraph machinery"),
    "GB0043": (DYNAMIC_ONLY, "a custom operator's registration tags"),
    "GB0044": (DYNAMIC_ONLY, "nested tensors are a runtime layout"),
    "GB0045": (NOT_YET, "`t.is_inference()` in a region"),
    "GB0046": (NOT_YET, "`torch.is_inference_mode_enabled()` in a region"),
    "GB0047": (DYNAMIC_ONLY, "an argument Dynamo could not convert while inlining"),
    "GB0048": (DYNAMIC_ONLY, "Dynamo's fake-to-real value lookup"),
    "GB0049": (DYNAMIC_ONLY, "an op overload packet resolved at trace time"),
    "GB0050": (DYNAMIC_ONLY, "an `except` clause whose type is known only at run time"),
    "GB0051": (DYNAMIC_ONLY, "an `except` clause whose type is known only at run time"),
}


@dataclass
class Row:
    code: str
    gb_type: str
    sites: int
    rules: list[str]
    status: str  # "predicted", DYNAMIC_ONLY or NOT_YET
    note: str


def corpus() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(files("compile_lint").joinpath("data/corpus_breaks.json").read_text("utf-8"))
    return data


def coverage_rows() -> list[Row]:
    breaks = registry(NEWEST)
    sites: dict[str, int] = corpus()["sites"]
    predicted: dict[str, list[str]] = {}
    for rule in all_rules():
        for code in rule.gb_codes:
            predicted.setdefault(code, []).append(rule.code)
    ordered = sorted(breaks.breaks, key=lambda code: (-sites.get(code, 0), code))[:LISTED]
    rows = []
    for code in ordered:
        entry = breaks.get(code)
        gb_type = entry.gb_types[0] if entry else ""
        rules = predicted.get(code, [])
        status, note = ("predicted", "") if rules else UNCOVERED.get(code, (NOT_YET, ""))
        rows.append(Row(code, gb_type, sites.get(code, 0), rules, status, note))
    return rows


def print_coverage(console: Console) -> None:
    data = corpus()
    table = Table(title=f"Graph-break codes: the {LISTED} most frequent in the accuracy corpus, then by code")
    for column in ("code", "corpus sites", "gb_type", "predicted by", "or"):
        table.add_column(column, overflow="fold")
    rows = coverage_rows()
    for row in rows:
        other = f"{row.status}: {row.note}" if row.status != "predicted" else ""
        table.add_row(row.code, str(row.sites), Text(row.gb_type), ", ".join(row.rules), Text(other))
    console.print(table)
    counted = {status: sum(r.status == status for r in rows) for status in ("predicted", DYNAMIC_ONLY, NOT_YET)}
    seen = [r for r in rows if r.sites]
    console.print(
        f"{counted['predicted']} predicted by a rule, {counted[DYNAMIC_ONLY]} dynamic-only by nature, "
        f"{counted[NOT_YET]} without a rule yet. Corpus: {data['models']} models under torch {data['torch']} "
        f"({data['source']}): {sum(r.sites for r in seen if r.rules)} of {sum(r.sites for r in seen)} break sites "
        "(counted once per code) have a code some rule predicts.",
        highlight=False,
    )
