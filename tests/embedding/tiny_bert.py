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


def write_cross_encoder(model_dir: Path, labels: int = 1, seed: int = 0) -> Path:
    """A BertForSequenceClassification checkpoint (a cross-encoder, as ms-marco-MiniLM is laid
    out): the encoder under "bert.", its pooler, and a classifier with `labels` outputs."""
    write_checkpoint(model_dir, seed)
    write_safetensors(model_dir / "model.safetensors", cross_encoder_weights(labels, seed))
    return model_dir


def cross_encoder_weights(labels: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + 1000)
    tensors = {f"bert.{k}": v for k, v in tiny_weights(seed).items()}
    tensors["bert.pooler.dense.weight"] = rng.normal(0, 0.5, (HIDDEN, HIDDEN)).astype(np.float32)
    tensors["bert.pooler.dense.bias"] = rng.normal(0, 0.5, (HIDDEN,)).astype(np.float32)
    tensors["classifier.weight"] = rng.normal(0, 0.5, (labels, HIDDEN)).astype(np.float32)
    tensors["classifier.bias"] = rng.normal(0, 0.5, (labels,)).astype(np.float32)
    return tensors


def reference_logits(
    tensors: dict[str, np.ndarray], ids: np.ndarray, mask: np.ndarray, types: np.ndarray
) -> np.ndarray:
    """BertForSequenceClassification's logits written out in numpy, op by op as in
    transformers' modeling_bert (the independent check of the converted graph)."""
    import math

    def w(name: str) -> np.ndarray:
        return tensors[name].astype(np.float64)

    def layer_norm(x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        eps = CONFIG["layer_norm_eps"]
        return (x - mean) / np.sqrt(var + eps) * w(f"{name}.weight") + w(f"{name}.bias")

    def dense(x: np.ndarray, name: str) -> np.ndarray:
        return x @ w(f"{name}.weight").T + w(f"{name}.bias")

    erf = np.vectorize(math.erf)
    batch, seq = ids.shape
    x = (
        w("bert.embeddings.word_embeddings.weight")[ids]
        + w("bert.embeddings.token_type_embeddings.weight")[types]
        + w("bert.embeddings.position_embeddings.weight")[:seq][None]
    )
    x = layer_norm(x, "bert.embeddings.LayerNorm")
    head = HIDDEN // HEADS
    bias = (1.0 - mask[:, None, None, :]) * -1e9
    for i in range(LAYERS):
        p = f"bert.encoder.layer.{i}"

        def heads(t: np.ndarray) -> np.ndarray:
            return t.reshape(batch, seq, HEADS, head).transpose(0, 2, 1, 3)

        q = heads(dense(x, f"{p}.attention.self.query"))
        k = heads(dense(x, f"{p}.attention.self.key"))
        v = heads(dense(x, f"{p}.attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head) + bias
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, HIDDEN)
        x = layer_norm(dense(context, f"{p}.attention.output.dense") + x,
                       f"{p}.attention.output.LayerNorm")  # fmt: skip
        hidden = dense(x, f"{p}.intermediate.dense")
        hidden = 0.5 * hidden * (1.0 + erf(hidden / math.sqrt(2)))
        x = layer_norm(dense(hidden, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    pooled = np.tanh(dense(x[:, 0], "bert.pooler.dense"))
    return dense(pooled, "classifier")
