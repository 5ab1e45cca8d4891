"""kb's hand-written ONNX protobuf (embedding/onnx_proto.py): the bytes equal the onnx package's
for the same messages, converted graphs pass onnx's checker, external weights are read back
in, and the default install converts and runs a model without the onnx package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from tiny_bert import CONFIG, tiny_weights, write_checkpoint  # noqa: E402

from kb_search.embedding import onnx_proto  # noqa: E402
from kb_search.embedding.bert_onnx import build_bert_onnx  # noqa: E402
from kb_search.embedding.onnx_proto import OnnxFormatError, inline_external_data  # noqa: E402


@pytest.mark.parametrize(
    "attrs",
    [{}, {"axis": -1}, {"epsilon": 1e-12}, {"perm": [0, 2, 1, 3]}, {"to": 1, "axis": 0}],
)
def test_node_bytes_equal_onnx_helper(attrs: dict) -> None:
    ours = onnx_proto.node("Op", ["a", "b"], ["c"], "c", **attrs)
    theirs = helper.make_node("Op", ["a", "b"], ["c"], name="c", **attrs)
    assert ours == theirs.SerializeToString()
    assert (
        onnx_proto.node("Op", ["a"], ["b"])
        == helper.make_node("Op", ["a"], ["b"]).SerializeToString()
    )


@pytest.mark.parametrize(
    "array",
    [
        np.array(0.5, np.float32),
        np.array(np.finfo(np.float32).min, np.float32),
        np.array([-1, 384], np.int64),
        np.arange(24, dtype=np.float32).reshape(2, 3, 4),
        np.arange(6, dtype=np.float32).reshape(2, 3).T,  # not contiguous
    ],
)
def test_tensor_bytes_equal_numpy_helper(array: np.ndarray) -> None:
    theirs = numpy_helper.from_array(np.ascontiguousarray(array), "t")
    assert onnx_proto.tensor("t", array) == theirs.SerializeToString()


def test_other_messages_equal_onnx() -> None:
    external = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3, 2])
    external.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.safetensors"), ("offset", "128"), ("length", "24")):
        entry = external.external_data.add()
        entry.key, entry.value = key, value
    ours_external = onnx_proto.external_tensor("w", (3, 2), "weights.safetensors", 128, 24)
    assert ours_external == external.SerializeToString()

    info = helper.make_tensor_value_info("x", TensorProto.INT64, ["batch", 7])
    assert onnx_proto.value_info("x", onnx_proto.INT64, ["batch", 7]) == info.SerializeToString()

    node = helper.make_node("Identity", ["x"], ["y"], name="n")
    out = helper.make_tensor_value_info("y", TensorProto.INT64, ["batch", 7])
    init = numpy_helper.from_array(np.array([1], np.int64), "k")
    graph = helper.make_graph([node], "g", [info], [out], [init])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8, producer_name="kb"
    )
    ours_graph = onnx_proto.graph(
        [onnx_proto.node("Identity", ["x"], ["y"], "n")],
        "g",
        [onnx_proto.value_info("x", onnx_proto.INT64, ["batch", 7])],
        [onnx_proto.value_info("y", onnx_proto.INT64, ["batch", 7])],
        [onnx_proto.tensor("k", np.array([1], np.int64))],
    )
    ours = onnx_proto.model(ours_graph, opset=17, ir_version=8, producer="kb")
    assert ours == model.SerializeToString()


def test_unsupported_values_are_refused() -> None:
    with pytest.raises(TypeError):
        onnx_proto.tensor("t", np.zeros(2, np.float16))
    with pytest.raises(TypeError):
        onnx_proto.node("Op", [], [], mode="linear")


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
    assert model.SerializeToString() == data  # nothing onnx would encode differently
    stored = {t.data_location for t in model.graph.initializer}
    assert (onnx.TensorProto.EXTERNAL in stored) is external
    (source / "model.onnx").write_bytes(data)
    onnx.checker.check_model(str(source / "model.onnx"))  # resolves external data beside it


def _run(path: Path) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ids = np.array([[1, 5, 7, 2]], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": ids * 0}
    return session.run(None, feed)[0]


def test_external_weights_are_read_back_in(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "tiny")
    graph = build_bert_onnx(
        source / "config.json", source / "model.safetensors", "model.safetensors"
    )
    (source / "model.onnx").write_bytes(graph)
    inlined = inline_external_data(graph, source)
    assert inlined is not None
    model = onnx.load_model_from_string(inlined)
    assert all(t.data_location != onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    assert all(not t.external_data for t in model.graph.initializer)
    arrays = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    weights = tiny_weights()
    np.testing.assert_array_equal(
        arrays["word_embeddings"], weights["embeddings.word_embeddings.weight"]
    )
    key = "encoder.layer.1.output.dense.weight"
    np.testing.assert_array_equal(arrays[key], weights[key])
    (tmp_path / "alone.onnx").write_bytes(inlined)  # no weights file beside it
    np.testing.assert_array_equal(_run(tmp_path / "alone.onnx"), _run(source / "model.onnx"))
    assert inline_external_data(inlined, source) is None  # nothing left outside


def test_every_external_tensor_is_read_back_in(tmp_path: Path) -> None:
    """Not only initializers: onnx also moves a Constant node's value (and a subgraph's
    tensors) out to the weights file."""
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
    saved = (folder / "model.onnx").read_bytes()
    assert b"w.bin" in saved  # both tensors really are outside
    inlined = inline_external_data(saved, folder)
    assert inlined is not None and b"w.bin" not in inlined
    (tmp_path / "alone.onnx").write_bytes(inlined)
    session = ort.InferenceSession(str(tmp_path / "alone.onnx"), providers=["CPUExecutionProvider"])
    out = session.run(None, {"x": np.array([1.0, 1.0, 1.0], np.float32)})[0]
    np.testing.assert_array_equal(out, [1.0, -3.0, 16.0])


def _external_graph(location: str, length: int) -> bytes:
    tensor = onnx_proto.external_tensor("w", (2,), location, 0, length)
    graph = onnx_proto.graph([], "g", [], [], [tensor])
    return onnx_proto.model(graph, opset=17, ir_version=8, producer="test")


def test_external_data_outside_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b"12345678")
    (tmp_path / "model").mkdir()
    with pytest.raises(OnnxFormatError, match="outside the model's folder"):
        inline_external_data(_external_graph("../secret", 8), tmp_path / "model")
    (tmp_path / "model" / "short.bin").write_bytes(b"1234")
    with pytest.raises(OnnxFormatError, match="shorter"):
        inline_external_data(_external_graph("short.bin", 8), tmp_path / "model")


def test_external_data_entries_that_are_not_numbers_are_refused(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(b"12345678")
    entries = b"".join(
        onnx_proto._bytes(13, onnx_proto._str(1, k) + onnx_proto._str(2, v))
        for k, v in (("location", "w.bin"), ("offset", "zero"), ("length", "8"))
    )
    tensor = onnx_proto._int(1, 2) + onnx_proto._int(2, onnx_proto.FLOAT) + entries
    tensor += onnx_proto._int(14, 1)
    model = onnx_proto.model(onnx_proto.graph([], "g", [], [], [tensor]), opset=17,
                             ir_version=8, producer="test")  # fmt: skip
    with pytest.raises(OnnxFormatError, match="not a number"):
        inline_external_data(model, tmp_path)


def test_bytes_that_are_not_protobuf_are_refused(tmp_path: Path) -> None:
    graph = _external_graph("w.bin", 8)
    with pytest.raises(OnnxFormatError):
        inline_external_data(graph[:12], tmp_path)  # cut inside the graph
    with pytest.raises(OnnxFormatError):
        inline_external_data(b"\x0f\x00", tmp_path)  # wire type 7 does not exist


def test_default_install_converts_without_the_onnx_package(tmp_path: Path) -> None:
    """fp32 needs no onnx: a process where it cannot be imported still converts and embeds; the
    int8 variant, which does need it, says which extra to install and caches nothing."""
    source = write_checkpoint(tmp_path / "tiny")
    cache = tmp_path / "cache"
    script = f"""
import json, sys
from pathlib import Path
sys.modules["onnx"] = None  # as if not installed: import fails, find_spec finds nothing
from kb_search.embedding import Embedder, ModelNotAvailableError, provision_model
info = provision_model("test/tiny", Path({str(cache)!r}), Path({str(source)!r}))
vector = Embedder(info, threads=1).embed_query("alpha beta")
try:
    provision_model("test/tiny@int8", Path({str(cache)!r}), Path({str(source)!r}))
    error = None
except ModelNotAvailableError as exc:
    error = str(exc)
print(json.dumps({{"dim": len(vector), "error": error}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=dict(os.environ)
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["dim"] == CONFIG["hidden_size"]
    assert "kb-search[int8]" in result["error"] and "\n" not in result["error"]
    assert sorted(p.name for p in cache.iterdir()) == ["test--tiny"]
