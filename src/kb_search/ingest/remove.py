"""`kb remove`: documents by id or path, or every document under a folder."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from kb_search.errors import NotFound
from kb_search.ingest.roots import deepest_root
from kb_search.store.db import Connection, transaction
from kb_search.store.documents import delete_document
from kb_search.store.inventory import document_path, resolve_document_id
from kb_search.store.roots import (
    Removal,
    documents_under,
    forget_roots,
    load_roots,
    remember_removed_roots,
    roots_at_or_under,
)
from kb_search.store.skipped import remember_removed


def remove(conn: Connection, refs: Iterable[str], cwd: Path) -> Removal:
    """Delete what `refs` name (an added folder is forgotten too, so `kb sync` will not bring
    it back). One transaction: all of it or nothing. Refs that match nothing are reported, not
    fatal, unless none matched. A file under a root that stays is remembered as removed:
    `kb sync` leaves it out until it is added by name."""
    result, paths, roots_gone = Removal(), {}, set()
    # Matched inside the write transaction: a running add that commits a document of the
    # folder between the match and the delete would otherwise keep it.
    with transaction(conn):
        for ref in refs:
            matched = _match(conn, ref, cwd)
            if matched is None:
                result.not_found.append(ref)
                continue
            documents, folder_roots = matched
            paths.update(documents)
            roots_gone.update(folder_roots)
        if not paths and not roots_gone:
            raise NotFound(
                "nothing indexed matches "
                + ", ".join(repr(r) for r in result.not_found)
                + " (see `kb list` and `kb roots`)"
            )
        result.removed = [doc_id for doc_id in paths if delete_document(conn, doc_id)]
        forget_roots(conn, sorted(roots_gone))
        result.forgotten_roots = sorted(roots_gone)
        roots = load_roots(conn)
        # An add or sync of these folders may still be running: it writes nothing there now.
        remember_removed_roots(
            conn, [r for r in result.forgotten_roots if not deepest_root(Path(r), roots)]
        )
        remember_removed(
            conn, [paths[i] for i in result.removed if deepest_root(Path(paths[i]), roots)]
        )
    return result


def _match(conn: Connection, ref: str, cwd: Path) -> tuple[dict[int, str], list[str]] | None:
    """The documents and added folders `ref` names: a document, or a folder."""
    try:
        doc_id = resolve_document_id(conn, ref, cwd)
    except NotFound:
        given = os.path.abspath(os.path.join(cwd, os.path.expanduser(ref)))
        # The real path first; then the path as typed: an added folder that is a symlink now
        # (which sync does not follow) is removed by the name it was added under.
        for folder in dict.fromkeys((os.path.realpath(given), given)):
            documents = dict(documents_under(conn, folder))
            roots = roots_at_or_under(conn, folder)
            if documents or roots:
                return documents, roots
        return None
    return {doc_id: document_path(conn, doc_id) or ""}, []
