"""OCR for PDF pages that have no text layer.

The engine is optional. RapidOCR (``rapidocr_onnxruntime``) is used because its wheel ships the
detection/recognition models and runs on onnxruntime: nothing is downloaded at run time and no
torch is needed. Install it with the ``ocr`` extra.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pypdfium2 as pdfium

OCR_INSTALL_HINT = "install the OCR extra to enable it: pip install 'kb-search[ocr]'"

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


class _RapidOcr:
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


@lru_cache(maxsize=1)
def get_engine() -> OcrEngine | None:
    """The installed OCR engine, or None when no engine is installed."""
    try:
        engine = _RapidOcr()
    except ImportError:
        return None
    logging.getLogger("RapidOCR").setLevel(logging.WARNING)
    return engine


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
