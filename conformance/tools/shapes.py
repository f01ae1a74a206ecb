"""The shapes ``bench --shapes models`` and ``--shape`` time: activations of public model configurations.

Each op record says which activation of a transformer block its op sees (``OpRecord.activation``):
``"hidden"`` (``[batch, seq, hidden]``: LayerNorm, the residual Add), ``"intermediate"`` (``[batch, seq,
intermediate]``: the MLP's GELU) or ``"attention"`` (``[batch, heads, seq, seq]``: the attention Softmax).
A model configuration gives those sizes; a bench shape carries the configurations it comes from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from conformance.ops.record import ACTIVATIONS


@dataclass(frozen=True)
class ModelConfig:
    """The sizes of one public configuration (its ``config.json``: hidden_size, intermediate_size,
    num_attention_heads). ``intermediate`` is None where the block's activation is not a GELU (a SwiGLU
    decoder's MLP), so GELU ops get no shape from it."""

    name: str
    hidden: int
    heads: int
    intermediate: int | None


MODELS = (
    ModelConfig("BERT-base", 768, 12, 3072),  # google-bert/bert-base-uncased
    ModelConfig("GPT-2", 768, 12, 3072),  # openai-community/gpt2 (n_embd 768, n_head 12, 4 * n_embd)
    ModelConfig("GPT-2 medium", 1024, 16, 4096),  # openai-community/gpt2-medium
    ModelConfig("7B decoder", 4096, 32, None),  # meta-llama/Llama-2-7b-hf (SwiGLU MLP: no GELU)
)
SEQUENCES = (128, 512)
BATCH = 1


@dataclass(frozen=True)
class BenchShape:
    """One shape to bench and where it comes from (``sources``: "BERT-base seq 128 hidden", ...)."""

    shape: tuple[int, ...]
    sources: tuple[str, ...]

    @property
    def source(self) -> str:
        return ", ".join(self.sources)


def activation_shape(model: ModelConfig, seq: int, activation: str) -> tuple[int, ...] | None:
    if activation == "hidden":
        return (BATCH, seq, model.hidden)
    if activation == "intermediate":
        return None if model.intermediate is None else (BATCH, seq, model.intermediate)
    if activation == "attention":
        return (BATCH, model.heads, seq, seq)
    raise ValueError(f"activation {activation!r}: expected one of {', '.join(a for a in ACTIVATIONS if a)}")


def model_shapes(activation: str) -> list[BenchShape]:
    """Every configuration's shape of ``activation`` at each sequence length, one entry per distinct shape
    (BERT-base and GPT-2 share theirs), in order of size."""
    found: dict[tuple[int, ...], list[str]] = {}
    for model in MODELS:
        for seq in SEQUENCES:
            shape = activation_shape(model, seq, activation)
            if shape is not None:
                found.setdefault(shape, []).append(f"{model.name} seq {seq} {activation}")
    return [BenchShape(s, tuple(found[s])) for s in sorted(found, key=lambda s: (math.prod(s), s))]


def parse_shape(text: str) -> tuple[int, ...]:
    """``--shape 1,128,3072``: positive integers separated by commas."""
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"--shape {text!r}: expected positive integers separated by commas, such as 1,128,3072")
    return tuple(int(p) for p in parts)
