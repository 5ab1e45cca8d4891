"""Docling, an optional extra: DOCX, PPTX, XLSX offline; PDFs when its models are here. (HTML
pages are read by `cleaning.read_html`, which knows their source lines; Docling's HTML backend
stays reachable through `convert_with_docling`.)

Office and HTML files go straight to Docling's declarative backends (what its SimplePipeline
does), not through ``DocumentConverter``: that module imports torch and every model pipeline
(about 11 s and a few hundred MB per worker), which these formats never use. So the small
``docling-slim[format-office,format-html]`` install is enough for them. PDFs need the full
``docling`` (torch) and its layout models on disk; without them the pypdfium2 path stays.

The converted Markdown is cleaned by the shared rules (``cleaning.clean_markdown_lines``) and
chunked by ``parse_markdown``; chunks know their pages (PDF pages,
PPTX slides, XLSX sheets) but carry no line range, as the lines are not the file's lines.
"""

from __future__ import annotations

import functools
import html
import importlib
import importlib.util
import logging
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.formats.cleaning import clean_markdown_lines
from kb_search.formats.markdown import parse_markdown
from kb_search.formats.reader import open_user_file, read_user_file
from kb_search.formats.registry import Source
from kb_search.parsed import ChunkSettings, EmptyFile, IngestError, ParsedChunk, ParsedDocument

INSTALL_HINT = "pip install 'kb-search[docling]'"
PDF_INSTALL_HINT = "pip install 'kb-search[docling-pdf]'"
DOCLING_TYPES = {
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
}
# (module, backend class, InputFormat member) per doc_type.
_BACKENDS = {
    "docx": ("docling.backend.msword_backend", "MsWordDocumentBackend", "DOCX"),
    "pptx": ("docling.backend.mspowerpoint_backend", "MsPowerpointDocumentBackend", "PPTX"),
    "xlsx": ("docling.backend.msexcel_backend", "MsExcelDocumentBackend", "XLSX"),
    "html": ("docling.backend.html_backend", "HTMLDocumentBackend", "HTML"),
}
# Folders that `docling-tools models download` (docling.utils.model_downloader) creates.
LAYOUT_MODEL_DIR = "docling-project--docling-layout-heron"
TABLE_MODEL_DIR = "docling-project--docling-models"
OCR_MODEL_DIR = "RapidOcr"
_WEIGHT_SUFFIXES = (".safetensors", ".onnx", ".pt", ".pth", ".bin")
_PDF_MODULES = ("torch", "docling_ibm_models", "docling_parse")
_MARKDOWN_PARAMS = {
    "escape_underscores": False,  # snake_case identifiers must stay searchable
    "escape_html": False,
    "image_placeholder": "",
    "compact_tables": True,  # no padding: a wide cell would pad every row of its column
}
_ATX_HEADING = re.compile(r"^(#{1,6})\s")
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.I | re.S)
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_GENERIC_TITLE = re.compile(
    r"^(untitled|title|document\d*|presentation\d*|book\d*|powerpoint presentation|"
    r"slide \d+|microsoft (word|powerpoint|excel).*)$",
    re.I,
)


# Per process: has the PDF pipeline converted anything yet, and why it cannot.
_pdf_state: dict[str, Any] = {"worked": False, "broken": None}


class DoclingUnavailable(IngestError):
    """Docling (or, for PDFs, its models) cannot be used here; the message says why."""


@dataclass
class _Segment:
    page: int | None
    markdown: str


def docling_available(doc_type: str = "docx") -> str | None:
    """None when Docling can convert `doc_type` here, else a one-line reason."""
    if doc_type == "pdf":
        return docling_pdf_unavailable()
    return _backend_unavailable(doc_type)


def docling_hint(doc_type: str) -> str:
    """The one-line error for an office file when Docling cannot be used."""
    reason = docling_available(doc_type) or "docling failed"
    return f"{doc_type.upper()} needs the docling extra: {INSTALL_HINT} ({reason})"


@functools.cache
def _backend_unavailable(doc_type: str) -> str | None:
    if doc_type not in _BACKENDS:
        return f"docling is not used for {doc_type}"
    if importlib.util.find_spec("docling") is None:
        return "docling is not installed"
    try:
        _backend(doc_type)
    except Exception as exc:  # noqa: BLE001 - any import failure means "not usable"
        return f"docling cannot be imported: {_one_line(exc)}"
    return None


def _backend(doc_type: str) -> tuple[Any, Any, Any]:
    """(backend class, InputFormat member, InputDocument class) for an office/HTML type."""
    # Docling logs a traceback per unreadable file; kb logs one line per file instead.
    logging.getLogger("docling").setLevel(logging.CRITICAL)
    module_name, class_name, format_name = _BACKENDS[doc_type]
    backend_class = getattr(importlib.import_module(module_name), class_name)
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.document import InputDocument

    return backend_class, InputFormat[format_name], InputDocument


def docling_models_dir() -> Path | None:
    """The local folder holding Docling's layout and table models, or None; never downloads.

    Looked for in $KB_DOCLING_MODELS, $DOCLING_ARTIFACTS_PATH and Docling's own cache
    ($DOCLING_CACHE_DIR/models, default ~/.cache/docling/models).
    """
    for folder in _model_dir_candidates():
        if _has_weights(folder / LAYOUT_MODEL_DIR) and _has_weights(folder / TABLE_MODEL_DIR):
            return folder
    return None


def _model_dir_candidates() -> list[Path]:
    cache = os.environ.get("DOCLING_CACHE_DIR") or str(Path.home() / ".cache" / "docling")
    named = [
        os.environ.get("KB_DOCLING_MODELS"),
        os.environ.get("DOCLING_ARTIFACTS_PATH"),
        str(Path(cache) / "models"),
    ]
    return [Path(value).expanduser() for value in named if value]


def _has_weights(folder: Path) -> bool:
    try:
        return folder.is_dir() and any(
            p.suffix in _WEIGHT_SUFFIXES for p in folder.rglob("*") if p.is_file()
        )
    except OSError:
        return False


def fetch_docling_models(target: Path | None = None) -> Path:
    """Download Docling's PDF layout/table models (needs the network and the docling-pdf
    extra) into Docling's own cache, where `docling_models_dir` finds them offline."""
    target = target or _model_dir_candidates()[-1]
    if importlib.util.find_spec("docling") is None:
        raise IngestError(f"docling is not installed: {PDF_INSTALL_HINT}")
    try:
        from docling.utils.model_downloader import download_models

        download_models(output_dir=target, progress=False)
    except Exception as exc:  # noqa: BLE001 - offline, hub errors: one line for the user
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise IngestError(f"could not fetch Docling's models into {target}: {first}") from exc
    return target


def docling_pdf_unavailable() -> str | None:
    """None when Docling's PDF pipeline can run offline here, else a one-line reason."""
    if importlib.util.find_spec("docling") is None:
        return "docling is not installed"
    missing = [name for name in _PDF_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        return f"Docling's PDF pipeline needs {', '.join(missing)}: {PDF_INSTALL_HINT}"
    if docling_models_dir() is None:
        return "Docling's layout models are not downloaded (`kb init --docling` fetches them)"
    return _pdf_state["broken"] or None


def pdf_path_report() -> str:
    """Which PDF path `kb add` uses, and why (for `kb doctor`)."""
    reason = docling_pdf_unavailable()
    if reason is None:
        return f"Docling layout models (in {docling_models_dir()})"
    has_ocr = importlib.util.find_spec("rapidocr_onnxruntime") is not None
    engine = "pypdfium2 text layer (+ RapidOCR)" if has_ocr else "pypdfium2 text layer (no OCR)"
    return f"{engine}; Docling not used: {reason}"


def convert_with_docling(
    path: Path,
    settings: ChunkSettings,
    count: TokenCounter = count_tokens,
    ocr: str = "auto",
) -> ParsedDocument:
    """Convert DOCX/PPTX/XLSX/HTML (or a PDF, models permitting) and chunk its Markdown."""
    path = Path(path)
    doc_type = DOCLING_TYPES.get(path.suffix.lower())
    if doc_type is None:
        raise IngestError(f"docling is not used for {path.suffix or 'files without extension'}")
    reason = docling_available(doc_type)
    if reason:
        raise DoclingUnavailable(reason)
    document = _convert_pdf(path, ocr) if doc_type == "pdf" else _convert_simple(path, doc_type)
    segments = _segments(document, doc_type)
    markdown, line_pages = _join(segments)
    # The shared rules (link targets out, entities decoded); the line count is kept.
    markdown = "\n".join(clean_markdown_lines(markdown.split("\n")))
    parsed = parse_markdown(markdown, path, settings, count)
    if not parsed.chunks:
        raise EmptyFile("no indexable text")
    for chunk in parsed.chunks:
        _locate(chunk, line_pages)
    parsed.title = _file_title(path, doc_type) or parsed.title
    parsed.doc_type = doc_type
    parsed.page_count = len(document.pages or {}) or None
    parsed.metadata = {**parsed.metadata, "converter": "docling"}
    return parsed


def _convert_simple(path: Path, doc_type: str) -> Any:
    backend_class, input_format, input_document = _backend(doc_type)
    source = input_document(path_or_stream=path, format=input_format, backend=backend_class)
    rejection = getattr(source, "_rejection", None)
    if not source.valid:
        detail = getattr(rejection, "message", "") or "invalid or unreadable file"
        raise IngestError(f"docling cannot open the {doc_type.upper()} file: {detail}")
    # Docling's SimplePipeline does exactly this; the backend is only reachable privately.
    backend = source._backend
    try:
        return backend.convert()
    except Exception as exc:  # noqa: BLE001 - a corrupt file must become one log line
        raise IngestError(f"docling failed on the {doc_type.upper()}: {_one_line(exc)}") from exc
    finally:
        backend.unload()


def _convert_pdf(path: Path, ocr: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the models are local; never reach the hub
    models = docling_models_dir()
    assert models is not None  # checked by docling_available
    try:
        result = _pdf_converter(str(models), ocr).convert(path, raises_on_error=False)
    except Exception as exc:  # noqa: BLE001 - incomplete models fail at first use
        reason = f"docling failed on the PDF: {_one_line(exc)}"
        if not _pdf_state["worked"]:
            # Never worked in this process: the pipeline, not the file, is broken; stop trying.
            _pdf_state["broken"] = reason
        raise IngestError(reason) from exc
    _pdf_state["worked"] = True
    status = str(getattr(result.status, "value", result.status))
    if status not in ("success", "partial_success"):
        errors = "; ".join(_one_line(e.error_message) for e in result.errors) or status
        raise IngestError(f"docling failed on the PDF: {errors}")
    return result.document


@functools.cache
def _pdf_converter(models: str, ocr: str) -> Any:
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.pipeline_options import PdfPipelineOptions
    from docling.document_converter import DocumentConverter, PdfFormatOption

    options = PdfPipelineOptions(artifacts_path=models)
    options.do_table_structure = True
    # Docling's OCR models are a separate download; without them OCR would hit the hub.
    options.do_ocr = ocr != "never" and _has_weights(Path(models) / OCR_MODEL_DIR)
    if options.do_ocr and ocr == "always":
        options.ocr_options.force_full_page_ocr = True
    pdf_option = PdfFormatOption(pipeline_options=options)
    return DocumentConverter(format_options={InputFormat.PDF: pdf_option})


def _segments(document: Any, doc_type: str) -> list[_Segment]:
    """The document's Markdown, page by page where it has pages (slides, sheets, PDF pages).

    Each top-level node (a slide, a sheet, a PDF block) is serialised once; asking Docling
    for one page at a time walks the whole document per page, quadratic in slides.
    """
    serializer = _serializer(document)
    if not document.pages:
        markdown = _tidy(serializer.serialize().text)
        return [_Segment(None, _promote_headings(markdown) if doc_type == "docx" else markdown)]
    segments: list[_Segment] = []
    page: int | None = None
    for number, ref in enumerate(document.body.children, start=1):
        node = ref.resolve(document)
        page = _first_page(document, node) or page or number
        markdown = _tidy(serializer.serialize(item=node).text)
        if not markdown:
            continue
        heading = _node_heading(doc_type, node, page, markdown)
        if heading:
            segments.append(_Segment(page, f"{heading}\n\n{markdown}"))
        elif segments and segments[-1].page == page:
            segments[-1].markdown += f"\n\n{markdown}"
        else:
            segments.append(_Segment(page, markdown))
    return segments


def _serializer(document: Any) -> Any:
    from docling_core.transforms.serializer.markdown import MarkdownDocSerializer, MarkdownParams

    return MarkdownDocSerializer(doc=document, params=MarkdownParams(**_MARKDOWN_PARAMS))


def _first_page(document: Any, node: Any) -> int | None:
    for item, _level in document.iterate_items(root=node, with_groups=True):
        for prov in getattr(item, "prov", None) or []:
            return int(prov.page_no)
    return None


def _node_heading(doc_type: str, node: Any, page: int, markdown: str) -> str:
    # Without a heading of its own, a slide's text would sit under the previous slide's title.
    if doc_type == "pptx" and not markdown.startswith("#"):
        return f"# Slide {page}"
    if doc_type == "xlsx":
        is_sheet = str(getattr(node.label, "value", node.label)) == "sheet"
        return f"# {node.name if is_sheet else f'Sheet {page}'}"
    return ""


def _promote_headings(markdown: str) -> str:
    """DOCX without a Title paragraph: Docling writes Heading 1 as `##`; make it `#`.

    Otherwise every chain starts one level down and Heading 3 is never a split point.
    """
    lines = markdown.split("\n")
    levels = _heading_levels(lines)
    if not levels or 1 in levels.values():
        return markdown
    for index in levels:
        lines[index] = lines[index][1:]
    return "\n".join(lines)


def _heading_levels(lines: list[str]) -> dict[int, int]:
    """ATX heading level by line index, ignoring fenced code."""
    levels: dict[int, int] = {}
    fence: str | None = None
    for index, line in enumerate(lines):
        marker = line.lstrip()[:3]
        if marker in ("```", "~~~"):
            fence = None if fence == marker else fence or marker
            continue
        match = _ATX_HEADING.match(line)
        if match and fence is None:
            levels[index] = len(match.group(1))
    return levels


def _tidy(markdown: str) -> str:
    # Compact separator rows (`| - |`) are fine: the chunker normalises every separator row.
    return markdown.strip()


def _join(segments: list[_Segment]) -> tuple[str, list[int | None]]:
    """One Markdown text, and the page of each of its lines (None between segments)."""
    lines: list[str] = []
    line_pages: list[int | None] = []
    for segment in segments:
        if lines:
            lines.append("")
            line_pages.append(None)
        segment_lines = segment.markdown.split("\n")
        lines.extend(segment_lines)
        line_pages.extend([segment.page] * len(segment_lines))
    return "\n".join(lines) + "\n", line_pages


def _locate(chunk: ParsedChunk, line_pages: list[int | None]) -> None:
    """Line range of the converted text -> page range; the line range itself is dropped."""
    if chunk.line_start is not None and chunk.line_end is not None:
        span = line_pages[chunk.line_start - 1 : chunk.line_end]
        pages = [page for page in span if page is not None]
        if pages:
            chunk.page_start, chunk.page_end = min(pages), max(pages)
    chunk.line_start = chunk.line_end = None


def _file_title(path: Path, doc_type: str) -> str | None:
    """The title the file itself declares (OOXML core properties, HTML <title>)."""
    if doc_type in ("docx", "pptx", "xlsx"):
        title = _ooxml_title(path)
    elif doc_type == "html":
        title = _html_title(path)
    else:
        title = None
    title = re.sub(r"\s+", " ", title or "").strip()
    return title if title and not _GENERIC_TITLE.match(title) else None


def _ooxml_title(path: Path) -> str | None:
    try:
        with open_user_file(path) as handle, zipfile.ZipFile(handle) as archive:
            root = ElementTree.fromstring(archive.read("docProps/core.xml"))
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError):
        return None
    element = root.find(_DC_TITLE)
    return element.text if element is not None else None


def _html_title(path: Path) -> str | None:
    try:
        head = read_user_file(path, 65536).decode("utf-8", errors="replace")
    except OSError:
        return None
    match = _HTML_TITLE.search(head)
    return html.unescape(match.group(1)) if match else None


def _one_line(value: object) -> str:
    text = str(value).strip()
    first = text.splitlines()[0] if text else ""
    return first[:300] if isinstance(value, str) else f"{type(value).__name__}: {first[:300]}"


def parse_office_source(source: Source) -> ParsedDocument:
    """DOCX/PPTX/XLSX: Docling only; without it, one line that says what to install."""
    if docling_available(source.doc_type) is not None:
        raise IngestError(docling_hint(source.doc_type))
    _check_size(source.path, source.max_bytes)
    return convert_with_docling(source.path, source.settings, source.count)


def _check_size(path: Path, max_bytes: int) -> None:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
    if size > max_bytes:
        raise IngestError(f"file too large: {size / 1e6:.1f} MB > cap {max_bytes / 1e6:g} MB")
