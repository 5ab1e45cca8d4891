"""E-mail with the standard library: `.eml` (one message) and `.mbox` (many) through `email`
and `mailbox`. Headers (from, to, cc, date, subject, message id) become metadata and a
header line at the top of the message's first chunk; the body is the text/plain part, else
the HTML part converted to Markdown. Attachments whose file name is a supported format are
parsed by that format's parser and their chunks follow the body, headed by the attachment's
name; other attachments are only listed (their base64 never reaches the index). In an mbox,
chunks cite the message number as their page (`page_unit` "message")."""

from __future__ import annotations

import contextvars
import mailbox
import re
import tempfile
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from kb_search.formats.converted import MarkdownBuilder, Origin
from kb_search.formats.html import html_to_markdown
from kb_search.formats.reader import open_document
from kb_search.formats.registry import Source, format_for
from kb_search.parsed import IngestError, ParsedChunk, ParsedDocument

HEADER_FIELDS = ("from", "to", "cc", "date", "subject", "message-id")
MAX_ATTACHMENT_DEPTH = 2  # a mail attached to a mail attached to a mail is not opened
MAX_LISTED_ATTACHMENTS = 50
_depth: contextvars.ContextVar[int] = contextvars.ContextVar("mail_depth", default=0)
_UNSAFE_NAME = re.compile(r"[^\w.\- ]+")


@dataclass
class _Message:
    """One parsed message: its headers, its chunks and what was attached."""

    headers: dict[str, str]
    chunks: list[ParsedChunk]
    attachments: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def parse_eml(source: Source) -> ParsedDocument:
    _check_size(source)
    try:
        with open_document(source.path, source.max_bytes) as handle:
            data = handle.read()
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
    message = BytesParser(policy=policy.default).parsebytes(data)
    parsed = _message(message, source, page=None)
    headers = parsed.headers
    metadata: dict[str, Any] = {k.replace("-", "_"): v for k, v in headers.items() if v}
    if parsed.attachments:
        metadata["attachments"] = parsed.attachments[:MAX_LISTED_ATTACHMENTS]
    if parsed.skipped:
        metadata["attachments_not_indexed"] = parsed.skipped[:MAX_LISTED_ATTACHMENTS]
    return ParsedDocument(
        title=headers.get("subject") or source.name.stem,
        doc_type="email",
        chunks=parsed.chunks,
        metadata=metadata,
    )


def parse_mbox(source: Source) -> ParsedDocument:
    _check_size(source)
    try:
        box = mailbox.mbox(source.path, create=False)
        keys = box.keys()
    except (OSError, mailbox.Error) as exc:
        raise IngestError(f"cannot read mbox: {exc}") from exc
    chunks: list[ParsedChunk] = []
    dates: list[str] = []
    for number, key in enumerate(keys, start=1):
        message = BytesParser(policy=policy.default).parsebytes(box.get_bytes(key))
        parsed = _message(message, source, page=number)
        chunks.extend(parsed.chunks)
        if parsed.headers.get("date"):
            dates.append(parsed.headers["date"])
    box.close()
    metadata: dict[str, Any] = {"page_unit": "message", "messages": len(keys)}
    if dates:
        metadata["first_date"], metadata["last_date"] = min(dates), max(dates)
    return ParsedDocument(
        title=source.path.stem,
        doc_type="email",
        chunks=chunks,
        metadata=metadata,
        page_count=len(keys) or None,
    )


def _check_size(source: Source) -> None:
    try:
        size = source.path.stat().st_size
    except OSError as exc:
        raise IngestError(f"cannot read file: {exc.strerror or exc}") from exc
    if size > source.max_bytes:
        cap = source.max_bytes / 1e6
        raise IngestError(f"file too large: {size / 1e6:.1f} MB > cap {cap:g} MB")


def _message(message: Message, source: Source, page: int | None) -> _Message:
    headers = _headers(message)
    subject = headers.get("subject") or "(no subject)"
    builder = MarkdownBuilder()
    origin = Origin(page=page)
    builder.heading(1, subject, origin)
    summary = "\n".join(
        f"{name.title()}: {headers[name]}"
        for name in ("from", "to", "cc", "date")
        if name in headers
    )
    builder.block(summary, origin)
    builder.block(_body(message), origin)
    chunks = builder.parse(source.path, source.settings, source.count).chunks
    parsed = _Message(headers, chunks)
    for part in _attachments(message):
        _attach(parsed, part, subject, source, page)
    return parsed


def _headers(message: Message) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name in HEADER_FIELDS:
        try:
            value = message.get(name)
        except (ValueError, IndexError, TypeError):  # a malformed header: leave it out
            continue
        text = " ".join(str(value).split()) if value is not None else ""
        if text:
            headers[name] = text
    if "date" in headers:
        try:
            headers["date"] = parsedate_to_datetime(headers["date"]).isoformat()
        except (TypeError, ValueError, IndexError):
            pass  # an unparseable date stays as written
    return headers


def _body(message: Message) -> str:
    if not isinstance(message, EmailMessage):
        return _text_of(message)
    try:
        part = message.get_body(preferencelist=("plain", "html"))
    except (KeyError, ValueError, TypeError):
        part = None
    if part is None:
        return ""
    text = _text_of(part)
    if part.get_content_subtype() == "html":
        return html_to_markdown(text).markdown
    return text


def _text_of(part: Message) -> str:
    """A text part decoded; an unknown or lying charset costs a few characters, not the mail."""
    try:
        content = part.get_content() if isinstance(part, EmailMessage) else None
        if isinstance(content, str):
            return content
    except (LookupError, ValueError, TypeError, AssertionError):
        pass
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, errors="replace")
    except LookupError:
        return payload.decode("utf-8", errors="replace")


def _attachments(message: Message) -> list[Message]:
    if not isinstance(message, EmailMessage):
        return []
    try:
        return list(message.iter_attachments())
    except (KeyError, ValueError, TypeError):
        return []


def _attach(
    parsed: _Message, part: Message, subject: str, source: Source, page: int | None
) -> None:
    name = part.get_filename() or ""
    if part.get_content_type() == "message/rfc822":
        name = name or "attached message.eml"
    label = name or part.get_content_type()
    parsed.attachments.append(label)
    try:
        chunks = _attachment_chunks(part, name, source)
    except IngestError as exc:
        parsed.skipped.append(f"{label} ({exc})")
        return
    for chunk in chunks:
        where = f" (page {chunk.page_start})" if chunk.page_start else ""
        inner = f" > {chunk.heading}" if chunk.heading else ""
        chunk.heading = f"{subject} > {label}{where}{inner}"
        chunk.line_start = chunk.line_end = None
        chunk.page_start = chunk.page_end = page
        chunk.cited_page = None
        parsed.chunks.append(chunk)


def _attachment_chunks(part: Message, name: str, source: Source) -> list[ParsedChunk]:
    fmt = format_for(Path(_safe_name(name)), sniff=False) if name else None
    if fmt is None:
        raise IngestError("not a supported format")
    if fmt.doc_type == "email" and _depth.get() >= MAX_ATTACHMENT_DEPTH:
        raise IngestError("nested too deep")
    data = _payload(part)
    if len(data) > source.max_bytes:
        raise IngestError(f"too large: {len(data) / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory(prefix="kb-mail-") as folder:
        path = Path(folder) / _safe_name(name)
        path.write_bytes(data)
        inner = Source(path, source.settings, source.count, source.max_bytes, source.ocr)
        inner.language, inner.doc_type = fmt.language, fmt.doc_type
        token = _depth.set(_depth.get() + 1)
        try:
            return fmt.load_parser()(inner).chunks
        finally:
            _depth.reset(token)


def _payload(part: Message) -> bytes:
    if part.get_content_type() == "message/rfc822":
        inner = part.get_payload()
        message = inner[0] if isinstance(inner, list) and inner else inner
        if isinstance(message, Message):
            return message.as_bytes(policy=policy.default)
        raise IngestError("empty attached message")
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        raise IngestError("no content")
    return payload


def _safe_name(name: str) -> str:
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return _UNSAFE_NAME.sub("_", base).strip(". ") or "attachment"


def parse_eml_source(source: Source) -> ParsedDocument:
    return parse_eml(source)


def parse_mbox_source(source: Source) -> ParsedDocument:
    return parse_mbox(source)
