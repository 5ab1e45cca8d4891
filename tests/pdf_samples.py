"""Small PDFs generated on the fly with reportlab (a test dependency)."""

from __future__ import annotations

from pathlib import Path

from reportlab.lib.pagesizes import A4
from reportlab.pdfgen.canvas import Canvas

WIDTH, HEIGHT = A4

# One page: (x, y from the top, text, font, size) draw calls, in content-stream order.
Draw = tuple[float, float, str, str, float]
PageSpec = list[Draw]

VOCAB = ["search", "index", "query", "vector", "token", "chunk", "model", "ranking", "corpus"]


def words(n: int, marker: str = "") -> str:
    """n words of filler; every seventh carries the marker so a test can find them."""
    out = [VOCAB[i % len(VOCAB)] for i in range(n)]
    if marker:
        out = [f"{marker}{i}" if i % 7 == 0 else w for i, w in enumerate(out)]
    return " ".join(out)


def lines_of(text: str, per_line: int = 9) -> list[str]:
    tokens = text.split()
    return [" ".join(tokens[i : i + per_line]) for i in range(0, len(tokens), per_line)]


def body(lines: list[str], x: float = 72, top: float = 100, size: float = 11) -> PageSpec:
    return [(x, top + i * size * 1.3, line, "Helvetica", size) for i, line in enumerate(lines)]


def write_pdf(path: Path, pages: list[PageSpec], title: str | None = None) -> Path:
    canvas = Canvas(str(path), pagesize=A4)
    if title:
        canvas.setTitle(title)
    canvas.setAuthor("Test Author")
    for page in pages:
        for x, y, text, font, size in page:
            canvas.setFont(font, size)
            canvas.drawString(x, HEIGHT - y, text)
        canvas.showPage()
    canvas.save()
    return path


def write_objects(path: Path, objects: list[bytes], version: bytes = b"1.4") -> Path:
    """A PDF written object by object (numbered from 1, the catalog first), with its cross-
    reference table: for what reportlab cannot draw (a font without glyph boxes, a ToUnicode
    map of one's own)."""
    out, offsets = bytearray(b"%PDF-" + version + b"\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))
    return path
