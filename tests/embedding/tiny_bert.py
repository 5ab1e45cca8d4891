"""A tiny randomly initialised BERT checkpoint (config.json + safetensors + vocab) for tests."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

HIDDEN, LAYERS, HEADS, FFN, VOCAB = 16, 2, 4, 32, 50
CONFIG = {
    "model_type": "bert",
    "hidden_size": HIDDEN,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": HEADS,
    "intermediate_size": FFN,
    "vocab_size": VOCAB,
    "max_position_embeddings": 32,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "hidden_act": "gelu",
}
WORDS = ["alpha", "beta", "gamma", "delta", "search", "index", "vector", "query", "model", "note"]


def tiny_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {
        "embeddings.word_embeddings.weight": (VOCAB, HIDDEN),
        "embeddings.position_embeddings.weight": (32, HIDDEN),
        "embeddings.token_type_embeddings.weight": (2, HIDDEN),
        "embeddings.LayerNorm.weight": (HIDDEN,),
        "embeddings.LayerNorm.bias": (HIDDEN,),
    }
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        for name in ("attention.self.query", "attention.self.key", "attention.self.value"):
            shapes[f"{p}.{name}.weight"] = (HIDDEN, HIDDEN)
            shapes[f"{p}.{name}.bias"] = (HIDDEN,)
        shapes[f"{p}.attention.output.dense.weight"] = (HIDDEN, HIDDEN)
        shapes[f"{p}.attention.output.dense.bias"] = (HIDDEN,)
        shapes[f"{p}.intermediate.dense.weight"] = (FFN, HIDDEN)
        shapes[f"{p}.intermediate.dense.bias"] = (FFN,)
        shapes[f"{p}.output.dense.weight"] = (HIDDEN, FFN)
        shapes[f"{p}.output.dense.bias"] = (HIDDEN,)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[f"{p}.{ln}.weight"] = (HIDDEN,)
            shapes[f"{p}.{ln}.bias"] = (HIDDEN,)
    return {k: rng.normal(0, 0.5, s).astype(np.float32) for k, s in shapes.items()}


def write_safetensors(
    path: Path, tensors: dict[str, np.ndarray], dtype: str = "F32", align: bool = True
) -> None:
    """`align`: pad the header with spaces to 8 bytes, as the safetensors library does, so
    float32 data starts 4-byte aligned (the converter then references it in place)."""
    header: dict[str, dict] = {}
    blobs: list[bytes] = []
    offset = 0
    for name, array in tensors.items():
        if dtype == "BF16":
            blob = (array.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
        else:
            blob = array.astype(np.float16 if dtype == "F16" else np.float32).tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    raw = json.dumps(header).encode()
    if align:
        raw += b" " * (-(8 + len(raw)) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def write_checkpoint(model_dir: Path, seed: int = 0, align: bool = True) -> Path:
    """A provisionable model directory: config.json, model.safetensors and a WordPiece vocab."""
    model_dir.mkdir(parents=True)
    (model_dir / "config.json").write_text(json.dumps(CONFIG))
    write_safetensors(model_dir / "model.safetensors", tiny_weights(seed), align=align)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = specials + WORDS + [f"w{i}" for i in range(VOCAB - len(specials) - len(WORDS))]
    (model_dir / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return model_dir
