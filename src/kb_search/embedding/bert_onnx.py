"""Build an ONNX graph for a BERT-family encoder straight from config.json + safetensors.

No torch: the weights are read from the safetensors file with numpy and the graph is built with
`onnx.helper`. Supports BertModel checkpoints (all-MiniLM, bge, e5 ...) with absolute position
embeddings and exact (erf) GELU. The encoder graph outputs `last_hidden_state`; pooling and
normalisation are done by the embedder. The classifier graph (a BertForSequenceClassification
cross-encoder, e.g. ms-marco-MiniLM, for reranking) adds the pooler and the classification layer
and outputs `logits` [batch, labels].

Two forms of the same graph:
- `weights_file` given (the fp32 model kb runs): every float32 tensor stays where it is in the
  safetensors file and the graph points at it (ONNX external data, by offset). onnxruntime
  memory-maps it: a session opens in ~15 ms instead of ~135 ms, and the model is not stored a
  second time. Linear layers are `Gemm` with transB, which reads PyTorch's [out, in] layout
  as it is.
- no `weights_file` (input to quantisation): weights inline, linear layers as `MatMul` + `Add`
  on transposed weights, the form onnxruntime's dynamic quantiser rewrites (it has no Gemm).
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from onnx import NodeProto, TensorProto, ValueInfoProto, helper, numpy_helper

OPSET = 17  # first opset with LayerNormalization
# Pinned so older onnxruntime builds can load the file.
IR_VERSION = 8
_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "F64": np.float64}
# Prefixes seen in the wild: bare BertModel, BertFor* wrappers, and a few re-exports.
_PREFIXES = ("", "bert.", "model.", "encoder.")


class ConversionError(ValueError):
    """The checkpoint is not a BERT-family encoder this converter understands."""


@dataclass(frozen=True)
class BertConfig:
    hidden_size: int
    num_layers: int
    num_heads: int
    layer_norm_eps: float

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        raw = json.loads(path.read_text(encoding="utf-8"))
        model_type = raw.get("model_type", "bert")
        if model_type != "bert":
            raise ConversionError(f"unsupported model_type {model_type!r} (only BERT-family)")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ConversionError("only absolute position embeddings are supported")
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ConversionError(f"unsupported hidden_act {raw.get('hidden_act')!r}")
        return cls(
            hidden_size=int(raw["hidden_size"]),
            num_layers=int(raw["num_hidden_layers"]),
            num_heads=int(raw["num_attention_heads"]),
            layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
        )


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Read all tensors as float32 numpy arrays (F16 and BF16 are widened)."""
    return {name: tensor.array for name, tensor in _read_tensors(path).items()}


@dataclass(frozen=True)
class _Tensor:
    array: np.ndarray  # float32
    offset: int | None  # where its bytes start in the file, when stored as float32; else None
    length: int


def _read_tensors(path: Path) -> dict[str, _Tensor]:
    data = np.memmap(path, dtype=np.uint8, mode="r")
    (header_len,) = struct.unpack("<Q", bytes(data[:8]))
    header = json.loads(bytes(data[8 : 8 + header_len]))
    base = 8 + header_len
    tensors: dict[str, _Tensor] = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] not in _DTYPES:
            continue  # e.g. int64 position_ids buffers, not weights
        start, end = meta["data_offsets"]
        raw = np.frombuffer(data[base + start : base + end], dtype=_DTYPES[meta["dtype"]])
        # float32 stays a view of the mapped file: only the tensors built inline are read.
        array = _to_float32(raw, meta["dtype"]).reshape(meta["shape"])
        in_place = meta["dtype"] == "F32" and (base + start) % 4 == 0
        tensors[name] = _Tensor(array, base + start if in_place else None, end - start)
    return tensors


def _to_float32(raw: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "BF16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    return raw.astype(np.float32, copy=False)


class _Weights:
    """Looks tensors up by their BertModel name, whatever prefix the checkpoint uses."""

    def __init__(self, tensors: dict[str, _Tensor]) -> None:
        self._tensors = tensors
        self._prefix = self._find_prefix()

    def _find_prefix(self) -> str:
        for prefix in _PREFIXES:
            if f"{prefix}embeddings.word_embeddings.weight" in self._tensors:
                return prefix
        raise ConversionError("no embeddings.word_embeddings.weight in checkpoint")

    def get(self, name: str) -> np.ndarray:
        return self.tensor(name).array

    def tensor(self, name: str) -> _Tensor:
        # The classification layer sits beside the encoder ("classifier.weight" next to
        # "bert.embeddings..."), not under its prefix.
        key = name if name.startswith("classifier.") else self._prefix + name
        if key in self._tensors:
            return self._tensors[key]
        # Old TF-ported checkpoints name LayerNorm parameters gamma/beta.
        legacy = key.replace("LayerNorm.weight", "LayerNorm.gamma").replace(
            "LayerNorm.bias", "LayerNorm.beta"
        )
        if legacy in self._tensors:
            return self._tensors[legacy]
        raise ConversionError(f"missing tensor {key!r} in checkpoint")


HEADS = ("encoder", "classifier")


def external_tensor(
    name: str, shape: tuple[int, ...], location: str, offset: int, length: int
) -> TensorProto:
    """A float32 initializer whose values are `length` bytes at `offset` of the file `location`
    beside the graph (ONNX external data). onnx.external_data_helper.set_external_data wants the
    values in memory first; these are never read."""
    tensor = TensorProto(
        name=name, data_type=TensorProto.FLOAT, dims=shape, data_location=TensorProto.EXTERNAL
    )
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        tensor.external_data.add(key=key, value=str(value))
    return tensor


class _GraphBuilder:
    def __init__(
        self, weights: _Weights, config: BertConfig, weights_file: str | None, head: str
    ) -> None:
        self.w = weights
        self.cfg = config
        self.weights_file = weights_file  # external data: the safetensors file's name
        self.head = head
        self.nodes: list[NodeProto] = []
        self.inits: list[TensorProto] = []
        self._n = 0

    def _name(self, hint: str) -> str:
        self._n += 1
        return f"{hint}_{self._n}"

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def weight(self, key: str, name: str | None = None) -> str:
        """A checkpoint tensor as an initializer: a reference into the safetensors file when
        building with external data and it is stored there as float32, else its values."""
        tensor = self.w.tensor(key)
        name = name or key
        if self.weights_file is None or tensor.offset is None:
            return self.const(name, tensor.array)
        self.inits.append(
            external_tensor(
                name, tensor.array.shape, self.weights_file, tensor.offset, tensor.length
            )
        )
        return name

    def op(self, op_type: str, inputs: list[str], hint: str, **attrs: object) -> str:
        out = self._name(hint)
        self.nodes.append(helper.make_node(op_type, inputs, [out], out, **attrs))
        return out

    def linear(self, x: str, name: str) -> str:
        """x [tokens, in] -> [tokens, out]."""
        bias = self.weight(f"{name}.bias")
        if self.weights_file is not None:
            weight = self.weight(f"{name}.weight")
            return self.op("Gemm", [x, weight, bias], name, transB=1)
        weight = self.const(f"{name}.weight_t", self.w.get(f"{name}.weight").T)
        return self.op("Add", [self.op("MatMul", [x, weight], name), bias], name)

    def layer_norm(self, x: str, name: str) -> str:
        scale = self.weight(f"{name}.weight")
        bias = self.weight(f"{name}.bias")
        return self.op(
            "LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=self.cfg.layer_norm_eps
        )

    def gelu(self, x: str) -> str:
        # Exact GELU, 0.5 * x * (1 + erf(x / sqrt(2))), written in the exact shape (Div, not Mul)
        # that onnxruntime's GeluFusion matches, so it runs as one kernel.
        erf = self.op("Erf", [self.op("Div", [x, "c_sqrt2"], "gelu")], "gelu")
        one_plus_erf = self.op("Add", [erf, "c_one"], "gelu")
        return self.op("Mul", [self.op("Mul", [x, one_plus_erf], "gelu"), "c_half"], "gelu")

    def embeddings(self) -> str:
        word = self.weight("embeddings.word_embeddings.weight", "word_embeddings")
        pos = self.weight("embeddings.position_embeddings.weight", "position_embeddings")
        types = self.weight("embeddings.token_type_embeddings.weight", "token_type_embeddings")
        # Rows 0..S-1 of the position table: Slice needs no Range/scalar juggling.
        seq_len = self.op("Shape", ["input_ids"], "seq", start=1, end=2)
        positions = self.op("Slice", [pos, "c_zero_1d", seq_len, "c_zero_1d"], "pos")
        tokens = self.op("Gather", [word, "input_ids"], "word")
        segments = self.op("Gather", [types, "token_type_ids"], "type")
        summed = self.op("Add", [self.op("Add", [tokens, segments], "emb"), positions], "emb")
        # The layers work on [tokens, hidden] (every batch row's positions, one after another).
        flat = self.op("Reshape", [summed, "c_tokens_shape"], "emb")
        return self.layer_norm(flat, "embeddings.LayerNorm")

    def attention_bias(self) -> str:
        # [B, S] 1/0 mask -> [B, 1, 1, S] additive bias: 0 where attended, very negative elsewhere.
        mask = self.op("Cast", ["attention_mask"], "mask", to=1)
        inverted = self.op("Sub", ["c_one", mask], "mask")
        bias = self.op("Mul", [inverted, "c_neg_big"], "mask")
        return self.op("Unsqueeze", [bias, "c_axes_1_2"], "mask")

    def split_heads(self, x: str, perm: list[int]) -> str:
        reshaped = self.op("Reshape", [x, "heads_shape"], "heads")
        return self.op("Transpose", [reshaped], "heads", perm=perm)

    def self_attention(self, x: str, bias: str, prefix: str) -> str:
        q = self.split_heads(self.linear(x, f"{prefix}.query"), [0, 2, 1, 3])
        k = self.split_heads(self.linear(x, f"{prefix}.key"), [0, 2, 3, 1])
        v = self.split_heads(self.linear(x, f"{prefix}.value"), [0, 2, 1, 3])
        scores = self.op("Mul", [self.op("MatMul", [q, k], "scores"), "c_attn_scale"], "scores")
        probs = self.op("Softmax", [self.op("Add", [scores, bias], "scores")], "probs", axis=-1)
        context = self.op("MatMul", [probs, v], "ctx")
        context = self.op("Transpose", [context], "ctx", perm=[0, 2, 1, 3])
        return self.op("Reshape", [context, "c_tokens_shape"], "ctx")

    def layer(self, x: str, bias: str, index: int) -> str:
        p = f"encoder.layer.{index}"
        context = self.self_attention(x, bias, f"{p}.attention.self")
        attn = self.linear(context, f"{p}.attention.output.dense")
        x = self.layer_norm(self.op("Add", [attn, x], "res"), f"{p}.attention.output.LayerNorm")
        hidden = self.gelu(self.linear(x, f"{p}.intermediate.dense"))
        out = self.linear(hidden, f"{p}.output.dense")
        return self.layer_norm(self.op("Add", [out, x], "res"), f"{p}.output.LayerNorm")

    def classifier(self, x: str) -> ValueInfoProto:
        """[tokens, hidden] -> logits [batch, labels]: the [CLS] row of each sequence through
        the pooler (dense + tanh) and the classification layer. Returns the output's info."""
        try:
            labels = self.w.tensor("classifier.weight").array.shape[0]
        except ConversionError:
            raise ConversionError(
                "no classifier.weight in checkpoint: not a sequence-classification"
                " (cross-encoder) model"
            ) from None
        hidden = self.op("Reshape", [x, "hidden_shape"], "cls")
        first = self.op("Gather", [hidden, "c_zero_1d"], "cls", axis=1)  # [batch, 1, hidden]
        first = self.op("Reshape", [first, "c_tokens_shape"], "cls")  # [batch, hidden]
        pooled = self.op("Tanh", [self.linear(first, "pooler.dense")], "pooler")
        self.nodes.append(
            helper.make_node("Identity", [self.linear(pooled, "classifier")], ["logits"])
        )
        return helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", labels])

    def add_constants(self) -> None:
        cfg = self.cfg
        head_dim = cfg.hidden_size // cfg.num_heads
        f32 = np.float32
        self.const("c_one", np.array(1.0, f32))
        self.const("c_half", np.array(0.5, f32))
        self.const("c_sqrt2", np.array(math.sqrt(2), f32))
        self.const("c_neg_big", np.array(np.finfo(f32).min, f32))
        self.const("c_attn_scale", np.array(1 / math.sqrt(head_dim), f32))
        self.const("c_zero_1d", np.array([0], np.int64))
        self.const("c_axes_1_2", np.array([1, 2], np.int64))
        self.const("c_heads_tail", np.array([cfg.num_heads, head_dim], np.int64))
        self.const("c_hidden_tail", np.array([cfg.hidden_size], np.int64))
        self.const("c_tokens_shape", np.array([-1, cfg.hidden_size], np.int64))
        batch_seq = self.op("Shape", ["input_ids"], "batch_seq")
        for tail, shape in (("c_heads_tail", "heads_shape"), ("c_hidden_tail", "hidden_shape")):
            self.nodes.append(helper.make_node("Concat", [batch_seq, tail], [shape], axis=0))

    def build(self) -> bytes:
        self.add_constants()
        bias = self.attention_bias()
        x = self.embeddings()
        for index in range(self.cfg.num_layers):
            x = self.layer(x, bias, index)
        inputs = [
            helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
            for n in ("input_ids", "attention_mask", "token_type_ids")
        ]
        if self.head == "classifier":
            output = self.classifier(x)
        else:
            self.nodes.append(
                helper.make_node("Reshape", [x, "hidden_shape"], ["last_hidden_state"])
            )
            output = helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", self.cfg.hidden_size]
            )
        graph = helper.make_graph(self.nodes, "bert_encoder", inputs, [output], self.inits)
        # make_graph and make_model copy: inline weights (the quantiser's input) are 90 MB for
        # MiniLM, so each copy is let go as soon as the next exists.
        self.nodes, self.inits = [], []
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION,
            producer_name="kb-search",
        )
        graph.Clear()
        return model.SerializeToString()


def build_bert_onnx(
    config_path: Path, weights_path: Path, weights_file: str | None = None, head: str = "encoder"
) -> bytes:
    """Return the serialised ONNX model equivalent to BertModel(...).last_hidden_state, or with
    head="classifier" to BertForSequenceClassification(...).logits.

    With `weights_file`, float32 tensors are referenced in place: the graph must then be saved
    next to a copy or link of `weights_path` under that name (see the module docstring).
    onnxruntime validates the graph when it opens it."""
    if head not in HEADS:
        raise ValueError(f"unknown head {head!r}: use one of {', '.join(HEADS)}")
    config = BertConfig.from_file(config_path)
    if config.hidden_size % config.num_heads:
        raise ConversionError("hidden_size is not divisible by num_attention_heads")
    weights = _Weights(_read_tensors(weights_path))
    return _GraphBuilder(weights, config, weights_file, head).build()


def convert_bert_to_onnx(
    config_path: Path, weights_path: Path, output_path: Path, head: str = "encoder"
) -> Path:
    """Convert a BERT safetensors checkpoint and write it to output_path (not atomic), its
    float32 weights referenced in `weights_path` itself, which must stay beside it."""
    if weights_path.parent.resolve() != output_path.parent.resolve():
        raise ValueError("the graph must be written beside its safetensors file")
    output_path.write_bytes(build_bert_onnx(config_path, weights_path, weights_path.name, head))
    return output_path
