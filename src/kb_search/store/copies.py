"""Documents that hold each other's text: a guide as PDF and as HTML, an AsciiDoc page and the
page rendered from it, a book and one of its chapters.

Each document written keeps its sketch (`shingles.sketch`), and the pairs it forms with the
documents already indexed are recorded in the same transaction: `share` is the part of the
document's text that the other holds, kept from RECORDED_SHARE up. The sketches find the
pairs, and at the end of each `kb add`/`kb sync` every pair is measured again on the
hashes that few documents hold (`settle`). Search reads the pairs
among its candidates' documents (`search/shaping.py`, "Copies"). A hash that more than
COMMON_HASH documents hold (a licence header, a navigation line, a template's boilerplate) is
not counted: it says nothing of which documents are copies, and counting it would cost a pass
over every document that holds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import PurePath

from kb_search.store.db import Connection, get_meta, rows_in, set_meta

RECORDED_SHARE = 0.5
# Share of one document's text in another from which the two are copies of one document (a
# guide in two formats, a chapter in its book): what search groups by (search/shaping.py).
COPY_SHARE = 0.7
MIN_SKETCH = 8  # hashes: a document this short (a stub, a heading) is never called a copy
COMMON_HASH = 32  # documents: a hash held by more is not counted when a document is written
# ...and when the pairs are settled, a hash held by more than this many documents: a block that
# many pages share (a command reference's inherited flags, a template) is not what makes two
# documents one (a guide in three formats holds its hashes three times).
RARE_HASH = 8
# Share both ways from which two documents in one format with one name are the same text (a
# file copied twice), not two versions of it: one rewritten chapter of ten leaves about .9.
SAME_TEXT_SHARE = 0.98
PART_RATIO = 3  # sketch sizes: a document this many times larger can hold the other as a part
COMPRESSED = (".gz", ".bz2", ".xz")  # what formats/compressed.py reads through
SETTLED = "copies_settled"  # meta key: the state of the documents when pairs were last settled


def record(conn: Connection, document_id: int, hashes: Sequence[int]) -> None:
    """Store a document's sketch and its pairs with the other documents (inside the write
    transaction of the document; a document written again first loses its old ones)."""
    forget(conn, document_id)
    conn.executemany(
        "INSERT OR IGNORE INTO document_sketches(hash, document_id) VALUES (?, ?)",
        ((h, document_id) for h in hashes),
    )
    conn.execute("UPDATE documents SET sketched = 1 WHERE id = ?", (document_id,))
    if len(hashes) < MIN_SKETCH:
        return
    shared: dict[int, int] = {}
    for h in hashes:
        holders = conn.execute(
            "SELECT document_id FROM document_sketches WHERE hash = ? LIMIT ?",
            (h, COMMON_HASH + 2),
        ).fetchall()
        if len(holders) > COMMON_HASH + 1:  # itself and more than COMMON_HASH others
            continue
        for (other,) in holders:
            if other != document_id:
                shared[other] = shared.get(other, 0) + 1
    size = len(hashes)
    pairs = []
    likely = [other for other, count in shared.items() if count >= RECORDED_SHARE * MIN_SKETCH]
    for other in likely:
        count = shared[other]
        # counted no further than its share could reach RECORDED_SHARE: a book's sketch is
        # not counted whole again for each of its thousand chapters written after it
        other_size = _sketch_size(conn, other, limit=int(count / RECORDED_SHARE) + 1)
        if other_size < MIN_SKETCH:
            continue
        for a, b, share in (
            (document_id, other, count / size),
            (other, document_id, count / other_size),
        ):
            if share >= RECORDED_SHARE:
                pairs.append((a, b, share))
    conn.executemany(
        "INSERT OR REPLACE INTO document_copies(document_id, other_id, share) VALUES (?, ?, ?)",
        pairs,
    )


def forget(conn: Connection, document_id: int) -> None:
    """A document's sketch and pairs out (before it is written again)."""
    conn.execute(
        "DELETE FROM document_copies WHERE document_id = ? OR other_id = ?",
        (document_id, document_id),
    )
    conn.execute("DELETE FROM document_sketches WHERE document_id = ?", (document_id,))


def _sketch_size(conn: Connection, document_id: int, limit: int = -1) -> int:
    """How many hashes a document's sketch holds, counted up to `limit` (-1: all)."""
    sql = (
        "SELECT count(*) FROM (SELECT 1 FROM document_sketches WHERE document_id = ? LIMIT ?)"
    )
    return int(conn.execute(sql, (document_id, limit)).fetchone()[0])


def shares_among(conn: Connection, ids: Iterable[int]) -> dict[tuple[int, int], float]:
    """(document, other) -> the share of the document's text the other holds, for the
    documents among these that are copies of another among them (`settle`)."""
    wanted = sorted(set(ids))
    if len(wanted) < 2:
        return {}
    sql = (
        "SELECT document_id, other_id, share FROM document_copies"
        " WHERE copy = 1 AND document_id IN ({marks})"
    )
    keep = set(wanted)
    return {(a, b): share for a, b, share in rows_in(conn, sql, wanted) if b in keep}


def same_documents(conn: Connection, ids: Iterable[int]) -> dict[int, list[tuple[int, int]]]:
    """document -> [(other, its chunk count)] for each other document that holds COPY_SHARE
    of its text while it holds as much of the other's: one document in two formats."""
    wanted = sorted(set(ids))
    sql = (
        "SELECT a.document_id, a.other_id, d.chunk_count FROM document_copies a"
        " JOIN document_copies b ON b.document_id = a.other_id AND b.other_id = a.document_id"
        " JOIN documents d ON d.id = a.other_id"
        " WHERE a.copy = 1 AND b.copy = 1 AND a.share >= ? AND b.share >= ?"
        " AND a.document_id IN ({marks})"
    )
    found: dict[int, list[tuple[int, int]]] = {}
    for doc, other, count in rows_in(conn, sql, wanted, (COPY_SHARE, COPY_SHARE)):
        found.setdefault(doc, []).append((other, count))
    return found


def settle(conn: Connection) -> int:
    """Measure every recorded pair again on the hashes that at most RARE_HASH documents hold
    now (a document written early in a run saw few holders of a shared block); a pair under
    RECORDED_SHARE both ways stays only as a pair to measure again (`copy` 0, never read as a
    pair). A document is a copy of the other (`copy`, what search
    groups by) when it holds COPY_SHARE of it and either the other holds as much of it and
    the two have one name (a file stem or a title: one document in two formats), or the other
    is PART_RATIO times its size (a chapter in its book). Two pages of a command reference
    that share their flags, or upgrade notes of consecutive versions, are neither. Nothing is
    done when no document was written or removed since the last time. Returns the pairs (both
    ways) kept. Call inside a transaction."""
    row = conn.execute("SELECT count(*), max(indexed_at) FROM documents").fetchone()
    state = f"{row[0]}:{row[1]}"
    if get_meta(conn, SETTLED) == state:
        return -1
    sql = (
        "SELECT DISTINCT min(document_id, other_id), max(document_id, other_id)"
        " FROM document_copies"
    )
    rare: dict[int, set[int]] = {}
    sizes: dict[int, int] = {}  # each document's sketch counted once, not once per pair
    names: dict[int, tuple[set[str], str]] = {}  # ...and its names read once
    kept, waiting = [], []
    for a, b in conn.execute(sql).fetchall():
        for doc in (a, b):
            if doc not in rare:
                rare[doc] = _rare_hashes(conn, doc)
                sizes[doc] = _sketch_size(conn, doc)
                names[doc] = _names(conn, doc)
        common = len(rare[a] & rare[b])
        shares = {
            doc: common / len(rare[doc]) if len(rare[doc]) >= MIN_SKETCH else 0.0 for doc in (a, b)
        }
        if max(shares.values()) < RECORDED_SHARE:
            # no pair now, kept as one to measure again: the documents that made its hashes
            # common (mirrors of a guide) may go, and nothing else would pair the two again
            waiting.append((a, b, shares[a], 0))
            continue
        for one, other in ((a, b), (b, a)):
            if shares[one] < RECORDED_SHARE:
                continue
            copy = shares[one] >= COPY_SHARE and (
                (shares[other] >= COPY_SHARE and _one_document(names, shares, one, other))
                or sizes[other] >= PART_RATIO * sizes[one]
            )
            kept.append((one, other, shares[one], int(copy)))
    conn.execute("DELETE FROM document_copies")
    conn.executemany(
        "INSERT INTO document_copies(document_id, other_id, share, copy) VALUES (?, ?, ?, ?)",
        kept + waiting,
    )
    set_meta(conn, SETTLED, state)
    return len(kept)


def _one_document(
    names: dict[int, tuple[set[str], str]], shares: dict[int, float], one: int, other: int
) -> bool:
    """Two documents that hold each other's text and share a name are one document in two
    formats (`guide.md`, `guide.html`). In one format they are two versions of it (`v1/guide.md`
    and `v2/guide.md`, a chapter rewritten): each is its own document, unless their text is
    the same (a file copied twice)."""
    (one_names, one_format), (other_names, other_format) = names[one], names[other]
    if not one_names & other_names:
        return False
    return one_format != other_format or min(shares[one], shares[other]) >= SAME_TEXT_SHARE


def _names(conn: Connection, document_id: int) -> tuple[set[str], str]:
    """A document's names (its file stem and its title, lower-cased) and its format (its file
    name's extension)."""
    row = conn.execute("SELECT path, title FROM documents WHERE id = ?", (document_id,)).fetchone()
    if row is None:
        return set(), ""
    stem, form = _stem_and_format(row[0])
    return {n for n in (stem, (row[1] or "").strip().lower()) if n}, form


def _stem_and_format(path: str) -> tuple[str, str]:
    """The file name without its format's extension, and that extension
    (`maint-guide.en.txt.gz` and `maint-guide.en.pdf` are both `maint-guide.en`, as `txt` and
    `pdf`; `2.8-2.9.md` is `2.8-2.9`)."""
    name = PurePath(path).name.lower()
    for packed in COMPRESSED:
        name = name.removesuffix(packed)
    stem, dot, form = name.rpartition(".")
    return (stem, form) if dot else (name, "")


def _rare_hashes(conn: Connection, document_id: int) -> set[int]:
    sql = (
        "SELECT s.hash FROM document_sketches s WHERE s.document_id = ? AND"
        " (SELECT count(*) FROM (SELECT 1 FROM document_sketches x WHERE x.hash = s.hash"
        " LIMIT ?)) <= ?"
    )
    return {row[0] for row in conn.execute(sql, (document_id, RARE_HASH + 1, RARE_HASH))}


def unsketched(conn: Connection, limit: int) -> list[int]:
    """Documents written before sketches were kept (at most `limit`)."""
    sql = "SELECT id FROM documents WHERE sketched = 0 ORDER BY id LIMIT ?"
    return [row[0] for row in conn.execute(sql, (limit,))]


def stored_text(conn: Connection, document_id: int) -> str:
    """A document's chunk texts in order (what its sketch is made of)."""
    sql = "SELECT text FROM chunks WHERE document_id = ? ORDER BY chunk_index"
    return "\n".join(row[0] for row in conn.execute(sql, (document_id,)))



def copied_documents(conn: Connection) -> int:
    """Documents that are a copy of another (`settle`)."""
    sql = "SELECT count(DISTINCT document_id) FROM document_copies WHERE copy = 1"
    return int(conn.execute(sql).fetchone()[0])
