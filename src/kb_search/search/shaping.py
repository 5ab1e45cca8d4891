"""Shaping the fused ranking before the cut: identifier definitions first, a few chunks per file.

- An identifier-shaped query (snake_case, dotted.name, CamelCase, --flag) puts a chunk that
  defines the identifier (its symbol or heading, or a line that starts with it, in a chunk
  that is not a list of such names) ahead of chunks that only mention it.
- Diversity: at most `per_file` chunks of one file, and SECTION_CAP of one (headed) section,
  or PAGE_CAP of one page of a paged document (a PDF: its page is the place a citation
  opens, and one section runs over many pages), come before other files' chunks that score
  at least DEMOTE_FLOOR of theirs; the rest move down (not out), each with a `cut_by`
  reason. Files mode keeps each file once, with its best chunk.
- Navigation: a table of contents, a list of figures or an index (marked at parse,
  `formats/navigation.py`) gives way to every other chunk that scores at least
  NAVIGATION_SHARE of its score (both measured from the candidates' lowest score); it moves
  down, not out, so a question about the contents still finds it.
- Copies: a chunk whose text another document's higher-ranked chunk (with the chunks beside
  it) already holds (the same guide as PDF and as HTML, a file vendored twice) leaves the
  ranking; the chunk kept names it in `copies` (the result's `also_at`). Only the first
  COPY_DEPTH candidates are compared, each with those ranked above it, so a top 3 stays the
  prefix of a top 10. Between documents that are copies of each other (`store/copies.py`)
  the bar is lower, and a chunk of the lower-ranked copy gives its place to the better copy's
  chunk of the same text when that one is among the COPY_DEPTH.
"""

from __future__ import annotations

import re

from kb_search.search.results import Candidate
from kb_search.shingles import MIN_SHINGLES, ShingleIndex, Shingles, containment, shingles
from kb_search.store import copies, retrieval
from kb_search.store.db import Connection

DEFAULT_PER_FILE = 3
SECTION_CAP = 2  # chunks of one section (file and heading) before other sections' chunks
# Chunks of one page before other places' chunks: they share one citation, which opens them
# all (`kb get path#page=N`); in a paged document the page, not the section, is the place.
PAGE_CAP = 1
PROMOTE_DEPTH = 20  # definitions are looked for among this many of the fused candidates
# A chunk moved down by the cap goes no lower than the first chunk scoring under this share
# of its own score.
DEMOTE_FLOOR = 0.5
COPY_DEPTH = 30  # candidates compared for copies (CPU: ~2 ms a query, docs/search.md)
# Share of the smaller chunk's word shingles the other holds, from which it is a copy
# (measured on PDF/HTML pairs and on different documents: docs/search.md, "Copies").
SAME_TEXT = 0.7
# The same between two documents that hold each other's text (store/copies.py): a passage of
# an AsciiDoc page and of the HTML rendered from it differ by markup and generated words.
GROUPED_SAME_TEXT = 0.5
# Share of a chunk's text that the better copy's chunk shown in its place must hold: half, as
# another format cuts a passage elsewhere and the rest lies beside it (32 queries over git
# pages and the maint-guide in 2-3 formats kept 31 results of a second copy at 0.7, 27 at 0.5,
# 24 at 0.3: docs/search.md, "Documents that are copies").
STAND_IN_SHARE = 0.5
# Chunks of a better copy read to find a stand-in that no candidate is (a book's first ones).
STORED_CHUNKS = 5000
PROBE_WORDS = 8  # ...of which only those holding half of a text's longest words are compared
DOCUMENT_SHARE = copies.COPY_SHARE  # of one document's text in another: the two are copies
# A result's copy in the other format of its document, when no candidate named it, is looked
# for at the same relative place: this share of that document's chunks each side, from
# MIN_NAME_SPAN to MAX_NAME_SPAN chunks (formats cut a document into different numbers of chunks).
NAME_SPAN = 0.05
MIN_NAME_SPAN, MAX_NAME_SPAN = 6, 15
# ...counting the chunks beside the other (another format cuts the same text elsewhere), when
# this share is in the other chunk itself: the two overlap, not merely lie side by side.
OVERLAP = 0.2
# A navigation chunk ranks below the other chunks that score this share of its score or more
# (each score measured from the lowest candidate's, so that it holds for one leg's squeezed
# scores as for fused ones).
NAVIGATION_SHARE = 0.8
LIST_LINES = 6  # a chunk with this many lines that each start with a name is a list of names

_IDENTIFIER = re.compile(
    r"""(?x)
    --[A-Za-z][\w-]+                                  # --flag
    | [A-Za-z_]\w*_\w+                                # snake_case, UPPER_CASE
    | [A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+                 # dotted.name
    | [a-z]+[A-Z]\w*                                  # camelCase
    | [A-Z][a-z0-9]+[A-Z]\w*                          # CamelCase
    """
)
_LINE_LEAD = re.compile(r"^[\s#>*+|`'\"-]*(?:(?:def|func|class|type|const|var|async def)\s+)?")
_NAME_AT_START = re.compile(r"^(?:--)?[A-Za-z_][\w.-]*")


_CAMEL_ONLY = re.compile(r"[A-Za-z][A-Za-z0-9]*")
SHORT_QUERY = 3  # words: a CamelCase word counts as an identifier only in a query this short


def identifiers(text: str) -> list[str]:
    """The identifier-shaped words of a text, in order, each once. A CamelCase word is also an
    English compound in prose ("ApplicationSet takes minutes to..."): it counts only in a
    short query; snake_case, dotted names and --flags always count."""
    words = [w.strip("`'\",;:()[]{}?!") for w in text.split()]
    found = []
    for word in words:
        if not _IDENTIFIER.fullmatch(word) or word in found:
            continue
        if _CAMEL_ONLY.fullmatch(word) and len(words) > SHORT_QUERY:
            continue
        found.append(word)
    return found


def promote_definitions(
    conn: Connection, candidates: list[Candidate], names: list[str]
) -> list[Candidate]:
    """Candidates (among the first PROMOTE_DEPTH) that define one of `names` first, in their
    fused order, each scored as high as the former first."""
    if not names or not candidates:
        return candidates
    head = candidates[:PROMOTE_DEPTH]
    rows = _chunk_rows(conn, [c.chunk_id for c in head])
    defining = []
    for candidate in head:
        row = rows.get(candidate.chunk_id)
        name = row and next((n for n in names if defines(n, *row)), None)
        if name:
            defining.append(candidate)
            candidate.breakdown["defines"] = name
    if not defining:
        return candidates
    best = candidates[0].score
    for candidate in defining:
        candidate.score = max(candidate.score, best)
    chosen = {c.chunk_id for c in defining}
    return defining + [c for c in candidates if c.chunk_id not in chosen]


def defines(name: str, text: str, heading: str | None, symbol: str | None) -> bool:
    """The chunk is where `name` is defined: its symbol or heading names it, or one of its
    lines starts with it and the chunk is not a list of names (a table of contents)."""
    bare = name.lstrip("-").lower()
    if symbol and _last_part(symbol).lower() in (bare, _last_part(bare)):
        return True
    if heading and re.search(rf"(?<![\w.-]){re.escape(name.lower())}(?![\w-])", heading.lower()):
        return True
    starts = [_line_name(line) for line in text.splitlines() if line.strip()]
    named = [s for s in starts if s and _IDENTIFIER.fullmatch(s)]
    if len(named) >= LIST_LINES and len(named) * 2 >= len(starts):
        return False
    return any(s and s.lower() == name.lower() for s in starts)


def _last_part(name: str) -> str:
    return re.split(r"[.:]", name)[-1]


def _line_name(line: str) -> str | None:
    rest = line[_LINE_LEAD.match(line).end() :]
    if line.lstrip().startswith("--"):
        rest = "--" + rest.lstrip("-")
    match = _NAME_AT_START.match(rest)
    return match.group(0).rstrip(".-") if match else None


def _chunk_rows(conn: Connection, ids: list[int]) -> dict[int, tuple[str, str | None, str | None]]:
    return retrieval.chunk_texts(conn, ids)


def diversify(
    conn: Connection, candidates: list[Candidate], per_file: int, files: bool
) -> list[Candidate]:
    """At most `per_file` chunks of a file (SECTION_CAP of a section, PAGE_CAP of a page)
    ahead of other files' chunks; the others follow in their order, with the reason in
    `cut_by`. `files`: one chunk per file, the rest dropped. per_file 0: no cap."""
    if files:
        per_file = 1
    if per_file <= 0 or len(candidates) <= 1:
        return candidates
    places = _places(conn, [c.chunk_id for c in candidates])
    kept: list[Candidate] = []
    moved: list[Candidate] = []
    per_doc: dict[int, int] = {}
    per_place: dict[tuple[int, object], int] = {}
    for candidate in candidates:
        doc, heading, page = places.get(candidate.chunk_id, (None, None, None))
        if doc is None:  # deleted meanwhile: hydrate skips it
            kept.append(candidate)
            continue
        # The place an agent opens: a page of a PDF, else a headed section (code chunks have
        # symbols instead).
        place = ("page", page) if page is not None else ("section", heading)
        cap = PAGE_CAP if page is not None else SECTION_CAP
        placed = per_file > 1 and (page is not None or heading is not None)
        reason = None
        if per_doc.get(doc, 0) >= per_file:
            reason = f"diversity: {per_file} chunk(s) of this file rank above it"
        elif placed and per_place.get((doc, place), 0) >= cap:
            reason = f"diversity: {cap} chunk(s) of this {place[0]} rank above it"
        if reason:
            candidate.cut_by.append(reason)
            moved.append(candidate)
            continue
        per_doc[doc] = per_doc.get(doc, 0) + 1
        per_place[(doc, place)] = per_place.get((doc, place), 0) + 1
        kept.append(candidate)
    return kept if files else _merge(kept, moved)


def demote_navigation(conn: Connection, candidates: list[Candidate]) -> list[Candidate]:
    """Navigation chunks (contents, indexes) after the other candidates that score at least
    NAVIGATION_SHARE of theirs, above the lowest candidate's score; the reason in `cut_by`."""
    if len(candidates) < 2:
        return candidates
    marked = retrieval.navigation_chunks(conn, [c.chunk_id for c in candidates])
    if not marked:
        return candidates
    floor = min(c.score for c in candidates)
    kept = [c for c in candidates if c.chunk_id not in marked]
    moved = [c for c in candidates if c.chunk_id in marked]
    for candidate in moved:
        candidate.cut_by.append("navigation: a table of contents or an index, below content")
    return _merge(kept, moved, NAVIGATION_SHARE, floor)


def _merge(
    kept: list[Candidate], moved: list[Candidate], share: float = DEMOTE_FLOOR, base: float = 0.0
) -> list[Candidate]:
    """The moved chunks back in order, each ahead of the first kept chunk that scores under
    `share` of its own score (both above `base`): a capped chunk gives way to other files'
    close matches, not to chunks that barely match. A moved chunk scores no higher than the
    one before it, so the scores read in the order of the results (as a promoted definition's
    do)."""
    out: list[Candidate] = []
    waiting = list(moved)

    def place(candidate: Candidate) -> None:
        if out:
            candidate.score = min(candidate.score, out[-1].score)
        out.append(candidate)

    for candidate in kept:
        while waiting and candidate.score - base < (waiting[0].score - base) * share:
            place(waiting.pop(0))
        out.append(candidate)
    for candidate in waiting:
        place(candidate)
    return out


def _places(conn: Connection, ids: list[int]) -> dict[int, tuple[int, str | None, int | None]]:
    return retrieval.chunk_places(conn, ids)


def group_copies(
    conn: Connection, candidates: list[Candidate], per_file: int = 0, files: bool = False
) -> list[Candidate]:
    """Candidates without the copies of a higher-ranked candidate of another document; each
    kept candidate lists the chunk ids of its copies in `copies`, best-ranked first. Between
    documents that hold each other's text (`store/copies.py`) the bar is GROUPED_SAME_TEXT,
    and a chunk of the lower-ranked document that copies no result above it gives its place
    to the chunk of the higher-ranked document that holds its text, when that one is among
    the candidates below and that document has fewer than `per_file` (0: no cap) results
    above: the results come from the best-ranked copy of a document. `files` (one result a
    file): a document whose text a document above holds is that one's copy."""
    head = candidates[:COPY_DEPTH]
    if len(head) < 2:
        return candidates
    cap = 1 if files else per_file
    ids = [c.chunk_id for c in head]
    texts = retrieval.chunk_texts(conn, ids)
    windows = retrieval.chunk_windows(conn, ids)
    places = _places(conn, ids)
    doc_of = {i: places[i][0] for i in ids if i in places and i in texts}
    shares = copies.shares_among(conn, set(doc_of.values()))
    related = _related(shares)
    own = {i: shingles(texts[i][0]) for i in doc_of}
    index, beside = ShingleIndex(), ShingleIndex()  # kept chunks; the same with neighbours
    kept: list[tuple[Candidate, int]] = []  # by their number in both indexes
    out: list[Candidate] = []
    taken: set[int] = set()  # chunks that took the place of a copy above them
    shown: dict[int, Shown] = {}  # the kept chunks of each document
    stored = StoredChunks(conn)  # the better copies' chunks, when no candidate holds the text
    stood_in: dict[int, int] = {}  # places each document took from its copies
    moved: list[Candidate] = []  # over the file cap once stand-ins took places
    for position, candidate in enumerate(head):
        if candidate.chunk_id in taken:
            continue
        if candidate.chunk_id not in doc_of:  # deleted meanwhile: hydrate skips it
            out.append(candidate)
            continue
        doc = doc_of[candidate.chunk_id]
        direct = index.containments(own[candidate.chunk_id])
        widened = beside.containments(own[candidate.chunk_id])
        original = next(
            (
                k
                for n, (k, d) in enumerate(kept)
                if d != doc
                and _same_text(direct.get(n, 0.0), widened.get(n, 0.0), (doc, d) in related)
            ),
            None,
        )
        if original is None and related:
            original = _covered(own[candidate.chunk_id], doc, related, shown)
        if original is not None:
            original.copies.append(candidate.chunk_id)
            candidate.cut_by.append(f"copy: chunk {original.chunk_id} holds the same text")
            continue
        holder = files and next(
            (k for k, d in kept if shares.get((doc, d), 0.0) >= DOCUMENT_SHARE), None
        )
        if holder:
            holder.copies.append(candidate.chunk_id)
            candidate.cut_by.append(f"copy: the document of chunk {holder.chunk_id} holds its text")
            continue
        over = bool(stood_in.get(doc)) and _over_cap(candidate, cap, len(shown.get(doc, ())))
        if over:  # the places its copies' chunks gave its document filled the cap
            candidate.cut_by.append(f"diversity: {cap} chunk(s) of this file rank above it")
        better = {
            d for d, place in shown.items() if (doc, d) in related and not 0 < cap <= len(place)
        }
        below = head[position + 1 :]
        stand_in = None if over else _holder_below(candidate, below, better, doc_of, own, taken)
        if stand_in is None and better and not over:
            found = stored.holder(own[candidate.chunk_id], better, taken | set(doc_of))
            if found is not None:  # a candidate below the compared ones, or found by no leg
                document_id, chunk_id = found
                later = (c for c in candidates[COPY_DEPTH:] if c.chunk_id == chunk_id)
                stand_in = next(later, None) or Candidate(chunk_id, 0.0, {})
                texts.update(retrieval.chunk_texts(conn, [chunk_id]))
                doc_of[chunk_id], own[chunk_id] = document_id, stored.cut[chunk_id]
        if stand_in is not None:
            taken.add(stand_in.chunk_id)
            stand_in.score = max(stand_in.score, candidate.score)
            stand_in.copies.append(candidate.chunk_id)
            candidate.cut_by.append(
                f"copy: chunk {stand_in.chunk_id} of a better-ranked copy of its document"
                " holds the same text"
            )
            candidate = stand_in
            stood_in[doc_of[stand_in.chunk_id]] = stood_in.get(doc_of[stand_in.chunk_id], 0) + 1
        if candidate.chunk_id not in windows:  # a stand-in read from its document
            windows |= retrieval.chunk_windows(conn, [candidate.chunk_id])
        around = shingles(windows.get(candidate.chunk_id, texts[candidate.chunk_id][0]))
        index.add(own[candidate.chunk_id])
        beside.add(around)
        kept.append((candidate, doc_of[candidate.chunk_id]))
        if related:  # what the rules between copies read
            shown.setdefault(doc_of[candidate.chunk_id], Shown()).add(
                candidate, own[candidate.chunk_id], around
            )
        (moved if over else out).append(candidate)  # a moved one still groups its copies
    rest = [c for c in candidates[COPY_DEPTH:] if c.chunk_id not in taken]
    return _merge(out, moved) + rest if moved else out + rest


def _over_cap(candidate: Candidate, cap: int, shown: int) -> bool:
    """The candidate passed the file cap (`diversify`) but its document has `cap` results
    now (stand-ins for its copies' chunks); one the cap already moved down stays where it is."""
    moved = any(reason.startswith("diversity:") for reason in candidate.cut_by)
    return 0 < cap <= shown and not moved


class StoredChunks:
    """The chunks of the better copies of documents, read from the index once a query for
    the results whose better copy has no candidate holding their text (at most
    STORED_CHUNKS of a document). Only the chunks that hold half of a text's PROBE_WORDS
    longest words are cut into shingles: a book's thousand chunks are not, each query."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.documents: dict[int, list[tuple[int, str]]] = {}  # lower-cased texts
        self.cut: dict[int, Shingles] = {}

    def chunks(self, document_id: int) -> list[tuple[int, str]]:
        if document_id not in self.documents:
            rows = retrieval.chunks_between(self.conn, document_id, 0, STORED_CHUNKS - 1)
            self.documents[document_id] = [(i, t.lower()) for i, t in rows]
        return self.documents[document_id]

    def shingles_of(self, chunk_id: int, text: str) -> Shingles:
        if chunk_id not in self.cut:
            self.cut[chunk_id] = shingles(text)
        return self.cut[chunk_id]

    def holder(
        self, text: Shingles, docs: set[int], excluded: set[int]
    ) -> tuple[int, int] | None:
        """(document, chunk) of the chunk of one of `docs` (not among `excluded`) that holds
        most of the text, when it holds STAND_IN_SHARE of it (its shingles are in `cut`)."""
        if len(text) < MIN_SHINGLES:
            return None
        probe = sorted({w for run in text for w in run}, key=lambda w: (-len(w), w))
        probe = probe[:PROBE_WORDS]
        best, found = STAND_IN_SHARE * len(text), None
        for document_id in sorted(docs):
            for chunk_id, lowered in self.chunks(document_id):
                if chunk_id in excluded or 2 * sum(w in lowered for w in probe) < len(probe):
                    continue
                held = len(text & self.shingles_of(chunk_id, lowered))
                if held >= best:
                    best, found = held + 1e-9, (document_id, chunk_id)
        return found


class Shown:
    """The chunks of one document kept so far: their text, and with the chunks beside them."""

    def __init__(self) -> None:
        self.chunks: list[tuple[Candidate, Shingles]] = []
        self.text: set[tuple[str, ...]] = set()
        self.around: set[tuple[str, ...]] = set()

    def __len__(self) -> int:
        return len(self.chunks)

    def add(self, candidate: Candidate, text: Shingles, around: Shingles) -> None:
        self.chunks.append((candidate, text))
        self.text |= text
        self.around |= around


def _covered(
    text: Shingles, doc: int, related: set[tuple[int, int]], shown: dict[int, Shown]
) -> Candidate | None:
    """The kept chunk that overlaps most a chunk whose text the kept chunks of a copy of its
    document hold together (GROUPED_SAME_TEXT of it with the chunks beside them, OVERLAP in
    the chunks themselves): another format cut the passage across several of them."""
    if len(text) < MIN_SHINGLES:
        return None
    for other, place in shown.items():
        if (doc, other) not in related:
            continue
        if len(text & place.text) < OVERLAP * len(text):
            continue
        if len(text & place.around) < GROUPED_SAME_TEXT * len(text):
            continue
        return max(place.chunks, key=lambda chunk: len(text & chunk[1]))[0]
    return None


def name_copies(conn: Connection, shown: list[Candidate]) -> list[Candidate]:
    """Each shown candidate whose document is one document in two formats (`store/copies.py`)
    names the other format's chunk of the same text in `copies`, when no candidate of that
    document did: it is looked for at the same relative place in the other document, within
    NAME_SPAN of its chunks (from MIN_NAME_SPAN to MAX_NAME_SPAN)."""
    ids = [c.chunk_id for c in shown]
    positions = retrieval.chunk_positions(conn, ids)
    same = copies.same_documents(conn, {p[0] for p in positions.values()})
    if not same:
        return shown
    texts = retrieval.chunk_texts(conn, ids)
    owners = retrieval.chunk_owners(conn, [i for c in shown for i in c.copies])
    for candidate in shown:
        doc, index, count = positions.get(candidate.chunk_id, (None, 0, 0))
        named = {owners.get(i) for i in candidate.copies}
        others = [(o, n) for o, n in same.get(doc, []) if o not in named and n > 0]
        if not others or candidate.chunk_id not in texts:
            continue
        text = shingles(texts[candidate.chunk_id][0])
        for other, other_count in others:
            match = _chunk_holding(conn, text, other, index / max(count, 1), other_count)
            if match is not None and match not in ids:
                candidate.copies.append(match)
    return shown


def _chunk_holding(
    conn: Connection, text: Shingles, document_id: int, place: float, count: int
) -> int | None:
    """The chunk of the document, around `place` (0..1 of its chunks), that holds SAME_TEXT of
    the text (or is held by it), best first."""
    span = min(MAX_NAME_SPAN, max(MIN_NAME_SPAN, round(count * NAME_SPAN)))
    centre = round(place * count)
    rows = retrieval.chunks_between(conn, document_id, centre - span, centre + span)
    scored = [(containment(text, shingles(row_text)), chunk_id) for chunk_id, row_text in rows]
    best = max(scored, default=(0.0, None))
    return best[1] if best[0] >= SAME_TEXT else None


def _same_text(direct: float, widened: float, grouped: bool) -> bool:
    """A chunk holds the text of another (SAME_TEXT of it, alone or with the chunks beside
    it, overlapping by OVERLAP); GROUPED_SAME_TEXT between documents known to be copies."""
    bar = GROUPED_SAME_TEXT if grouped else SAME_TEXT
    return max(direct, widened) >= bar and direct >= OVERLAP


def _related(shares: dict[tuple[int, int], float]) -> set[tuple[int, int]]:
    """Both orders of the pairs of documents where one holds DOCUMENT_SHARE of the other's
    text."""
    return {
        pair
        for (a, b), share in shares.items()
        if share >= DOCUMENT_SHARE
        for pair in ((a, b), (b, a))
    }


def _holder_below(
    candidate: Candidate,
    below: list[Candidate],
    docs: set[int],
    doc_of: dict[int, int],
    own: dict[int, Shingles],
    taken: set[int],
) -> Candidate | None:
    """The first candidate below, of one of `docs`, whose chunk holds STAND_IN_SHARE of the
    candidate's text (it is shown instead, so it must hold the passage, not only touch it)."""
    if not docs:
        return None
    text = own[candidate.chunk_id]
    if len(text) < MIN_SHINGLES:
        return None
    for other in below:
        if other.chunk_id in taken or doc_of.get(other.chunk_id) not in docs:
            continue
        if len(text & own[other.chunk_id]) >= STAND_IN_SHARE * len(text):
            return other
    return None


SCORE_STEP = 0.001  # the smallest difference a compact answer's 3-digit scores show


def distinct_scores(candidates: list[Candidate]) -> list[Candidate]:
    """Scores that read in the order of the results and never tie: a candidate scoring as high
    as the one above it (a tie broken by agreement, a chunk moved down for diversity, a
    promoted definition) scores SCORE_STEP under it. Walked from the top, so a page's scores
    are the same however many pages follow."""
    previous = None
    for candidate in candidates:
        if previous is not None and candidate.score > previous - SCORE_STEP:
            candidate.score = max(0.0, previous - SCORE_STEP)
        previous = candidate.score
    return candidates
