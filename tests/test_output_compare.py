"""Eager against compiled outputs as models return them (confirm/measure/compare.py): every tensor inside
tuples, dicts, dataclasses, `ModelOutput`s and cache objects is compared; what cannot be compared is
listed, never counted as a difference. The last test compiles a tiny causal LM with its `DynamicCache`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from compile_lint.confirm.measure.compare import agreement, walk  # noqa: E402


@dataclasses.dataclass
class Output:
    logits: Any
    extra: Any = None


class Layer:
    def __init__(self, keys: Any, values: Any) -> None:
        self.keys, self.values = keys, values


class Cache:  # shaped like transformers' DynamicCache: tensors inside layer objects, plus a method
    def __init__(self, *layers: Layer) -> None:
        self.layers = list(layers)
        self.update = lambda: None


def test_every_tensor_inside_nested_containers_and_objects_is_compared() -> None:
    x = torch.ones(2, 3)
    out = Output(x, {"cache": Cache(Layer(x, x + 1)), "steps": (x * 2, 3)})
    found = walk(out, Output(x.clone(), {"cache": Cache(Layer(x.clone(), x + 1)), "steps": (x * 2, 3)}))
    assert [p for p, *_ in found.pairs] == [
        "output.logits",
        "output.extra['cache'].layers[0].keys",
        "output.extra['cache'].layers[0].values",
        "output.extra['steps'][0]",
    ]
    assert found.skipped == ["output.extra['cache'].update (function)"] and not found.mismatched


def test_a_value_that_cannot_be_compared_is_listed_not_called_a_difference() -> None:
    x = torch.ones(3)
    result = agreement((x, Cache(Layer(x, x))), (x + 1e-7, Cache(Layer(x, x))), None)
    assert result["ok"] is True and result["tensors_compared"] == 3
    assert result["not_compared"] == ["output[1].update (function)"]
    nothing = agreement(lambda: 1, lambda: 2, None)
    assert nothing["ok"] is None and nothing["message"] == "nothing in the output could be compared"


def test_a_difference_inside_a_cache_or_in_the_structure_is_named_by_its_path() -> None:
    x = torch.ones(3)
    result = agreement(Cache(Layer(x, x)), Cache(Layer(x, x + 1)), None)
    assert result["ok"] is False and result["message"].startswith("output.layers[0].values: Tensor-likes are not close")
    assert result["max_abs_error"] == pytest.approx(1.0)
    shape = agreement({"a": x, "b": 1}, {"a": x, "b": 2, "c": x}, None)
    assert shape["ok"] is False
    assert "output['b']: 1 vs 2" in shape["message"] and "output['c']: missing vs Tensor" in shape["message"]


pytest.importorskip("transformers")


@pytest.mark.dynamo
@pytest.mark.slow
def test_a_tiny_causal_lm_with_its_cache_agrees_under_inductor(tmp_path: Path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    from compile_lint.confirm.measure.timing import first_call
    from compile_lint.confirm.run.targets import Target

    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    target = Target(model, (torch.randint(0, 64, (1, 8)),), {"use_cache": True})
    torch._dynamo.reset()
    with torch.no_grad():
        with torch.compiler.set_stance("force_eager"):
            eager, _ = first_call(model, target)
        compiled, _ = first_call(torch.compile(model, backend="inductor"), target)
    assert "DynamicCache" in [type(value).__name__ for value in compiled.values()]
    with pytest.raises(TypeError):  # what the report used to call "outputs DIFFER"
        torch.testing.assert_close(compiled, eager)
    result = agreement(eager, compiled, None)
    assert result["ok"] is True, result
    assert result["tensors_compared"] == 1 + 2 * config.num_hidden_layers  # logits, keys and values per layer
    assert result["max_abs_error"] < 1e-4
