"""`--confirm` explains each recompile: the function, Dynamo's guard, the user line and the parameter or
attribute behind it, and after how many distinct values `recompile_limit` is hit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compile_lint.confirm.run.explain import explain, explanation_text, guard_source, user_file_test, values_to_limit

COUNTER_AND_LOOP = (
    "Recompiling function forward in /m/net.py:10\n    triggered by the following guard failure(s):\n"
    "    - 0/1: self.calls == 1                                          # self.calls += 1  # m/net.py:11 in forward"
    " (HINT: torch.compile considers integer attributes of the nn.Module to be static.)\n"
    '    - User stack trace:\n    -   File "/m/net.py", line 11, in forward\n    -     self.calls += 1\n'
    "    - 0/0: n_steps == 2                                             # for _ in range(n_steps):  # m/net.py:12 in forward\n"
    '    - User stack trace:\n    -   File "/m/net.py", line 12, in forward\n    -     for _ in range(n_steps):'
)
WRAPPER = (
    "Recompiling function wrapper in /m/w.py:6\n    triggered by the following guard failure(s):\n"
    "    - 1/0: tensor 'args[0]' dtype mismatch. expected Float, actual Double"
)


def test_each_failed_guard_is_explained_at_its_user_line() -> None:
    newest, oldest = explain(COUNTER_AND_LOOP, user_file_test({"/m/net.py"}))
    assert (newest.source, newest.kind, newest.user_line, newest.user_code) == (
        "self.calls",
        "attribute",
        11,
        "self.calls += 1",
    )
    assert newest.hint.startswith("torch.compile considers integer attributes")
    assert (oldest.source, oldest.kind, oldest.user_line, oldest.graph) == ("n_steps", "parameter", 12, "0/0")
    assert oldest.user_code == "for _ in range(n_steps):" and oldest.graphs == 2
    assert (oldest.function, oldest.function_file, oldest.function_line) == ("forward", "/m/net.py", 10)


def test_a_wrapper_guard_keeps_dynamos_wording() -> None:
    (failure,) = explain(WRAPPER, user_file_test({"/m/w.py"}))
    assert failure.guard == "tensor 'args[0]' dtype mismatch. expected Float, actual Double"
    assert (failure.source, failure.kind, failure.user_line) == ("args[0]", "tensor", None)


@pytest.mark.parametrize(
    ("guard", "expected"),
    [
        ("n == 2", ("n", "parameter")),
        ("self.mode == 'a'", ("self.mode", "attribute")),
        ("len(xs) == 2", ("xs", "parameter")),
        ("2 <= input_ids.size()[1] <= 9", ("input_ids", "tensor")),
        ("G['SCALE'] == 1.0", ("G['SCALE']", "global")),
        ("GLOBAL_STATE changed: grad_mode", ("grad_mode", "global state")),
        ("kwargs['max_new_tokens'] == 4", ("kwargs['max_new_tokens']", "parameter")),
    ],
)
def test_guard_sources(guard: str, expected: tuple[str, str]) -> None:
    assert guard_source(guard) == expected


def test_the_limit_counts_the_first_graphs_value() -> None:
    assert values_to_limit(1, 8) == 8  # values 1..8 compile a graph each, the 9th runs eagerly
    assert values_to_limit(6, 8) == 3


def test_the_explanation_names_line_guard_and_limit() -> None:
    (_, oldest) = explain(COUNTER_AND_LOOP, user_file_test({"/m/net.py"}))
    text = explanation_text(vars(oldest), values_to_limit(1, 8))
    assert "`n_steps` (parameter) at /m/net.py:12 `for _ in range(n_steps):`" in text
    assert "guard `n_steps == 2`" in text and "hit after 8 distinct values" in text


@pytest.mark.dynamo
def test_confirm_explains_the_loop_bound_behind_a_counter_and_the_wrapper_dtype() -> None:
    pytest.importorskip("torch")
    from test_confirm_e2e import run_cli, targets_by_label

    code, report, stderr = run_cli("fixtures/confirm/_explained.py", "--target", "fixtures/confirm/_explained.py:make")
    assert code == 1, stderr  # findings, every target checked
    targets = targets_by_label(report)
    sampler = targets["fixtures/confirm/_explained.py:make [#0 Sampler]"]["recompiles"]
    by_trigger = {v["trigger"].split(" (")[0]: v for v in sampler}
    assert by_trigger["nothing"]["every_call"] and by_trigger["nothing"]["explained"][0]["source"] == "self.calls"
    steps = by_trigger["n_steps"]
    (explained,) = steps["explained"]
    assert steps["every_call"] and steps["limit_after"] == 8
    assert (explained["source"], explained["user_line"]) == ("n_steps", 17)
    assert explained["user_code"] == "for _ in range(n_steps):"
    assert "temperature" not in by_trigger  # a float: one recompile, then dynamic
    findings = {(f["code"], f["line"]): f for f in report["findings"] if f["path"].endswith("_explained.py")}
    assert findings[("TCL503", 17)]["status"] == "confirmed"
    assert findings[("TCL501", 16)]["status"] == "confirmed"
    wrapped = targets["fixtures/confirm/_explained.py:make [#1 Wrapped]"]["recompiles"]
    (dtype,) = [v for v in wrapped if "dtype" in v["trigger"]]
    assert dtype["reasons"] == ["tensor 'args[0]' dtype mismatch. expected Float, actual Double"]


GENERATE = """import torch
from transformers import LlamaConfig, LlamaForCausalLM


def make():
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 64, (1, 6))
    return [(model.generate, (ids,), {"max_new_tokens": 4, "do_sample": False, "pad_token_id": 0})]
"""


CLI = [sys.executable, "-m", "compile_lint.cli", "-j", "1"]


@pytest.mark.dynamo
def test_generates_own_recompiles_are_listed_with_reasons(tmp_path: Path) -> None:
    """A tiny Llama from its config (no download): prefill against decode shapes, each with Dynamo's guard."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    (tmp_path / "llama_generate.py").write_text(GENERATE, encoding="utf-8")
    process = subprocess.run(
        [
            *CLI,
            "llama_generate.py",
            "--confirm",
            "--target",
            "llama_generate.py:make",
            "--no-cache",
            "--format",
            "json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    report = json.loads(process.stdout)
    (target,) = report["environment"]["targets"]
    assert target["outcome"] == "ok" and target["own_recompiles"] >= 1, process.stderr
    explained = target["own_explained"]
    assert len(explained) == target["own_recompiles"]
    assert all(e["guard"] and e["function"] and e["why"] for e in explained)
    assert any(e["kind"] == "tensor" and "size mismatch at index 1" in e["guard"] for e in explained)  # decode
