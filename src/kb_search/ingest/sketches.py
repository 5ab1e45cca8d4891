"""Documents that are copies, kept up to date by `kb add` and `kb sync` after their writes:
sketches for documents an older kb wrote (before `store/copies.py` kept them), made from their
stored text one transaction per document, so that a crash or Ctrl-C keeps what was done; then
the pairs settled on the hashes few documents hold (`copies.settle`)."""

from __future__ import annotations

from kb_search.shingles import sketch
from kb_search.store import copies
from kb_search.store.db import Connection, transaction

BATCH = 200  # documents read per query


def update_copies(conn: Connection) -> int:
    """Sketch (and pair) every document without a sketch, then settle the pairs; how many
    documents were sketched."""
    done = 0
    while ids := copies.unsketched(conn, BATCH):
        for document_id in ids:
            with transaction(conn):
                copies.record(conn, document_id, sketch(copies.stored_text(conn, document_id)))
            done += 1
    with transaction(conn):
        copies.settle(conn)
    return done
