"""The few ONNX protobuf messages kb writes and reads, in the protobuf wire format by hand.

kb writes one kind of ONNX file, the BERT graph of `bert_onnx`, and reads ONNX files only to
find weights kept outside the graph. The onnx package (28 MB with ml_dtypes) would be a
dependency for that alone; it stays an extra for int8 quantisation, which onnxruntime does
through it. Fields are written in field-number order with repeated scalars unpacked, as
protobuf's own serialiser does, so the bytes equal onnx's for the same model (tests compare).

Field numbers are those of onnx/onnx.proto (ModelProto, GraphProto, NodeProto, ...).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

# TensorProto.DataType
FLOAT = 1
INT64 = 7
_DATA_TYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.int64): INT64}
# AttributeProto.AttributeType
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


class OnnxFormatError(ValueError):
    """Bytes that are not the ONNX protobuf this module understands."""


# --- writing ------------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s are ten bytes of two's complement
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3 | _VARINT) + _varint(value)


def _float(field: int, value: float) -> bytes:
    return _varint(field << 3 | _FIXED32) + struct.pack("<f", value)


def _bytes(field: int, value: bytes) -> bytes:
    return _varint(field << 3 | _LENGTH) + _varint(len(value)) + value


def _str(field: int, value: str) -> bytes:
    return _bytes(field, value.encode("utf-8"))


def _dims(shape: Sequence[int]) -> bytes:
    return b"".join(_int(1, d) for d in shape)  # TensorProto.dims


def tensor(name: str, array: np.ndarray) -> bytes:
    """A TensorProto holding `array` (float32 or int64) as raw little-endian data."""
    array = np.ascontiguousarray(array)
    if array.dtype not in _DATA_TYPES:
        raise TypeError(f"no ONNX tensor type for {array.dtype}")
    raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return _dims(array.shape) + _int(2, _DATA_TYPES[array.dtype]) + _str(8, name) + _bytes(9, raw)


def external_tensor(
    name: str, shape: Sequence[int], location: str, offset: int, length: int
) -> bytes:
    """A float32 TensorProto whose values are `length` bytes at `offset` of the file
    `location`, beside the graph (ONNX external data)."""
    entries = b"".join(
        _bytes(13, _str(1, key) + _str(2, value))
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(length)))
    )
    return _dims(shape) + _int(2, FLOAT) + _str(8, name) + entries + _int(14, _EXTERNAL)


def _attribute(name: str, value: object) -> bytes:
    if isinstance(value, int | np.integer):  # bool too
        return _str(1, name) + _int(3, int(value)) + _int(20, _ATTR_INT)
    if isinstance(value, float):
        return _str(1, name) + _float(2, value) + _int(20, _ATTR_FLOAT)
    if isinstance(value, list | tuple) and all(isinstance(v, int) for v in value):
        return _str(1, name) + b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)
    raise TypeError(f"unsupported attribute {name}={value!r}")


def node(
    op_type: str, inputs: Sequence[str], outputs: Sequence[str], name: str = "", **attrs: object
) -> bytes:
    """A NodeProto; attributes in name order, as onnx.helper.make_node writes them."""
    return (
        b"".join(_str(1, i) for i in inputs)
        + b"".join(_str(2, o) for o in outputs)
        + (_str(3, name) if name else b"")
        + _str(4, op_type)
        + b"".join(_bytes(5, _attribute(k, v)) for k, v in sorted(attrs.items()))
    )


def value_info(name: str, elem_type: int, shape: Sequence[int | str]) -> bytes:
    """A ValueInfoProto for a tensor: each dimension a size or a symbolic name."""
    dims = b"".join(_bytes(1, _str(2, d) if isinstance(d, str) else _int(1, d)) for d in shape)
    tensor_type = _int(1, elem_type) + _bytes(2, dims)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def graph(
    nodes: Sequence[bytes],
    name: str,
    inputs: Sequence[bytes],
    outputs: Sequence[bytes],
    initializers: Sequence[bytes],
) -> bytes:
    return (
        b"".join(_bytes(1, n) for n in nodes)
        + _str(2, name)
        + b"".join(_bytes(5, t) for t in initializers)
        + b"".join(_bytes(11, i) for i in inputs)
        + b"".join(_bytes(12, o) for o in outputs)
    )


def model(graph_bytes: bytes, *, opset: int, ir_version: int, producer: str) -> bytes:
    """A ModelProto of one graph using the default operator set at version `opset`."""
    return (
        _int(1, ir_version)
        + _str(2, producer)
        + _bytes(7, graph_bytes)
        + _bytes(8, _str(1, "") + _int(2, opset))
    )


# --- reading ------------------------------------------------------------------------------------


def _read_varint(data: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise OnnxFormatError("truncated or malformed varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(data: memoryview) -> Iterator[tuple[int, int | memoryview, memoryview]]:
    """(field number, value, the field's whole encoding) for each field of a message; a
    length-delimited value is a view of its bytes, any other value an int."""
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = _read_varint(data, pos)
        wire = key & 7
        value: int | memoryview
        if wire == _VARINT:
            value, pos = _read_varint(data, pos)
        elif wire == _LENGTH:
            size, pos = _read_varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire in (_FIXED64, _FIXED32):
            width = 8 if wire == _FIXED64 else 4
            value, pos = int.from_bytes(data[pos : pos + width], "little"), pos + width
        else:
            raise OnnxFormatError(f"unsupported protobuf wire type {wire}")
        if pos > len(data):
            raise OnnxFormatError("truncated protobuf message")
        yield key >> 3, value, data[start:pos]


# Where tensors sit, message by message: field number -> the kind of message it holds. Walked to
# find every tensor that can keep its data outside (the ones onnx itself externalises).
_HOLDS: dict[str, dict[int, str]] = {
    "model": {7: "graph"},
    "graph": {1: "node", 5: "tensor", 15: "sparse"},  # nodes, initializers, sparse initializers
    "node": {5: "attribute"},
    "attribute": {5: "tensor", 10: "tensor", 6: "graph", 11: "graph", 22: "sparse", 23: "sparse"},
    "sparse": {1: "tensor", 2: "tensor"},  # values, indices
}


def inline_external_data(model_bytes: bytes, base_dir: Path) -> bytes | None:
    """The model with every tensor kept in a file beside it (ONNX external data: initializers,
    Constant nodes' values, subgraphs' tensors) read back in, or None when it has none."""
    changed = False

    def rewrite(message: memoryview, kind: str) -> bytes:
        nonlocal changed
        if kind == "tensor":
            inlined = _inline_tensor(message, base_dir)
            if inlined is not None:
                changed = True
                return inlined
            return bytes(message)
        out = bytearray()
        holds = _HOLDS[kind]
        for number, value, encoded in _fields(message):
            if number in holds and isinstance(value, memoryview):
                out += _bytes(number, rewrite(value, holds[number]))
            else:
                out += encoded
        return bytes(out)

    rewritten = rewrite(memoryview(model_bytes), "model")
    return rewritten if changed else None


def _inline_tensor(message: memoryview, base_dir: Path) -> bytes | None:
    kept, entries, external = bytearray(), {}, False
    for number, value, encoded in _fields(message):
        if number == 14:
            external = value == _EXTERNAL
        elif number == 13 and isinstance(value, memoryview):
            try:
                pair = {n: bytes(v).decode("utf-8") for n, v, _ in _fields(value) if n in (1, 2)}
            except UnicodeDecodeError as exc:
                raise OnnxFormatError(f"external data entry is not UTF-8: {exc}") from None
            entries[pair.get(1, "")] = pair.get(2, "")
        elif number != 9:
            kept += encoded
    if not external:
        return None
    location = entries.get("location", "")
    source = (base_dir / location).resolve()
    if not location or not source.is_relative_to(base_dir.resolve()):
        raise OnnxFormatError(f"external data location {location!r} is outside the model's folder")
    try:
        offset = int(entries.get("offset") or 0)
        length = int(entries["length"]) if entries.get("length") else None
    except ValueError:
        raise OnnxFormatError(
            f"external data of {location!r}: offset or length is not a number"
        ) from None
    with source.open("rb") as fh:
        fh.seek(offset)
        raw = fh.read(length) if length is not None else fh.read()
    if length is not None and len(raw) != length:
        raise OnnxFormatError(f"external data file {location!r} is shorter than the graph says")
    return bytes(kept) + _bytes(9, raw)
