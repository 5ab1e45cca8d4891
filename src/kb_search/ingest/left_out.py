"""Documents an earlier run indexed whose files kb leaves out now: what `kb add FOLDER` and
`kb sync` both apply. A file still there but ignored now (`.kbignore`, `.gitignore`, a default
rule) leaves the index; a document an older kb chunked leaves when today's rules
(`registry.classify`) call its file generated or of no type kb reads. Each leaves in its own
transaction, counted by reason (`excluded`: one wording for one outcome, `summary.
excluded_parts`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from kb_search.store.db import Connection
from kb_search.store.documents import delete_document

IGNORED = "ignored"  # an excluded document's reason: .kbignore, .gitignore or a default rule


def under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def left_out_now(
    rows: Iterable[tuple[str, int, str]],
    folders: list[str],
    walked: set[str],
    judged: dict[str, str],
    protected: list[str],
    chunking: str,
) -> dict[str, tuple[int, str]]:
    """Stored path -> (document id, why it leaves) for the documents under `folders` (walked
    in full just now): `rows` are (path, id, chunking) of the index; `walked` every file the
    walk yielded, `judged` the reason of those it left out (generated, unsupported);
    nothing under a `protected` path (an unreadable folder) is judged."""
    out: dict[str, tuple[int, str]] = {}
    for path, doc_id, chunked in rows:
        if not any(under(path, f) for f in folders) or any(under(path, p) for p in protected):
            continue
        reason = judged.get(path)
        if reason is not None:
            if chunked != chunking:  # indexed by an older kb: today's rules decide
                out[path] = (doc_id, reason)
        elif path not in walked and os.path.isfile(path):
            out[path] = (doc_id, IGNORED)  # still there, but the walk leaves it out now
    return out


def remove_left_out(
    conn: Connection,
    documents: dict[str, tuple[int, str]],
    excluded: dict[str, int],
    step: Callable[[], None] = lambda: None,
) -> None:
    """Remove each document, counting it in `excluded` by reason; `step` after each."""
    for doc_id, reason in documents.values():
        if delete_document(conn, doc_id):
            excluded[reason] = excluded.get(reason, 0) + 1
        step()


def stored_secrets(conn: Connection) -> dict[str, tuple[int, str]]:
    """Stored path -> (document id, why it leaves) for the settings files under an added folder
    whose stored text holds a password or token (`formats/secrets.py`): what a kb from before
    that rule indexed. Judged by the text in the index, which is what a search would serve,
    whatever the file holds now or whether it is still there. A file named on its own, under
    no added folder, was read by the user's choice and stays (as `kb sync` keeps it)."""
    from pathlib import Path

    from kb_search.formats.registry import UNSUPPORTED
    from kb_search.formats.secrets import holds_secret, is_credential_store, is_settings_file
    from kb_search.store.inventory import document_states
    from kb_search.store.records import document_chunks
    from kb_search.store.roots import load_roots

    folders = [str(root) for root in load_roots(conn)]
    out: dict[str, tuple[int, str]] = {}
    for path, doc_id, *_ in document_states(conn):
        if not is_settings_file(Path(path)) or not any(under(path, f) for f in folders):
            continue
        text = "\n".join(chunk.text for chunk in document_chunks(conn, doc_id))
        if is_credential_store(Path(path)) or holds_secret(text):
            out[path] = (doc_id, UNSUPPORTED)
    return out


def remove_stored_secrets(conn: Connection) -> dict[str, int]:
    """Remove the documents `stored_secrets` finds (`kb reindex` runs it before embedding, so
    no credential an older kb stored is embedded again or outlives the upgrade); by reason."""
    excluded: dict[str, int] = {}
    remove_left_out(conn, stored_secrets(conn), excluded)
    return excluded
