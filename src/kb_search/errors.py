"""Every error a user or a client can cause, as one hierarchy.

A `KbError` message is one sentence in our words that says what to do; the CLI prints it
on one line and exits 1, the MCP server returns it as a tool error. Anything else is a bug
and is reported as an internal error.
"""

from __future__ import annotations


class KbError(Exception):
    """A problem the user can act on; the message says how."""


class UserInputError(KbError):
    """An argument, query, id or option that cannot be used as given."""


class NotFound(UserInputError):
    """No indexed document or chunk matches."""


class SearchError(UserInputError):
    """A query that cannot run (bad explicit FTS5 syntax, nothing to search for, ...)."""


class EvalError(UserInputError):
    """An evaluation dataset or question file that cannot be used."""


class SyncError(UserInputError):
    """A path that `kb sync` cannot rescan (it was never added)."""


class ConfigError(KbError):
    """A config file or value that cannot be used."""


class DBError(KbError):
    """A database that cannot be opened or used; the message says what to do."""


class ModelError(KbError):
    """Something wrong with the embedding model (never a database fault)."""


class ModelUnavailable(ModelError):
    """No embedding model can be loaded or provisioned here."""


class ModelMismatch(ModelError):
    """The configured model is not the one the database was built with."""


class EndpointError(ModelError):
    """A remote embedding endpoint that does not answer, or answers what cannot be used."""


class IngestError(KbError):
    """A file that cannot be ingested; the message is one line for the error log."""


class EmptyFile(IngestError):
    """A file with nothing to index (an empty `__init__.py`): skipped cleanly, not a failure."""


class NeedsOcr(IngestError):
    """A PDF with no text layer at all whose scanned pages wait for OCR after the keyword
    phase (`ParseJob.ocr_later`): nothing to write yet, the pages are queued."""

    def __init__(self, pages: list[int]):
        super().__init__(f"{len(pages)} scanned pages wait for OCR")
        self.pages = pages


class ServeError(KbError):
    """The server cannot start as asked (an unsafe bind, a missing database, ...)."""


class ExportError(KbError):
    """The database cannot be exported to that path."""


class HookError(KbError):
    """A git hook that cannot be installed or removed."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during `kb add` or `kb sync`, with what the run had done when it stopped:
    `summary` (its counts so far: every document counted is written whole) and the index's
    `chunks` and how many of them have a vector now (`embedded`; None: no model)."""

    def __init__(self, summary: object, chunks: int, embedded: int | None) -> None:
        super().__init__()
        self.summary = summary
        self.chunks = chunks
        self.embedded = embedded
