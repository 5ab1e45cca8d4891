"""PDF ingestion over the pypdfium2 text layer: layout-aware, page-aware chunks, no ML.

This module opens the file, reads its metadata, extracts each page and hands pages without a
usable text layer to OCR. ``layout`` turns a page's characters into fragments,
``furniture`` drops line numbers and running heads, ``reading_order`` makes lines in
reading order, ``outline`` reads the bookmarks;
``structure`` turns those lines into a title, headings, paragraphs and chunks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.formats import navigation
from kb_search.formats.pdf import furniture, slides, structure
from kb_search.formats.pdf import ocr as ocr_mod
from kb_search.formats.pdf.glyphs import (
    ACCENTS,
    GlyphNames,
    accent_on_letter,
    compose_accents,
    tex_logo,
)
from kb_search.formats.pdf.heading_checks import plain_bold_body
from kb_search.formats.pdf.layout import Frag, Page, page_fragments
from kb_search.formats.pdf.outline import read_outline
from kb_search.formats.pdf.reading_order import layout
from kb_search.formats.reader import open_document, read_document
from kb_search.formats.registry import Source
from kb_search.parsed import ChunkSettings, IngestError, NeedsOcr, ParsedDocument
from kb_search.store.ocr_queue import QUEUED_KEY
from kb_search.text import plural

OCR_MODES = ("auto", "always", "never")
# A page with this much text is read from its text layer alone, whatever images it holds.
MIXED_PAGE_MAX_ALNUM = 400
# A scan is an image covering at least this share of the page ...
SCAN_MIN_PAGE_SHARE = 0.5
# ... with fewer letters and digits of text layer over it than this (a stamp, a Bates number).
SCAN_MAX_TEXT_INSIDE = 20
# A stamp is small print; a glyph this tall (a share of the page height) over the image is
# display text set on a background picture (a slide's slogan), so the page is not a scan.
STAMP_MAX_HEIGHT_SHARE = 0.04
# An accent this share of its letter's width off the letter's centre is over no letter of it.
ACCENT_CENTRE_OFF = 0.25
MAX_ACCENT_RUNS = 500  # lone accents set back on their letters, per page
LETTER_CONTEXT = 3  # letters before an accented one that tell which of its kind it is
LETTER_REACH = 64  # characters, in the page's order, between an accent and its letter at most
PAGE_OBJECT_RE = re.compile(rb"/Type\s*/Page(?!s)")
# The characters PDFDocEncoding gives the bytes 0x80-0xA0 (the rest of its upper half is
# Latin-1's), by the byte: a UTF-8 sequence read as that encoding shows them.
PDFDOC_BYTES = {
    ch: 0x80 + i
    for i, ch in enumerate(
        "\u2022\u2020\u2021\u2026\u2014\u2013\u0192\u2044\u2039\u203a\u2212\u2030\u201e\u201c"
        "\u201d\u2018\u2019\u201a\u2122\ufb01\ufb02\u0141\u0152\u0160\u0178\u017d\u0131\u0142"
        "\u0153\u0161\u017e\ufffd\u20ac"
    )
}
# A UTF-8 lead byte of a Latin letter (0xC2-0xC5) read as 'Â', 'Ã', 'Ä' or 'Å', then a byte
# that continues it: how UTF-8 read as PDFDocEncoding or Latin-1 looks
MOJIBAKE_RE = re.compile("[\u00c2-\u00c5][\u00a0-\u00bf" + "".join(PDFDOC_BYTES) + "]")
PDF_DATE_RE = re.compile(
    r"^(D:)?(\d{4})(\d\d)?(\d\d)?(\d\d)?(\d\d)?(\d\d)?([Zz+\-])?(\d\d)?'?(\d\d)?"
)


# --------------------------------------------------------------------------- public API


def parse_pdf(
    path: Path,
    settings: ChunkSettings,
    count: TokenCounter = count_tokens,
    ocr: str = "auto",
    ocr_later: bool = False,
) -> ParsedDocument:
    """Parse a PDF into page-aware chunks; raises IngestError for files that cannot be used.

    `ocr_later` (with an OCR engine installed): the pages that need OCR are not read now but
    listed in the metadata (`ocr_queued_pages`), the chunks made of the text layer alone; the
    OCR phase parses the file again with OCR, which gives the chunks of a parse in one go.
    A PDF with no usable text layer then raises `NeedsOcr`."""
    if ocr not in OCR_MODES:
        raise ValueError(f"ocr must be one of {OCR_MODES}, not {ocr!r}")
    _check_header(path)
    doc = _open(path)
    glyphs = GlyphNames(lambda: open_document(path))
    try:
        page_count = len(doc)
        if page_count == 0:
            raise IngestError("PDF has no pages")
        metadata = _metadata(doc)
        outline = read_outline(doc)
        pages, ocr_info = _extract_pages(doc, ocr, glyphs, ocr_later)
    finally:
        glyphs.close()
        doc.close()
    metadata.update(ocr_info)
    queued = ocr_info.get(QUEUED_KEY)
    if not any(p.lines for p in pages):
        raise NeedsOcr(queued) if queued else IngestError(_no_text_message(ocr, ocr_info))
    body_size = structure.body_size(pages)
    plain_bold_body(pages, body_size)
    deck = slides.is_slide_deck(pages, body_size)
    if deck:
        slides.drop_off_page(pages)
    frame_titles = slides.frame_titles(pages) if deck else None
    furniture.remove_headers_footers(pages, keep=frame_titles)
    if deck:
        slides.merge_overlays(pages)
        slides.drop_navigation(pages, keep=frame_titles or set())
    title = structure.choose_title(metadata.get("title"), pages, body_size, path, outline)
    paras = structure.paragraphs(pages, body_size, title, outline, slides=deck)
    structure.fix_page_break_hyphens(paras)
    cut = structure.chunk(paras, settings, count)
    if not cut.chunks:
        raise NeedsOcr(queued) if queued else IngestError(_no_text_message(ocr, ocr_info))
    navigation.mark(cut.chunks)
    return ParsedDocument(
        title=title,
        doc_type="pdf",
        chunks=cut.chunks,
        metadata=metadata,
        page_count=page_count,
        notes=cut.notes,
    )


# --------------------------------------------------------------------------- opening


def _check_header(path: Path) -> None:
    try:
        head = read_document(path, 1024)
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
    if not head:
        raise IngestError("empty file (0 bytes), not a PDF")
    if b"%PDF-" not in head:
        raise IngestError("not a PDF: no %PDF- header (wrong extension?)")


def _open(path: Path) -> pdfium.PdfDocument:
    try:
        handle = open_document(path)
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
    try:
        return pdfium.PdfDocument(handle, autoclose=True)
    except pdfium.PdfiumError as exc:
        handle.close()
        code = getattr(exc, "err_code", None)
        if code == pdfium_c.FPDF_ERR_PASSWORD:
            raise IngestError("encrypted PDF: password required") from exc
        if code == pdfium_c.FPDF_ERR_SECURITY:
            raise IngestError("encrypted PDF: unsupported security handler") from exc
        # pdfium refuses an empty page tree without setting an error code, so look for one
        if code == pdfium_c.FPDF_ERR_SUCCESS or _empty_page_tree(path):
            raise IngestError("PDF has no pages") from exc
        if code == pdfium_c.FPDF_ERR_FILE:
            raise IngestError("cannot open file") from exc
        raise IngestError("broken PDF: truncated or damaged, cannot be parsed") from exc


def _empty_page_tree(path: Path) -> bool:
    try:
        data = read_document(path)
    except OSError:
        return False
    return re.search(rb"/Count\s+0\b", data) is not None and not PAGE_OBJECT_RE.search(data)


def _no_text_message(ocr: str, ocr_info: dict) -> str:
    if ocr == "never":
        return "no text layer and OCR is disabled (ocr=never)"
    skipped = ocr_info.get("ocr_skipped_pages")
    if skipped:
        pages = plural(len(skipped), "page")
        return f"no text layer on {pages} and no OCR engine is installed; {ocr_mod.HINT}"
    if ocr_info.get("ocr_pages"):
        return "no text found: no text layer and OCR recognised nothing"
    return "no extractable text"


def _metadata(doc: pdfium.PdfDocument) -> dict:
    try:
        raw = doc.get_metadata_dict(skip_empty=True)
    except Exception:  # damaged Info dictionaries must not stop ingestion
        raw = {}
    keys = {
        "Title": "title",
        "Author": "author",
        "Subject": "subject",
        "Keywords": "keywords",
        "Creator": "creator",
        "Producer": "producer",
        "CreationDate": "created",
        "ModDate": "modified",
    }
    meta: dict = {}
    for src, dst in keys.items():
        value = _clean_meta(raw.get(src, ""))
        if value:
            meta[dst] = _pdf_date(value) if dst in ("created", "modified") else value
    return meta


def _clean_meta(value: str) -> str:
    return re.sub(r"\s+", " ", _undo_mojibake(value.replace("\x00", ""))).strip()


def _undo_mojibake(value: str) -> str:
    """A field written as UTF-8 bytes without a byte order mark is read as PDFDocEncoding:
    'PrÃ©cis' for 'Précis'. Read back as the bytes it was and decoded as UTF-8, when that is
    what it was (the bytes are valid UTF-8, which text in that encoding seldom is)."""
    if not MOJIBAKE_RE.search(value):
        return value
    try:
        raw = bytes(PDFDOC_BYTES.get(ch, ord(ch)) for ch in value)
        return raw.decode("utf-8")
    except (ValueError, UnicodeDecodeError):  # a character beyond one byte: no mojibake
        return value


def _pdf_date(value: str) -> str:
    """'D:20230421160435+01'00'' -> '2023-04-21T16:04:35+01:00'; unparseable dates pass through."""
    m = PDF_DATE_RE.match(value)
    if not m:
        return value
    year, month, day = m.group(2), m.group(3) or "01", m.group(4) or "01"
    out = f"{year}-{month}-{day}"
    if m.group(5):
        out += f"T{m.group(5)}:{m.group(6) or '00'}:{m.group(7) or '00'}"
        tz = m.group(8)
        if tz in ("Z", "z"):
            out += "Z"
        elif tz and m.group(9):
            out += f"{tz}{m.group(9)}:{m.group(10) or '00'}"
    return out


# --------------------------------------------------------------------------- extraction


def _extract_pages(
    doc: pdfium.PdfDocument, ocr: str, glyphs: GlyphNames | None = None, later: bool = False
) -> tuple[list[Page], dict]:
    pages: list[Page] = []
    need_ocr: dict[int, list[Frag]] = {}  # page index -> its text-layer fragments
    stamped: set[int] = set()  # scan-like pages with a few words of text layer over the image
    broken: list[int] = []
    for index in range(len(doc)):
        try:
            page = doc[index]
        except pdfium.PdfiumError:
            broken.append(index + 1)
            pages.append(Page(index + 1, 0.0))
            continue
        width, height = page.get_size()
        names = glyphs.page(index) if glyphs is not None else None
        frags = furniture.drop_line_numbers(_accented(page, page_fragments(page, names)))
        if ocr == "always":
            need_ocr[index] = frags
        elif ocr == "auto" and (inside := _text_over_scan(page, frags, width, height)) is not None:
            need_ocr[index] = frags
            if inside:
                stamped.add(index)
        pages.append(Page(index + 1, height, layout(frags, index + 1, width), width))
        page.close()
    if broken and len(broken) == len(pages):
        raise IngestError("broken PDF: no page could be read")
    if stamped and len(need_ocr) * 2 < len(pages):
        # A born-digital document (most pages have their text) with a picture behind a few
        # words: those words are the page, not a stamp on a scan.
        need_ocr = {i: f for i, f in need_ocr.items() if i not in stamped}
    info: dict = {"unreadable_pages": broken} if broken else {}
    if need_ocr and ocr != "never":
        if later and ocr_mod.engine_installed() is not None:
            info[QUEUED_KEY] = [i + 1 for i in need_ocr]
        else:
            info.update(_run_ocr(doc, pages, need_ocr))
    return pages, info


def _run_ocr(doc: pdfium.PdfDocument, pages: list[Page], need_ocr: dict[int, list[Frag]]) -> dict:
    """OCR the pages in `need_ocr` and merge what it reads with their text layer: a typed header
    above a scanned body keeps both, in reading order, and a line the text layer already holds
    is not read twice."""
    engine = ocr_mod.get_engine()
    numbers = [i + 1 for i in need_ocr]
    if engine is None:
        return {"ocr_skipped_pages": numbers, "ocr_hint": ocr_mod.HINT}
    for index, text_frags in need_ocr.items():
        page = doc[index]
        width, _height = page.get_size()
        boxes = [(f.x0, f.y0, f.x1, f.y1) for f in text_frags if not f.rotated]
        frags = [
            Frag(line.text, line.x0, line.y0, line.x1, line.y1, 0.0)
            for line in ocr_mod.unseen_lines(ocr_mod.ocr_page(page, engine), boxes)
        ]
        page.close()
        if frags:
            pages[index].lines = layout(text_frags + frags, index + 1, width)
    return {"ocr_pages": numbers, "ocr_engine": engine.name}


def _accented(page: pdfium.PdfPage, frags: list[Frag]) -> list[Frag]:
    """Prose with TeX's spacing accents set back on their letters and its logo whole ('TEX',
    not 'TE X'); listings as they are."""
    frags = _accents_set_over(page, frags)
    prose = [frag for frag in frags if not frag.mono]
    for frag, text in zip(prose, compose_accents([frag.text for frag in prose])):
        frag.text = tex_logo(text)
    return frags


def _accents_set_over(page: pdfium.PdfPage, frags: list[Frag]) -> list[Frag]:
    """A spacing accent TeX drew after its word, back over the letter ('Kuster', then a '¨' over
    its 'u': 'Küster'), is read as a run of its own; it goes onto the letter centred under it on
    its line. An accent over no letter (an index mark 'ˇ' between words) stays where it is."""
    marks = [f for f in frags if not (f.mono or f.rotated) and f.text.strip() in ACCENTS]
    if not marks or len(marks) > MAX_ACCENT_RUNS or page.get_rotation() % 360:
        return frags
    words = [f for f in frags if not (f.mono or f.rotated) and len(f.text) > 1]
    height = page.get_size()[1]
    placed = set()
    textpage = page.get_textpage()
    try:
        for mark in marks:
            found = _letter_under(textpage, mark, height)
            if found is None:
                continue
            ch, x, y, before = found
            word = next((w for w in words if w.x0 <= x <= w.x1 and w.y0 <= y <= w.y1), None)
            if word is None or word.x1 <= word.x0:
                continue
            share = (x - word.x0) / (word.x1 - word.x0)
            text = accent_on_letter(word.text, mark.text.strip(), ch, share, before)
            if text is not None:
                word.text = text
                placed.add(id(mark))
    finally:
        textpage.close()
    return [f for f in frags if id(f) not in placed]


def _letter_under(
    textpage: pdfium.PdfTextPage, mark: Frag, height: float
) -> tuple[str, float, float, str] | None:
    """The letter on the accent's line whose centre lies under the accent's (a quarter of its
    width off at most), with that centre (top-left origin) and the letters just before it in
    the page's order; None when there is none. It is looked for near the accent in the page's
    character order: TeX draws it after its word."""
    raw = textpage.raw
    x, y = (mark.x0 + mark.x1) / 2, (mark.y0 + mark.y1) / 2
    reach = max(mark.x1 - mark.x0, 1.0)
    near = pdfium_c.FPDFText_GetCharIndexAtPos(raw, x, height - y, reach, reach)
    if near < 0:
        return None
    rect = pdfium_c.FS_RECTF()
    start, end = max(0, near - LETTER_REACH), min(textpage.count_chars(), near + LETTER_REACH + 1)
    for index in range(start, end):
        code = pdfium_c.FPDFText_GetUnicode(raw, index)
        if not (code < 0x110000 and chr(code).isalpha()):
            continue
        if not pdfium_c.FPDFText_GetLooseCharBox(raw, index, rect):
            continue
        x0, x1, y0, y1 = rect.left, rect.right, height - rect.top, height - rect.bottom
        centre = (x0 + x1) / 2
        if y0 <= y <= y1 and x1 > x0 and abs(centre - x) <= ACCENT_CENTRE_OFF * (x1 - x0):
            return chr(code), centre, (y0 + y1) / 2, _letters_before(raw, index)
    return None


def _letters_before(raw: pdfium_c.FPDF_TEXTPAGE, index: int) -> str:
    """Up to LETTER_CONTEXT letters just before the character, in the page's order."""
    out: list[str] = []
    for k in range(index - 1, max(-1, index - 1 - LETTER_CONTEXT), -1):
        code = pdfium_c.FPDFText_GetUnicode(raw, k)
        if not (code < 0x110000 and chr(code).isalpha()):
            break
        out.append(chr(code))
    return "".join(reversed(out))


def _text_over_scan(
    page: pdfium.PdfPage, frags: list[Frag], width: float, height: float
) -> int | None:
    """Letters and digits of text layer over a scan, or None when the page is no scan.

    A scan: an image covering most of the page with no text layer over it but a stamp (a typed
    header beside the image may exist). A blank page or a vector figure has no such image and is
    not a scan, whatever little text it has; nor is a picture with display text set over it."""
    alnum = sum(ch.isalnum() for f in frags for ch in f.text)
    if alnum >= MIXED_PAGE_MAX_ALNUM:
        return None
    page_area = max(width * height, 1.0)
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2):
        left, bottom, right, top = obj.get_bounds()
        if (right - left) * (top - bottom) < SCAN_MIN_PAGE_SHARE * page_area:
            continue
        # the image in the top-left coordinates of the fragments
        x0, y0, x1, y1 = left, height - top, right, height - bottom
        over = [f for f in frags if x0 <= (f.x0 + f.x1) / 2 <= x1 and y0 <= (f.y0 + f.y1) / 2 <= y1]
        inside = sum(ch.isalnum() for f in over for ch in f.text)
        display = any(f.size >= STAMP_MAX_HEIGHT_SHARE * height for f in over)
        if inside < SCAN_MAX_TEXT_INSIDE and not display:
            return inside
    return None


def parse_pdf_source(source: Source) -> ParsedDocument:
    """Docling's layout pipeline when its models are here, else the pypdfium2 text layer."""
    from kb_search.formats import docling

    if docling.docling_available("pdf") is None:
        try:
            parsed = docling.convert_with_docling(
                source.path, source.settings, source.count, source.ocr
            )
            navigation.mark(parsed.chunks)
            return parsed
        except IngestError:
            pass  # the text-layer path gives the clearer error (encrypted, truncated, ...)
    return parse_pdf(
        source.path, source.settings, count=source.count, ocr=source.ocr, ocr_later=source.ocr_later
    )
