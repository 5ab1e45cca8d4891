"""Model variants: `<model>@<variant>` names a transformed copy of a model, e.g. int8 weights.

A variant is part of the model's name, so everything keyed by the name (the cache entry, the
DB's `model_name`, the per-model vector table) keeps its vectors apart from the base model's:
a database can never mix fp32 and int8 vectors.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SEPARATOR = "@"
INT8 = "int8"
VARIANTS = {
    INT8: "dynamic int8 quantisation of the weights, per output channel (onnxruntime)",
}


class UnknownVariantError(ValueError):
    """The name carries a variant this version of kb cannot build."""


def split_variant(name: str) -> tuple[str, str]:
    """`"org/model@INT8"` -> `("org/model", "int8")`; no variant -> `(name, "")`."""
    base, sep, variant = name.rpartition(SEPARATOR)
    if not sep or not base:
        return name, ""
    return base, variant.strip().lower()


def join_variant(base: str, variant: str) -> str:
    return f"{base}{SEPARATOR}{variant}" if variant else base


def check_variant(variant: str) -> None:
    if variant and variant not in VARIANTS:
        known = ", ".join(sorted(VARIANTS))
        raise UnknownVariantError(f"unknown model variant {variant!r} (known: {known})")


def missing_package(variant: str) -> str | None:
    """The package that building `variant` needs and this install lacks, if any: onnxruntime
    quantises through the onnx package (a dependency; missing only from a trimmed install)."""
    import importlib.util

    if variant == INT8 and importlib.util.find_spec("onnx") is None:
        return "onnx"
    return None


def apply_variant(model: bytes | Path, variant: str, output: Path) -> None:
    """Write the variant of `model` (a serialised graph or an .onnx file) to `output`."""
    check_variant(variant)
    if variant == INT8:
        quantize_int8(model, output)


def quantize_int8(model: bytes | Path, output: Path) -> None:
    """Per-channel symmetric int8 weights for MatMul and Gather; activations quantised at run
    time (uint8). Per-tensor scales cost retrieval quality (top-10 overlap fell to 0.75 on
    SciFact); per-channel keeps cosine to fp32 above 0.99."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet_root_logger():
        quantize_dynamic(
            str(model) if isinstance(model, Path) else onnx.load_model_from_string(model),
            str(output),
            per_channel=True,
            weight_type=QuantType.QInt8,
            # Our graph's Shape/Slice outputs have no inferred type; 1 = FLOAT for those.
            extra_options={"DefaultTensorType": 1},
        )


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """onnxruntime.quantization warns through the root logger; with no handler installed that
    would call basicConfig and leave a stderr handler on the caller's root logger for good."""
    import logging  # here: only quantising needs it, and a search imports this module

    root = logging.getLogger()
    handler = logging.NullHandler()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
