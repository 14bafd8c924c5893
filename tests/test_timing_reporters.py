"""The --timing / --coverage reporters on a hand-made measurement (no torch needed)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rich.console import Console

from compile_lint.cli import build_parser
from compile_lint.confirm.measure.measure import MeasureOptions, slug
from compile_lint.confirm.session import TargetReport
from compile_lint.finding import Finding
from compile_lint.reporters import html, timing_text

BREAK = {
    "file": "/src/model.py",
    "line": 19,
    "gb_code": "GB0124",
    "gb_type": "Unsupported Tensor.item() call with capture_scalar_outputs=False",
    "user_file": "/src/model.py",
    "user_line": 19,
    "where": "model.py:19",
    "finding": {
        "code": "TCL101",
        "message": "`.item()` breaks",
        "status": "confirmed",
        "fix": "keep a tensor",
        "where": "model.py:19",
    },
}


def speed(median: float, **extra: Any) -> dict[str, Any]:
    return {"first_ms": median * 3, "median_ms": median, "iqr_ms": median / 50, "calls": 100, "noisy": False, **extra}


def measured(label: str = "model.py:make [Block]") -> TargetReport:
    gap = {
        "start_ms": 0.4,
        "ms": 0.2,
        "compile_id": "0/0",
        "break": BREAK,
        "ops": [["aten::item", 0.01]],
        "runtime_ms": 0.02,
    }
    input_set = {
        "index": 0, "inputs": ["float32[0, 64] cpu"], "elements": 0, "first_ms": 5.0, "median_ms": None,
        "recompiled": True, "compile_ms": 4.0, "recompile_reasons": ["0/0: tensor 'x' size mismatch"],
        "recompile_limit_hit": False, "cache_entries": 3, "rss_mb": 400.0, "rss_growth_mb": 1.0,
        "peak_rss_growth_mb": 0.0, "device_peak_mb": None, "flags": ["raised"], "error": "RuntimeError: <empty>",
    }  # fmt: skip
    timing = {
        "eager": speed(1.0),
        "compiled": speed(0.5, compile_ms=900.0, run_ms=1.0, cache="cold", frames=[]),
        "speedup": 2.0,
        "breaks": 1,
        "agreement": {"ok": False, "message": "Mismatched <b>", "tolerance": "per-dtype defaults",
                      "max_abs_error": 0.1, "max_rel_error": 0.2},
        "warm_compile": {"first_ms": 50.0, "compile_ms": 40.0, "cache": "warm"},
        "input_sets": [input_set],
        "backend": "inductor",
        "mode": "default",
    }  # fmt: skip
    coverage = {
        "step_ms": 1.0,
        "shares": {"compiled": 0.6, "in_regions_eager": 0.3, "outside_regions": 0.1},
        "graphs_per_step": 2,
        "region_entries_per_step": 2,
        "gaps": [gap],
        "breaks": [
            {
                "break": BREAK,
                "ms_per_step": 0.2,
                "share_of_step": 0.2,
                "gaps_per_step": 1,
                "ops": [["aten::item", 0.01]],
                "runtime_ms_per_step": 0.02,
            }
        ],
        "timeline": {
            "step_ms": 1.0,
            "graphs": [[0.1, 0.4], [0.6, 0.9]],
            "regions": [["0/0", 0.05, 0.95]],
            "gaps": [gap],
        },
        "fix_first": "model.py:19 GB0124: 0.200 ms per step",
        "trace": f"trace-{slug(label)}.json",
    }
    return TargetReport(label, "ok", timing=timing, coverage=coverage)


def test_text_tables_show_speed_sets_coverage_and_the_break_to_fix_first() -> None:
    console = Console(record=True, width=220)
    timing_text.render(console, [measured(), TargetReport("other", "ok", timing={"error": "timed-out: after 600 s"})])
    text = console.export_text()
    assert "2.00x" in text and "DIFFER" in text and "900 ms compile, cold" in text and "40.00 ms (warm)" in text
    assert "RuntimeError: <empty>" in text and "raised" in text
    assert "60%" in text and "fix first: model.py:19 GB0124" in text and "TCL101 [confirmed]" in text
    assert "other: timed-out: after 600 s" in text
    assert "aten::item 10.0 us" in text and "20.0 us" in text  # eager ops and Dynamo's runtime, apart


def test_html_page_is_self_contained_and_escaped(tmp_path: Path) -> None:
    finding = Finding("model.py", 19, 17, 19, 30, "TCL101", "`.item()` <breaks>", status="confirmed")
    page = html.write(tmp_path / "out", [measured()], [finding], {"python": "3.11", "torch": "2.13.0"})
    text = page.read_text()
    assert "<script" not in text and not re.search(r"(src|href)=['\"]?https?:", text)
    assert "Mismatched &lt;b&gt;" in text and "&lt;breaks&gt;" in text
    assert text.count("class=bar ") == 3 and "class=timeline" in text and "gap 1: " in text
    assert "trace-model_py_make_Block.json" in text
    assert "Dynamo runtime (guards, graph entry): 20.0 us" in text


def test_timing_options_imply_confirm_and_measure_options() -> None:
    from compile_lint.cli import _measure_options

    args = build_parser().parse_args(
        ["src", "--html", "out", "--tolerance", "1e-3", "1e-5", "--compile-mode", "default"]
    )
    options = _measure_options(args)
    assert options == MeasureOptions(coverage=True, tolerance=[1e-3, 1e-5], compile_mode=None, html_dir=Path("out"))
    assert _measure_options(build_parser().parse_args(["src", "--confirm"])) is None


def test_outputs_that_could_not_be_compared_are_not_called_a_difference(tmp_path: Path) -> None:
    report = measured()
    assert report.timing is not None
    report.timing["agreement"] = {
        "ok": None, "message": "nothing in the output could be compared", "tolerance": "per-dtype defaults",
        "max_abs_error": 0.0, "max_rel_error": 0.0, "tensors_compared": 0, "not_compared": ["output (Handle)"],
    }  # fmt: skip
    console = Console(record=True, width=220)
    timing_text.render(console, [report])
    text = console.export_text()
    assert "DIFFER" not in text and "not compared" in text
    assert "over 0 tensors" in text and "not compared (neither agreeing nor differing): output (Handle)" in text
    page = html.write(tmp_path / "out", [report], [], {}).read_text()
    assert "outputs differ" not in page and "outputs not compared: nothing in the output could be compared" in page


def test_a_loaded_machine_and_measurements_that_disagree_are_said_plainly(tmp_path: Path) -> None:
    from compile_lint.confirm.measure.measure import disagreement, timing_warnings

    report = measured()
    assert report.timing is not None and report.coverage is not None
    report.timing["machine"] = {
        "load_average": [5.2, 4.0, 3.1], "load_average_after": [5.6, 4.1, 3.1], "cpus": 4, "cpus_usable": 2,
        "cpu_affinity": [1, 3], "threads": 2, "threads_from": "torch's default", "interop_threads": 2,
    }  # fmt: skip
    report.timing["input_sets"][0]["median_ms"] = 0.5
    report.coverage["step_ms"] = 0.1  # the steady state said 0.5 ms: 5x apart
    report.timing["disagreement"] = disagreement(report.timing, report.coverage)
    report.timing["warnings"] = timing_warnings(report.timing)
    assert report.timing["disagreement"]["ratio"] == 5.0
    console = Console(record=True, width=400)
    timing_text.render(console, [report])
    text = console.export_text()
    assert "measured with 2 threads (torch's default), load average 5.20, 4.00, 3.10" in text
    assert "2 usable CPUs (CPUs 1, 3) of 4" in text
    assert "warning: the same compiled call measured steady state 0.5 ms, profiled step 0.1 ms" in text
    assert "5.0x apart" in text and "load average 5.20 on 2 usable CPUs" in text and "rerun with --threads 1" in text
    assert "load average 5.60 above the 2 usable CPUs while 2 threads compete" in text
    page = html.write(tmp_path / "out", [report], [], {}).read_text()
    assert "<p class=warn>Warning: the same compiled call measured" in page
    report.coverage["step_ms"] = 0.4
    assert disagreement(report.timing, report.coverage) is None  # 1.25x: figures of one call that agree


def test_a_loaded_machine_measured_with_one_thread_is_said_too() -> None:
    from compile_lint.confirm.measure.measure import timing_warnings

    report = measured()
    assert report.timing is not None
    report.timing["machine"] = {
        "load_average": [6.1, 4.0, 3.1], "load_average_after": [5.9, 4.1, 3.1], "cpus": 2, "cpus_usable": 2,
        "threads": 1, "threads_from": "--threads", "interop_threads": 2,
    }  # fmt: skip
    (warning,) = timing_warnings(report.timing)
    assert warning.startswith("load average 6.10 above the 2 usable CPUs: measured with one thread")
    assert "compare the speed-up" in warning
    report.timing["machine"]["load_average"][0] = report.timing["machine"]["load_average_after"][0] = 1.5
    assert timing_warnings(report.timing) == []  # below the CPUs: nothing to say


def test_threads_option_reaches_the_measurement() -> None:
    from compile_lint.cli import _measure_options

    options = _measure_options(build_parser().parse_args(["src", "--threads", "1"]))
    assert options is not None and options.threads == 1
