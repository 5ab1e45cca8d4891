"""One file -> one `ParsedDocument`, as a parser worker runs it: refuse what is not a regular
file, find the format (by name, else by content, else plain text), parse, cap the chunks and
scrub the text; a file that cannot be ingested raises `IngestError` with a one-line reason."""

from __future__ import annotations

from pathlib import Path

from kb_search.chunking.caps import cap_document
from kb_search.chunking.tokens import TokenCounter, count_tokens
from kb_search.formats.licences import condense_licence
from kb_search.formats.reader import (
    SNIFF_BYTES,
    open_user_file,
    read_document,
    scrub_document,
)
from kb_search.formats.registry import (
    PLAIN_TEXT,
    Format,
    Source,
    format_by_content,
    format_for,
)
from kb_search.parsed import ChunkSettings, EmptyFile, IngestError, ParsedDocument
from kb_search.regular import NotRegularFile

# Formats whose lines a licence text is read from: a LICENSE, COPYING, LICENSE.md or .rst.
LICENCE_TYPES = frozenset({"text", "markdown"})


def parse_file(
    path: Path,
    settings: ChunkSettings,
    count: TokenCounter = count_tokens,
    max_bytes: int = 20_000_000,
    ocr: str = "auto",
    ocr_later: bool = False,
) -> ParsedDocument:
    """Parse one file; raises IngestError with a one-line reason when it cannot be ingested.

    A file of no known format (named explicitly by the user) is read as plain text, or as
    code when its first line is a `#!` of a known interpreter. `ocr_later`: a PDF's pages that
    need OCR are listed in its metadata (`ocr_queued_pages`) instead of read now; a PDF with
    no text layer at all raises `NeedsOcr`. A well-known licence text becomes one chunk
    (`formats/licences.py`)."""
    path = Path(path)
    _refuse_non_regular(path)
    source = Source(path, settings, count, max_bytes, ocr, ocr_later=ocr_later)
    fmt = format_for(path) or _by_content(source)
    source.language, source.doc_type = fmt.language, fmt.doc_type
    document = fmt.load_parser()(source)
    if not document.chunks:
        raise EmptyFile("no indexable text")
    if document.doc_type in LICENCE_TYPES:
        document = condense_licence(document, source.text(), count, settings.max_tokens)
    return scrub_document(cap_document(document, settings, count))


def _refuse_non_regular(path: Path) -> None:
    """A FIFO, device or symlink swapped in since the walk fails here, before a parser that
    opens files by path itself (mailbox, Docling) could wait on it; the parsers that read
    through `reader` check again on the descriptor they read."""
    try:
        open_user_file(path).close()
    except NotRegularFile as exc:
        raise IngestError(exc.strerror) from exc
    except OSError:
        pass  # missing or unreadable: the parser gives its own one-line reason


def _by_content(source: Source) -> Format:
    """A file named explicitly whose extension is unknown: its first bytes decide (a PDF
    called `paper.data`, a mail saved as `message.out`), else it is read as text."""
    try:
        head = read_document(source.path, SNIFF_BYTES)
    except OSError:
        return PLAIN_TEXT  # reading the text gives the one-line reason
    return format_by_content(head) or PLAIN_TEXT
