"""Which onnxruntime execution provider runs the local models.

"auto" takes the first of CUDA, CoreML, DirectML that this onnxruntime build offers, else the
CPU. A forced one (`KB_PROVIDER`, the `embedding.provider` setting) that the build lacks is an
error, not a silent fallback: the user asked for that hardware.
"""

from __future__ import annotations

# Short names users type -> onnxruntime's provider names; "auto" tries them in this order.
SHORT_NAMES = {
    "cuda": "CUDAExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "directml": "DmlExecutionProvider",
    "dml": "DmlExecutionProvider",
    "rocm": "ROCMExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "cpu": "CPUExecutionProvider",
}
AUTO_ORDER = ("CUDAExecutionProvider", "CoreMLExecutionProvider", "DmlExecutionProvider")
CPU = "CPUExecutionProvider"


class ProviderUnavailable(ValueError):
    """The forced provider is not in this onnxruntime build."""


def available_providers() -> list[str]:
    import onnxruntime

    return list(onnxruntime.get_available_providers())


def choose_provider(requested: str, available: list[str]) -> str:
    """The provider to run: `requested` ("auto", a short name or onnxruntime's own name)
    checked against `available`."""
    wanted = (requested or "auto").strip()
    if wanted.lower() == "auto":
        return next((p for p in AUTO_ORDER if p in available), CPU)
    name = SHORT_NAMES.get(wanted.lower(), wanted)
    if name not in available:
        shown = ", ".join(short_name(p) for p in available)
        raise ProviderUnavailable(
            f"execution provider {wanted!r} is not available in this onnxruntime (it has:"
            f" {shown}): install the matching onnxruntime build, or unset KB_PROVIDER /"
            " embedding.provider"
        )
    return name


def session_providers(chosen: str) -> list[str]:
    """What an InferenceSession gets: the chosen provider, the CPU behind it for the
    operators it does not implement."""
    return [chosen] if chosen == CPU else [chosen, CPU]


def short_name(provider: str) -> str:
    return provider.removesuffix("ExecutionProvider").lower()
