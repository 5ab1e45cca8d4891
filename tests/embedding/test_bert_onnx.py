"""The safetensors -> ONNX converter on a tiny random BERT: key prefixes, dtypes, bad configs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from tiny_bert import CONFIG, HIDDEN, tiny_weights, write_safetensors  # noqa: E402

from kb_search.embedding.bert_onnx import (  # noqa: E402
    ConversionError,
    convert_bert_to_onnx,
    read_safetensors,
)


def _run(model_dir: Path, tensors: dict[str, np.ndarray], dtype: str = "F32") -> np.ndarray:
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps(CONFIG))
    write_safetensors(model_dir / "model.safetensors", tensors, dtype)
    onnx_path = convert_bert_to_onnx(
        model_dir / "config.json", model_dir / "model.safetensors", model_dir / "model.onnx"
    )
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    ids = np.array([[1, 5, 7, 9, 2], [1, 4, 2, 0, 0]], dtype=np.int64)
    mask = (ids != 0).astype(np.int64)
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    return session.run(None, feed)[0]


def test_key_prefix_is_ignored(tmp_path: Path) -> None:
    weights = tiny_weights()
    plain = _run(tmp_path / "plain", weights)
    prefixed = _run(tmp_path / "prefixed", {f"bert.{k}": v for k, v in weights.items()})
    assert plain.shape == (2, 5, HIDDEN)
    np.testing.assert_array_equal(plain, prefixed)


def test_padding_does_not_leak_into_real_tokens(tmp_path: Path) -> None:
    out = _run(tmp_path / "m", tiny_weights())
    model_dir = tmp_path / "m"
    session = ort.InferenceSession(
        str(model_dir / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    ids = np.array([[1, 4, 2]], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": ids * 0}
    unpadded = session.run(None, feed)[0]
    np.testing.assert_allclose(out[1, :3], unpadded[0], atol=1e-5)


@pytest.mark.parametrize("dtype", ["F16", "BF16"])
def test_half_precision_weights_are_widened(tmp_path: Path, dtype: str) -> None:
    weights = tiny_weights()
    write_safetensors(tmp_path / "w.safetensors", weights, dtype)
    widened = read_safetensors(tmp_path / "w.safetensors")
    for name, array in weights.items():
        assert widened[name].dtype == np.float32
        np.testing.assert_allclose(widened[name], array, rtol=1e-2, atol=1e-2)
    half = _run(tmp_path / "half", weights, dtype)
    full = _run(tmp_path / "full", widened)
    np.testing.assert_allclose(half, full, atol=1e-6)


def test_rejects_non_bert_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({**CONFIG, "model_type": "xlm-roberta"}))
    write_safetensors(tmp_path / "model.safetensors", tiny_weights())
    with pytest.raises(ConversionError, match="model_type"):
        convert_bert_to_onnx(
            tmp_path / "config.json", tmp_path / "model.safetensors", tmp_path / "m.onnx"
        )
