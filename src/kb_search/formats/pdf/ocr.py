"""OCR for PDF pages that have no text layer.

The engine is optional: RapidOCR runs PaddleOCR's models on onnxruntime, and its wheels ship
those models, so nothing is downloaded at run time and no torch is needed. It is not in the
default install because it brings OpenCV: about 230 MB, measured in a fresh venv (see README).
``rapidocr_onnxruntime`` (Python < 3.13, the faster here) is used when present, else the newer
``rapidocr`` (Python 3.8-3.13+). The ``ocr`` extra installs whichever fits the Python.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pypdfium2 as pdfium

OCR_INSTALL_HINT = "install the OCR extra to read such pages: pip install 'kb-search[ocr]'"
HINT = OCR_INSTALL_HINT
ENGINE_MODULES = ("rapidocr_onnxruntime", "rapidocr")

# Render resolution: ~150 dpi is enough for body text, and the detector's cost grows with pixels.
DEFAULT_DPI = 150
MAX_SIDE_PX = 2000
MIN_SCORE = 0.5


@dataclass(frozen=True)
class OcrLine:
    """One recognised line, in PDF points with the origin at the top-left of the page."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    score: float


class OcrEngine(Protocol):
    name: str

    def recognize(self, image: Any) -> list[tuple[list[list[float]], str, float]]:
        """Boxes (4 corner points in pixels), text and confidence for one BGR image."""
        ...


class _RapidOcrOnnxruntime:
    name = "rapidocr_onnxruntime"

    def __init__(self) -> None:
        from rapidocr_onnxruntime import RapidOCR

        self._engine = RapidOCR()
        # The engine keeps per-call state; kb runs one OCR at a time per process.
        self._lock = threading.Lock()

    def recognize(self, image: Any) -> list[tuple[list[list[float]], str, float]]:
        with self._lock:
            result, _elapsed = self._engine(image)
        return [(box, text, float(score)) for box, text, score in (result or [])]


class _RapidOcr:
    name = "rapidocr"

    def __init__(self) -> None:
        from rapidocr import RapidOCR

        self._engine = RapidOCR(params={"Global.log_level": "warning"})
        self._lock = threading.Lock()

    def recognize(self, image: Any) -> list[tuple[list[list[float]], str, float]]:
        with self._lock:
            result = self._engine(image)
        if result.boxes is None or result.txts is None:
            return []
        return [
            ([[float(x), float(y)] for x, y in box], text, float(score))
            for box, text, score in zip(result.boxes, result.txts, result.scores or ())
        ]


def engine_installed() -> str | None:
    """The name of the installed OCR engine package, without loading its models."""
    return next((m for m in ENGINE_MODULES if importlib.util.find_spec(m) is not None), None)


@lru_cache(maxsize=1)
def get_engine() -> OcrEngine | None:
    """The installed OCR engine, or None when no engine is installed."""
    for engine_class in (_RapidOcrOnnxruntime, _RapidOcr):
        try:
            engine = engine_class()
        except ImportError:
            continue
        logging.getLogger("RapidOCR").setLevel(logging.WARNING)
        return engine
    return None


def render_scale(width_pt: float, height_pt: float, dpi: int = DEFAULT_DPI) -> float:
    scale = dpi / 72
    longest = max(width_pt, height_pt) * scale
    if longest > MAX_SIDE_PX:
        scale *= MAX_SIDE_PX / longest
    return scale


def ocr_page(page: pdfium.PdfPage, engine: OcrEngine, dpi: int = DEFAULT_DPI) -> list[OcrLine]:
    """Render one page and recognise its text lines."""
    width, height = page.get_size()
    scale = render_scale(width, height, dpi)
    image = page.render(scale=scale).to_numpy()
    lines = []
    for box, text, score in engine.recognize(image):
        text = text.strip()
        if not text or score < MIN_SCORE:
            continue
        xs = [p[0] / scale for p in box]
        ys = [p[1] / scale for p in box]
        lines.append(OcrLine(text, min(xs), min(ys), max(xs), max(ys), score))
    return lines


Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in points, origin top-left


def unseen_lines(
    lines: list[OcrLine], text_boxes: list[Box], covered: float = 0.5
) -> list[OcrLine]:
    """The recognised lines the page's text layer does not already hold: a line whose box is
    mostly (`covered`) under text-layer boxes is that text, read worse."""
    return [line for line in lines if _covered_share(line, text_boxes) < covered]


def _covered_share(line: OcrLine, boxes: list[Box]) -> float:
    area = max((line.x1 - line.x0) * (line.y1 - line.y0), 1e-6)
    overlap = sum(
        max(0.0, min(line.x1, x1) - max(line.x0, x0))
        * max(0.0, min(line.y1, y1) - max(line.y0, y0))
        for x0, y0, x1, y1 in boxes
    )
    return min(overlap / area, 1.0)
