"""Transformers model families for the accuracy corpus: a tiny config per family, built from the config alone.

`tiny_config(model_type)` shrinks the family's default config (hidden size 32, 2 layers, 4 heads, vocabulary 128,
small MoE and sub-configs) through the keywords its config class takes; weights are random and seeded, nothing is
downloaded. `hf_families.json` lists the families whose tiny model builds and runs a forward on CPU, with the head
each one is run with; it is written by

    bench/corpus/.venv/bin/python bench/corpus/hf_families.py   # survey every CONFIG_MAPPING family (~10 min)

and read by models.py, which registers each family's runs (padding mask, a second length, optional outputs,
generate with a kv cache for causal LMs).
"""

from __future__ import annotations

import inspect
import json
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

FAMILIES_FILE = Path(__file__).resolve().parent / "hf_families.json"
VOCAB = 128
BATCH, LENGTH, SECOND_LENGTH = 2, 12, 17
SURVEY_SECONDS = 30  # a family whose tiny model takes longer to build and run twice is left out
MAX_PARAMETERS = 2_000_000  # ... and one whose config kept large sub-models the keywords did not reach

# keyword -> value, applied when the config class (or a sub-config) accepts the keyword
TINY: dict[str, Any] = {
    "vocab_size": VOCAB,
    "hidden_size": 32,
    "d_model": 32,
    "n_embd": 32,
    "dim": 32,
    "embed_dim": 32,
    "num_hidden_layers": 2,
    "num_layers": 2,
    "n_layer": 2,
    "n_layers": 2,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "num_decoder_layers": 2,
    "num_attention_heads": 4,
    "n_head": 4,
    "n_heads": 4,
    "num_heads": 4,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "d_kv": 8,
    "intermediate_size": 64,
    "ffn_dim": 64,
    "d_ff": 64,
    "n_inner": 64,
    "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "max_position_embeddings": 64,
    "n_positions": 64,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "decoder_start_token_id": 1,
    "use_cache": True,
}


def tiny_kwargs(config_class: type) -> dict[str, Any]:
    accepted = set(inspect.signature(config_class.__init__).parameters)
    attribute_map = getattr(config_class, "attribute_map", {}) or {}
    kwargs = {key: value for key, value in TINY.items() if key in accepted}
    for alias, target in attribute_map.items():
        if alias in TINY and target in accepted and target not in kwargs:
            kwargs[target] = TINY[alias]
    return kwargs


def tiny_config(model_type: str) -> Any:
    from transformers import CONFIG_MAPPING

    config_class = CONFIG_MAPPING[model_type]
    config = config_class(**tiny_kwargs(config_class))
    for name in ("text_config", "decoder", "encoder"):
        sub = getattr(config, name, None)
        if sub is not None and hasattr(sub, "to_dict") and not isinstance(sub, dict):
            setattr(config, name, type(sub)(**tiny_kwargs(type(sub))))
    config._attn_implementation = "eager"
    return config


HEADS = {  # head kind -> auto class mapping name, tried in this order
    "seq2seq_lm": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "masked_lm": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",  # encoders also registered as causal LMs (BERT) run as such
    "causal_lm": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
}


def head_of(model_type: str) -> str | None:
    from transformers.models.auto import modeling_auto

    for head, mapping in HEADS.items():
        if model_type in getattr(modeling_auto, mapping):
            return head
    return None


def build(model_type: str, head: str) -> Any:
    import torch
    import transformers
    from transformers.models.auto import modeling_auto

    class_name = getattr(modeling_auto, HEADS[head])[model_type]
    torch.manual_seed(0)
    model = getattr(transformers, class_name)(tiny_config(model_type))
    return model.eval()


def text_inputs(head: str, length: int = LENGTH, padded: bool = True) -> dict[str, Any]:
    import torch

    generator = torch.Generator().manual_seed(length)
    input_ids = torch.randint(3, VOCAB, (BATCH, length), generator=generator)
    mask = torch.ones(BATCH, length, dtype=torch.long)
    if padded:
        mask[1, : length // 3] = 0  # left padding of the second row
    inputs = {"input_ids": input_ids, "attention_mask": mask}
    if head == "seq2seq_lm":
        inputs["decoder_input_ids"] = torch.randint(3, VOCAB, (BATCH, max(2, length // 2)), generator=generator)
    return inputs


def survey() -> list[dict[str, str]]:
    import torch
    from transformers import CONFIG_MAPPING

    def too_slow(signum: int, frame: object) -> None:
        raise TimeoutError(f"over {SURVEY_SECONDS} s")

    signal.signal(signal.SIGALRM, too_slow)
    families = []
    for model_type in sorted(CONFIG_MAPPING.keys()):
        head = head_of(model_type)
        if head is None:
            continue
        signal.alarm(SURVEY_SECONDS)
        try:
            model = build(model_type, head)
            size = sum(parameter.numel() for parameter in model.parameters())
            if size > MAX_PARAMETERS:
                raise ValueError(f"{size} parameters")
            with torch.no_grad():
                model(**text_inputs(head))
                model(**text_inputs(head, SECOND_LENGTH))
        except Exception as error:  # a family whose tiny config does not build: not in the corpus
            print(f"skip {model_type} ({head}): {type(error).__name__}: {str(error)[:120]}", file=sys.stderr)
            continue
        finally:
            signal.alarm(0)
        families.append({"model_type": model_type, "head": head, "class": type(model).__name__})
        print(f"ok {model_type} ({head})", file=sys.stderr, flush=True)
    return families


if __name__ == "__main__":
    try:
        found = survey()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    FAMILIES_FILE.write_text(json.dumps(found, indent=1) + "\n")
    print(f"{len(found)} families -> {FAMILIES_FILE.name}")
