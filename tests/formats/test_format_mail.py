"""E-mail: .eml and .mbox built with the standard library, with attachments."""

from __future__ import annotations

import mailbox
from email.message import EmailMessage

import pytest

from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings, IngestError

PNG = bytes(range(256)) * 40  # binary: its base64 must never reach a chunk


def message(subject: str, body: str, sender: str = "Ann Lee <ann@example.org>") -> EmailMessage:
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = "Bob Chen <bob@example.org>"
    mail["Cc"] = "team@example.org"
    mail["Subject"] = subject
    mail["Date"] = "Tue, 05 Mar 2024 10:15:00 +0100"
    mail["Message-ID"] = f"<{abs(hash(subject))}@example.org>"
    mail.set_content(body)
    return mail


def budget_mail() -> EmailMessage:
    mail = message("Q3 budget review", "Hi Bob,\n\nThe travel budget is over by 12 percent.\n")
    notes = "# Budget notes\n\n## Travel\n\nFlights to Lisbon cost more than planned.\n"
    mail.add_attachment(notes.encode(), maintype="text", subtype="markdown", filename="notes.md")
    mail.add_attachment(PNG, maintype="image", subtype="png", filename="chart.png")
    table = "item,cost\nflights,1200\nhotel,800\n"
    mail.add_attachment(table.encode(), maintype="text", subtype="csv", filename="costs.csv")
    return mail


def test_eml_headers_body_and_supported_attachments(tmp_path):
    path = tmp_path / "budget.eml"
    path.write_bytes(budget_mail().as_bytes())
    document = parse_file(path, ChunkSettings(max_tokens=80, min_tokens=1))
    assert document.doc_type == "email"
    assert document.title == "Q3 budget review"
    meta = document.metadata
    assert meta["from"] == "Ann Lee <ann@example.org>"
    assert meta["to"] == "Bob Chen <bob@example.org>"
    assert meta["cc"] == "team@example.org"
    assert meta["date"] == "2024-03-05T10:15:00+01:00"
    assert meta["subject"] == "Q3 budget review"
    assert meta["attachments"] == ["notes.md", "chart.png", "costs.csv"]
    assert meta["attachments_not_indexed"] == ["chart.png (not a supported format)"]
    body = [c for c in document.chunks if c.heading == "Q3 budget review"]
    assert body[0].text.startswith(
        "# Q3 budget review\n\nFrom: Ann Lee <ann@example.org>\nTo: Bob Chen <bob@example.org>"
    )
    assert "The travel budget is over by 12 percent." in "\n".join(c.text for c in body)
    headings = [c.heading for c in document.chunks[len(body) :]]
    assert headings == [
        "Q3 budget review > notes.md > Budget notes > Travel",
        "Q3 budget review > costs.csv",
    ]
    assert "Flights to Lisbon" in document.chunks[len(body)].text
    assert "| flights | 1200 |" in document.chunks[len(body) + 1].text
    assert all(c.line_start is None and c.page_start is None for c in document.chunks)
    everything = "\n".join(c.text for c in document.chunks)
    assert "base64" not in everything and "AAECAwQF" not in everything


def test_mbox_two_messages_cite_message_numbers(tmp_path):
    path = tmp_path / "archive.mbox"
    box = mailbox.mbox(path)
    box.add(budget_mail())
    html = message("Launch party", "placeholder", sender="Cy <cy@example.org>")
    html.set_content(
        "<html><body><h1>Party</h1><p>Friday at <b>six</b>.</p></body></html>", subtype="html"
    )
    box.add(html)
    box.flush()
    box.close()
    document = parse_file(path, ChunkSettings(max_tokens=80, min_tokens=1))
    assert document.doc_type == "email"
    assert document.title == "archive"
    assert document.page_count == 2
    assert document.metadata == {
        "page_unit": "message", "messages": 2,
        "first_date": "2024-03-05T10:15:00+01:00", "last_date": "2024-03-05T10:15:00+01:00",
    }  # fmt: skip
    pages = [(c.heading.split(" > ")[0], c.page_start) for c in document.chunks]
    assert pages[0] == ("Q3 budget review", 1)
    assert ("Launch party", 2) in pages
    party = [c for c in document.chunks if c.page_start == 2]
    assert "Friday at six." in party[-1].text and "<b>" not in party[-1].text
    assert party[0].text.startswith("# Launch party\n\nFrom: Cy <cy@example.org>")


def test_a_forwarded_message_is_parsed_as_an_attachment(tmp_path):
    outer = message("Fwd: Q3 budget review", "See below.")
    outer.add_attachment(budget_mail())
    path = tmp_path / "fwd.eml"
    path.write_bytes(outer.as_bytes())
    document = parse_file(path, ChunkSettings(max_tokens=80, min_tokens=1))
    assert document.metadata["attachments"] == ["attached message.eml"]
    inner = [c for c in document.chunks if "attached message.eml" in (c.heading or "")]
    assert any("over by 12 percent" in c.text for c in inner)
    assert any("Flights to Lisbon" in c.text for c in inner)  # the inner mail's attachment


def test_mail_nested_past_the_depth_limit_is_listed_not_opened(tmp_path):
    mail = message("level 0", "innermost text")
    for level in range(1, 5):
        outer = message(f"level {level}", f"text at level {level}")
        outer.add_attachment(mail)
        mail = outer
    path = tmp_path / "deep.eml"
    path.write_bytes(mail.as_bytes())
    document = parse_file(path, ChunkSettings())
    everything = "\n".join(c.text for c in document.chunks)
    assert "text at level 3" in everything and "innermost text" not in everything


@pytest.mark.parametrize("data", [b"", b"\x00\x01garbage\xff" * 10, b"Subject: only\n\n"])
def test_odd_eml_files_do_not_crash(tmp_path, data):
    path = tmp_path / "odd.eml"
    path.write_bytes(data)
    try:
        document = parse_file(path, ChunkSettings())
    except Exception as exc:  # noqa: BLE001 - the contract: IngestError or a document
        assert isinstance(exc, IngestError)
    else:
        assert document.doc_type == "email"


def test_mail_over_the_size_cap_is_refused(tmp_path):
    path = tmp_path / "big.eml"
    path.write_bytes(budget_mail().as_bytes())
    with pytest.raises(IngestError, match="file too large"):
        parse_file(path, ChunkSettings(), max_bytes=1000)
