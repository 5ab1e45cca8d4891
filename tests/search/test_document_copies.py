"""Each document once, at the level of documents: pairs of documents that hold each other's
text are recorded as they are written (`store/copies.py`), and search uses them
(`search/shaping.group_copies`): a passage reworded by another format is still a copy, and a
chunk of the lower-ranked copy gives its place to the better-ranked copy's chunk."""

from __future__ import annotations

import random

from kb_search.ingest.sketches import update_copies
from kb_search.parsed import ParsedChunk, ParsedDocument
from kb_search.search.results import Candidate
from kb_search.search.shaping import COPY_DEPTH, group_copies, name_copies
from kb_search.store import copies
from kb_search.store.documents import DocumentRecord, delete_document, write_document

SYLLABLES = [a + b for a in "bdfgklmnprstvz" for b in "aeiou"]


def words(seed: int, count: int) -> list[str]:
    """Deterministic prose-like words: no two seeds share many runs of three."""
    rng = random.Random(seed)
    return ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(count)]


def section(seed: int, count: int = 60) -> str:
    return " ".join(words(seed, count)) + "."


def reworded(text: str, share: float, seed: int) -> str:
    """The text with about `share` of its words replaced (one word in N, spread out)."""
    rng = random.Random(seed)
    out = text.split()
    step = round(1 / share)
    for i in range(0, len(out), step):
        out[i] = "zz" + "".join(rng.choice(SYLLABLES) for _ in range(2))
    return " ".join(out)


def add(conn, path: str, texts: list[str], doc_type: str = "markdown") -> int:
    chunks = [ParsedChunk(text=t, heading=f"part {i}", token_count=60) for i, t in enumerate(texts)]
    parsed = ParsedDocument(title=path, doc_type=doc_type, chunks=chunks)
    record = DocumentRecord(path=path, rel_path=path.lstrip("/"), content_hash=path + str(texts))
    document_id = write_document(conn, record, parsed)
    assert document_id is not None
    update_copies(conn)  # what the end of a `kb add` does
    return document_id


def chunk_ids(conn, document_id: int) -> list[int]:
    sql = "SELECT id FROM chunks WHERE document_id = ? ORDER BY chunk_index"
    return [row[0] for row in conn.execute(sql, (document_id,))]


GUIDE = [section(seed) for seed in range(1, 9)]


def test_two_formats_of_a_guide_are_paired_as_written_and_unpaired_when_one_goes(conn):
    """Old code: nothing recorded which documents hold each other's text."""
    markdown = add(conn, "/docs/guide.md", GUIDE)
    # the same text cut elsewhere (two sections a chunk) with a navigation line on each chunk
    cut = [f"Home Next Previous {a} {b}" for a, b in zip(GUIDE[::2], GUIDE[1::2])]
    html = add(conn, "/docs/guide.html", cut, "html")
    shares = copies.shares_among(conn, [markdown, html])
    assert shares[(markdown, html)] > 0.9 and shares[(html, markdown)] > 0.9
    delete_document(conn, html)
    assert copies.shares_among(conn, [markdown, html]) == {}
    html = add(conn, "/docs/guide.html", cut, "html")
    assert (markdown, html) in copies.shares_among(conn, [markdown, html])
    add(conn, "/docs/guide.md", [section(seed) for seed in range(50, 58)])  # rewritten: other text
    assert copies.shares_among(conn, [markdown, html]) == {}


def test_a_chapter_is_held_by_its_book_and_not_the_other_way(conn):
    book = add(conn, "/docs/book.pdf", GUIDE, "pdf")
    chapter = add(conn, "/docs/ch2.html", GUIDE[2:4], "html")
    shares = copies.shares_among(conn, [book, chapter])
    assert shares[(chapter, book)] > 0.9
    assert (book, chapter) not in shares  # a quarter of the book: not recorded


def test_documents_that_share_boilerplate_are_not_paired(conn):
    """Release notes of consecutive versions (the same header, a few items carried over) and
    source files under one licence header are different documents."""
    header = section(100, 40)
    items = [section(seed, 25) for seed in range(200, 230)]
    first = add(conn, "/notes/release-1.1.md", [header, *items[0:10]])
    second = add(conn, "/notes/release-1.2.md", [header, *items[8:18]])
    licence = section(300, 80)
    sources = [add(conn, f"/src/m{n}.py", [licence, section(400 + n, 120)]) for n in range(3)]
    shares = copies.shares_among(conn, [first, second, *sources])
    assert not [pair for pair, share in shares.items() if share >= copies.COPY_SHARE], shares


def test_pages_made_mostly_of_a_block_many_pages_share_are_not_paired(conn):
    """Argo CD's command reference: each page is its own usage and options, then the same
    block of inherited flags, most of its text. Old pairing (at write time, before many
    holders of the block were known): 578 pairs among the Markdown set's pages; settled on the
    hashes at most RARE_HASH documents hold: 10 (true copies)."""
    block = section(500, 150)
    pages = [add(conn, f"/cmd/argocd_{n}.md", [section(600 + n, 30), block]) for n in range(12)]
    assert copies.shares_among(conn, pages) == {}
    guide = [add(conn, f"/guide/g.{ext}", GUIDE) for ext in ("md", "html", "txt")]
    assert len(copies.shares_among(conn, guide)) == 6  # three formats: still copies


def candidates(ids_and_scores: list[tuple[int, float]]) -> list[Candidate]:
    return [Candidate(chunk_id=i, score=s, breakdown={}) for i, s in ids_and_scores]


def test_a_lower_copys_chunk_gives_its_place_to_the_better_copys_chunk(conn):
    """The same guide in two formats: the HTML's section Y ranked above the Markdown's while
    the Markdown's section X ranked first. Old code: the results came from both formats (X
    from the Markdown, Y from the HTML); now both come from the Markdown, which names the
    HTML chunks in `copies`."""
    markdown = chunk_ids(conn, add(conn, "/docs/guide.md", GUIDE))
    html = chunk_ids(conn, add(conn, "/docs/guide.html", [f"Home {t}" for t in GUIDE], "html"))
    ranked = candidates([(markdown[0], 1.0), (html[3], 0.9), (markdown[3], 0.5), (html[0], 0.4)])
    out = group_copies(conn, ranked, per_file=3)
    assert [c.chunk_id for c in out] == [markdown[0], markdown[3]]
    assert out[0].copies == [html[0]] and out[1].copies == [html[3]]
    assert out[1].score == 0.9  # it takes the place, and the score, of the chunk it stands for


def test_the_better_copys_chunk_stands_in_when_no_candidate_holds_the_passage(conn):
    """The better copy's chunk of the passage was no candidate (neither leg ranked it in the
    first COPY_DEPTH). Old code: the lower copy's chunk was a result of its own (a second copy
    of the document in the top 5); now the better copy's chunk is read from the index and
    shown in its place, naming it."""
    markdown = chunk_ids(conn, add(conn, "/docs/guide.md", GUIDE))
    html = chunk_ids(conn, add(conn, "/docs/guide.html", [f"Home {t}" for t in GUIDE], "html"))
    ranked = candidates([(markdown[0], 1.0), (html[3], 0.9)])
    out = group_copies(conn, ranked, per_file=3)
    assert [c.chunk_id for c in out] == [markdown[0], markdown[3]]
    assert out[1].copies == [html[3]] and out[1].score == 0.9
    assert out[1].found_by == []  # no leg found it: its breakdown says so (null legs)


def test_a_stand_in_read_from_the_index_is_the_candidate_ranked_below_not_a_second_result(conn):
    """The better copy's chunk is a candidate, but below the COPY_DEPTH compared: it moves up
    into the lower copy's place, with what the legs said of it, and is not listed twice."""
    markdown = chunk_ids(conn, add(conn, "/docs/guide.md", GUIDE))
    html = chunk_ids(conn, add(conn, "/docs/guide.html", [f"Home {t}" for t in GUIDE], "html"))
    fillers = [add(conn, f"/other/{n}.md", [section(900 + n)]) for n in range(COPY_DEPTH)]
    filler_chunks = [chunk_ids(conn, d)[0] for d in fillers]
    ranked = candidates(
        [(markdown[0], 1.0), (html[3], 0.9)]
        + [(c, 0.8 - n * 0.01) for n, c in enumerate(filler_chunks)]
        + [(markdown[3], 0.1)]
    )
    ranked[-1].breakdown = {"fts": 0.1, "fts_rank": 40}
    out = group_copies(conn, ranked, per_file=3)
    ids = [c.chunk_id for c in out]
    assert ids[:2] == [markdown[0], markdown[3]] and ids.count(markdown[3]) == 1
    assert html[3] not in ids and out[1].breakdown == {"fts": 0.1, "fts_rank": 40}
    assert len(out) == len(ranked) - 1


def test_a_stand_in_counts_toward_its_documents_file_cap(conn):
    """With two results a file, the better copy's stand-in is its second: its own chunk
    ranked next moves below another file's close match (the cap), as if it had ranked so."""
    markdown = chunk_ids(conn, add(conn, "/docs/guide.md", GUIDE))
    html = chunk_ids(conn, add(conn, "/docs/guide.html", [f"Home {t}" for t in GUIDE], "html"))
    other = chunk_ids(conn, add(conn, "/notes/other.md", [section(4444)]))[0]
    ranked = candidates([(markdown[0], 1.0), (html[3], 0.9), (markdown[5], 0.8), (other, 0.75)])
    out = group_copies(conn, ranked, per_file=2)
    assert [c.chunk_id for c in out] == [markdown[0], markdown[3], other, markdown[5]]
    assert out[3].cut_by and out[3].score <= out[2].score


def test_a_chunk_the_cap_moved_below_stand_ins_still_groups_its_copy(conn):
    """The lower copy's chunk of the moved passage is its copy, not a result of its own."""
    markdown = chunk_ids(conn, add(conn, "/docs/guide.md", GUIDE))
    html = chunk_ids(conn, add(conn, "/docs/guide.html", [f"Home {t}" for t in GUIDE], "html"))
    other = chunk_ids(conn, add(conn, "/notes/other.md", [section(4444)]))[0]
    ranked = candidates(
        [(markdown[0], 1.0), (html[3], 0.9), (markdown[5], 0.8), (other, 0.75), (html[5], 0.7)]
    )
    out = group_copies(conn, ranked, per_file=2)
    assert [c.chunk_id for c in out] == [markdown[0], markdown[3], other, markdown[5]]
    assert out[3].copies == [html[5]]


def test_the_passage_stays_when_the_better_copy_holds_it_nowhere(conn):
    """The lower copy's chunk whose text the better copy holds in no chunk (a passage only one
    format has) keeps its place."""
    markdown = chunk_ids(conn, add(conn, "/docs/guide.md", GUIDE))
    extra = section(4321)
    html = chunk_ids(
        conn, add(conn, "/docs/guide.html", [f"Home {t}" for t in [*GUIDE, extra]], "html")
    )
    ranked = candidates([(markdown[0], 1.0), (html[8], 0.9)])
    out = group_copies(conn, ranked, per_file=3)
    assert [c.chunk_id for c in out] == [markdown[0], html[8]] and out[1].copies == []


def test_the_better_copy_takes_no_more_places_than_the_file_cap(conn):
    markdown = chunk_ids(conn, add(conn, "/docs/guide.md", GUIDE))
    html = chunk_ids(conn, add(conn, "/docs/guide.html", [f"Home {t}" for t in GUIDE], "html"))
    ranked = candidates([(markdown[0], 1.0), (html[3], 0.9), (markdown[3], 0.5)])
    out = group_copies(conn, ranked, per_file=1)
    assert [c.chunk_id for c in out] == [markdown[0], html[3]]
    assert out[1].copies == [markdown[3]]  # the same passage, still grouped chunk by chunk


def test_a_chunk_cut_across_two_results_of_the_better_copy_is_their_copy(conn):
    """The PostgreSQL COPY page as HTML and as a text dump: the text's chunk starts in one
    HTML result, runs through the section between and ends in the next result; it overlaps
    each result by under 20%, so the chunk rule kept it (old code: a slot of its own). The two
    results hold it together, with the section between them beside them."""
    markdown = chunk_ids(conn, add(conn, "/docs/guide.md", GUIDE))
    tail, head = GUIDE[3].split()[-11:], GUIDE[5].split()[:11]
    straddle = " ".join([*tail, *GUIDE[4].split(), *head])
    recut = [*GUIDE[:3], " ".join(GUIDE[3].split()[:-11]), straddle, *GUIDE[6:]]
    text = chunk_ids(conn, add(conn, "/docs/guide.txt", recut, "text"))
    ranked = candidates([(markdown[3], 1.0), (markdown[5], 0.9), (text[4], 0.8)])
    out = group_copies(conn, ranked, per_file=3)
    assert [c.chunk_id for c in out] == [markdown[3], markdown[5]]
    assert out[0].copies == [text[4]]


def test_a_chunk_that_only_touches_the_passage_does_not_stand_in_for_it(conn):
    """The better copy's chunk is shown instead of the passage only when it holds half of it
    (a guard: the passage stays a result when the better copy cuts it elsewhere)."""
    markdown = chunk_ids(conn, add(conn, "/docs/guide.md", GUIDE))
    start = " ".join(GUIDE[3].split()[:15])
    recut = [*GUIDE[:3], f"{start} {section(777)}", *GUIDE[4:]]
    html = chunk_ids(conn, add(conn, "/docs/guide.html", [f"Home {t}" for t in recut], "html"))
    ranked = candidates([(html[0], 1.0), (markdown[3], 0.9), (html[3], 0.5)])
    out = group_copies(conn, ranked, per_file=3)
    assert [c.chunk_id for c in out] == [html[0], markdown[3], html[3]]
    assert out[1].copies == []


def test_a_passage_another_format_rewords_is_a_copy_only_between_paired_documents(conn):
    """An AsciiDoc page and the HTML rendered from it: a passage whose markup and generated
    words make 40% of its shingles differ (git-rebase's options: .64-.68 on the real pair).
    Old code: both answered (under the 0.7 bar). The same reworded passage in a document that
    is not a copy of the first (it shares nothing else) stays a result of its own."""
    source = chunk_ids(conn, add(conn, "/git/git-rebase.txt", GUIDE, "text"))
    changed = reworded(GUIDE[5], 0.12, seed=7)
    rendered = [*GUIDE[:5], changed, *GUIDE[6:]]
    html = chunk_ids(conn, add(conn, "/git/git-rebase.html", rendered, "html"))
    other = chunk_ids(conn, add(conn, "/notes/rebase-notes.md", [changed, section(900)]))
    ranked = candidates([(source[5], 1.0), (html[5], 0.9), (other[0], 0.8)])
    out = group_copies(conn, ranked, per_file=3)
    assert [c.chunk_id for c in out] == [source[5], other[0]]
    assert out[0].copies == [html[5]]


def test_files_mode_names_a_document_held_by_a_better_ranked_one_instead_of_listing_it(conn):
    """`--files`: one result a file. Old code: the guide's HTML was a result of its own below
    the Markdown (its best chunk another passage than the Markdown's). The book that holds a
    chapter is not the chapter's copy: it holds more."""
    markdown = chunk_ids(conn, add(conn, "/docs/guide.md", GUIDE))
    html = chunk_ids(conn, add(conn, "/docs/guide.html", [f"Home {t}" for t in GUIDE], "html"))
    chapter = chunk_ids(conn, add(conn, "/docs/ch2.html", GUIDE[2:4], "html"))
    ranked = candidates([(chapter[0], 1.0), (html[5], 0.9), (markdown[0], 0.8)])
    out = group_copies(conn, ranked, per_file=3, files=True)
    assert [c.chunk_id for c in out] == [chapter[0], html[5]]
    assert out[1].copies == [markdown[0]]


def test_documents_an_older_kb_wrote_are_sketched_by_the_next_run(conn):
    """An index written before sketches were kept (schema 9): `kb add`/`kb sync` sketch its
    documents from their stored text, and the pairs appear."""
    markdown = add(conn, "/docs/guide.md", GUIDE)
    html = add(conn, "/docs/guide.html", [f"Home {t}" for t in GUIDE], "html")
    conn.execute("DELETE FROM document_copies")
    conn.execute("DELETE FROM document_sketches")
    conn.execute("UPDATE documents SET sketched = 0")
    conn.execute("DELETE FROM meta WHERE key = 'copies_settled'")
    assert copies.shares_among(conn, [markdown, html]) == {}
    assert update_copies(conn) == 2
    assert copies.shares_among(conn, [markdown, html])[(html, markdown)] > 0.9
    assert update_copies(conn) == 0


def test_a_result_names_its_other_format_when_no_candidate_did(conn):
    """Old code: a result named a copy only when the copy's chunk was among the candidates
    (the git pages: 134 of the 156 results that have a copy named one; 142 now). The other
    format of one document is searched at the same relative place; a book that holds a
    chapter is not searched for the chapter (its place in the book is unknown)."""
    long_guide = [section(seed) for seed in range(1, 41)]
    markdown = chunk_ids(conn, add(conn, "/docs/guide.md", long_guide))
    html = chunk_ids(conn, add(conn, "/docs/guide.html", [f"Home {t}" for t in long_guide], "html"))
    chapter = chunk_ids(conn, add(conn, "/docs/ch30.html", long_guide[30:33], "html"))
    shown = name_copies(conn, candidates([(markdown[31], 1.0), (markdown[5], 0.9)]))
    assert [c.copies for c in shown] == [[html[31]], [html[5]]]
    assert chapter[1] not in shown[0].copies
    named = candidates([(markdown[7], 1.0)])
    named[0].copies.append(html[7])
    assert name_copies(conn, named)[0].copies == [html[7]]  # named once


def test_two_pages_that_share_most_of_their_text_under_other_names_are_not_copies(conn):
    """Argo CD's `argocd app create` and `argocd app set` pages: their own usage line, then the
    same long list of flags (each holds 80-95% of the other). Old code grouped them (the
    `--files` answer named `app set` under `app create`); two formats of one document share a
    file stem or a title, and a part is much smaller than what holds it."""
    flags = section(700, 200)
    create = add(conn, "/cmd/argocd_app_create.md", [section(701, 25), flags])
    update = add(conn, "/cmd/argocd_app_set.md", [section(702, 25), flags])
    assert copies.shares_among(conn, [create, update]) == {}
    again = add(conn, "/site/argocd_app_set.html", [section(702, 25), flags], "html")
    assert set(copies.shares_among(conn, [update, again])) == {(update, again), (again, update)}


def test_upgrade_notes_of_consecutive_versions_are_not_copies(conn):
    """Argo CD's upgrade notes `2.8-2.9.md` and `2.9-2.10.md` share most of their text; their
    names are not one name (a stem is the name without its format's extension, not the part
    before the first dot: old code read both as `2`). The guide's `.txt.gz` is its `.pdf`."""
    shared = section(800, 150)
    first = add(conn, "/upgrading/2.8-2.9.md", [section(801, 20), shared])
    second = add(conn, "/upgrading/2.9-2.10.md", [section(802, 20), shared])
    assert copies.shares_among(conn, [first, second]) == {}
    text = add(conn, "/guide/maint-guide.en.txt.gz", GUIDE, "text")
    pdf = add(conn, "/guide/maint-guide.en.pdf", GUIDE, "pdf")
    assert len(copies.shares_among(conn, [text, pdf])) == 2


def test_a_large_documents_sketch_costs_its_sketch_not_a_list_of_its_words():
    """Old code: the sketch of a 2 MB text held every word and every shingle hash (about 25
    times the text: 1.3 GB for a 50 MB book); now about the sketch itself."""
    import tracemalloc
    import zlib

    from kb_search.shingles import SKETCH_RATE, sketch

    text = " ".join(section(seed, 2000) for seed in range(140))  # ~1.7 MB
    tracemalloc.start()
    try:
        hashes = sketch(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5 * len(text), peak
    sample = "One two three, Four five six SEVEN eight nine ten eleven twelve."
    words = sample.lower().replace(",", "").replace(".", "").split()
    every = {zlib.crc32(" ".join(words[i : i + 3]).encode()) for i in range(len(words) - 2)}
    assert sketch(sample) == sorted(h for h in every if h % SKETCH_RATE == 0)
    assert len(hashes) > 1000


def test_a_thousand_chapters_of_one_book_cost_their_own_sketches_not_the_books_each(conn):
    """Old code: each chapter written after its book counted the book's whole sketch, and
    `settle` counted it again per pair (a book of 30,000 hashes and 300 chapters: 70 and 27
    million SQLite steps, quadratic: 2,000 chapters of a twice larger book settled in 6.4 s
    against 1.6 s). Counted in SQLite's steps, which no machine's load changes."""
    from kb_search.store.db import transaction

    sections = [section(seed, 120) for seed in range(2000)]
    add_without_settling(conn, "/docs/book.pdf", sections)
    steps = [0]

    def tick() -> int:
        steps[0] += 1000
        return 0

    conn.set_progress_handler(tick, 1000)
    chapters = [add_without_settling(conn, f"/docs/ch{i}.html", [sections[i]]) for i in range(300)]
    written, steps[0] = steps[0], 0
    with transaction(conn):
        copies.settle(conn)
    conn.set_progress_handler(None, 0)
    rows = conn.execute("SELECT count(*) FROM document_sketches").fetchone()[0]
    assert written < 50 * rows and steps[0] < 100 * rows, (written, steps[0], rows)
    assert copies.copied_documents(conn) >= 0.9 * len(chapters)  # each still a part of the book


def add_without_settling(conn, path: str, texts: list[str]) -> int:
    chunks = [ParsedChunk(text=t, heading="part", token_count=60) for t in texts]
    parsed = ParsedDocument(title=path, doc_type="markdown", chunks=chunks)
    record = DocumentRecord(path=path, rel_path=path.lstrip("/"), content_hash=path)
    document_id = write_document(conn, record, parsed)
    assert document_id is not None
    return document_id


def test_two_versions_of_a_manual_with_one_chapter_rewritten_are_two_documents(conn):
    """`v1/guide.md` and `v2/guide.md`, one section of eight rewritten: both hold ~.9 of the
    other under one name. Old code: marked one document in two formats, so the old version's
    section (what only it says) gave its place to, or was folded under, the new version's. A
    file copied twice, and the same guide in another format, still are one document."""
    rewritten = [*GUIDE[:5], reworded(GUIDE[5], 0.2, seed=3), *GUIDE[6:]]
    old = add(conn, "/docs/v1/guide.md", GUIDE)
    new = add(conn, "/docs/v2/guide.md", rewritten)
    assert copies.same_documents(conn, [old, new]) == {}
    assert copies.shares_among(conn, [old, new]) == {}
    twice = add(conn, "/vendor/docs/guide.md", GUIDE)
    html = add(conn, "/docs/v1/guide.html", [f"Home {t}" for t in GUIDE], "html")
    same = copies.same_documents(conn, [old, twice, html])
    assert {other for other, _ in same[old]} == {twice, html}


def test_a_pair_many_mirrors_hid_is_a_pair_again_once_they_go(conn):
    """A guide as Markdown and HTML, then nine mirrors of its text: its hashes are no longer
    rare, so settling leaves no pair. Old code: the guide's pair was deleted then, and when the
    mirrors went it never came back (only writing one of the two again made it)."""
    markdown = add(conn, "/docs/guide.md", GUIDE)
    html = add(conn, "/docs/guide.html", [f"Home {t}" for t in GUIDE], "html")
    mirrors = [add(conn, f"/mirror{n}/notes.txt", GUIDE, "text") for n in range(9)]
    assert (markdown, html) not in copies.shares_among(conn, [markdown, html])
    for mirror in mirrors:
        delete_document(conn, mirror)
    update_copies(conn)
    assert (markdown, html) in copies.shares_among(conn, [markdown, html])
