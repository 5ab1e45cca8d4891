"""Sketches for documents an older kb wrote (before `store/copies.py` kept them): made from
their stored text by `kb add` and `kb sync`, one transaction per document, so that a crash
or Ctrl-C keeps what was done and the next run goes on."""

from __future__ import annotations

from kb_search.shingles import sketch
from kb_search.store import copies
from kb_search.store.db import Connection, transaction

BATCH = 200  # documents read per query


def fill_sketches(conn: Connection) -> int:
    """Sketch (and pair) every document without one; how many were done."""
    done = 0
    while ids := copies.unsketched(conn, BATCH):
        for document_id in ids:
            with transaction(conn):
                copies.record(conn, document_id, sketch(copies.stored_text(conn, document_id)))
            done += 1
    return done
