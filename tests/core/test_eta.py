"""The ingest ETA as a function of progress events and the clock: synthetic runs whose true
remaining time is known, each a case the estimator before this one got wrong by more than the
±30% it must keep (PDF pages cost more than their text, embedding that overlaps the parsing,
a long file in hand)."""

from __future__ import annotations

import pytest

from kb_search.progress import (
    EMBED_BATCH,
    EMBED_WINDOW,
    PDF_PAGE_PARSE,
    PDF_PAGE_WORK,
    PRIOR_CHUNK_BYTES,
    RECENT_CHUNKS,
    WINDOW_TIME,
    CpuRate,
    Tally,
    sharing_slowdown,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def within(estimate: float | None, truth: float, share: float = 0.30) -> bool:
    return estimate is not None and abs(estimate / truth - 1) <= share


def test_pdf_pages_cost_more_than_the_text_they_hold():
    """300 KB of Markdown written at 500 KB/s, then 100 one-page PDFs that cost
    `PDF_PAGE_PARSE` bytes of Markdown each: after the Markdown, the keyword phase's time left
    is the pages' (5 s), not 100 x 3 KB of text at Markdown speed (0.6 s)."""
    clock = Clock()
    tally = Tally(clock=clock)
    tally.start(130)
    tally.add_work(300_000 + 100 * PDF_PAGE_WORK, pages=100)
    for _ in range(30):
        clock.now += 0.02
        tally.advance(1, work=10_000, chunks=15)
    page_s = PDF_PAGE_PARSE / 500_000
    truth = 100 * page_s
    assert within(tally.keyword_eta(), truth)
    for _ in range(50):  # and it holds as the PDFs go
        clock.now += page_s
        tally.advance(1, work=PDF_PAGE_WORK, chunks=2, pages=1)
    assert within(tally.keyword_eta(), 50 * page_s)


def test_chunks_embedded_while_files_are_parsed_shorten_the_embedding_phase():
    """600 PDF pages at 10 pages/s, 2 chunks each; while they are parsed the writer embeds 10
    chunks/s in the time it would wait (sharing the cores with the parser: the embedding phase
    alone runs twice as fast on two cores). Half-way (30 s), 30 s of parsing are left, during
    which 300 more chunks get vectors; then the 600 left take 30 s at 20/s."""
    clock = Clock()
    tally = Tally(clock=clock, prior_rate=1e6, prior_embed_rate=10.0, sample_slowdown=2.0)
    tally.start(600)
    tally.add_work(600 * PDF_PAGE_WORK, pages=600)
    for second in range(30):
        for _ in range(10):
            clock.now += 0.1
            tally.await_embedding(2)
            tally.advance(1, work=PDF_PAGE_WORK, chunks=2, pages=1)
        if second % 4 == 3:  # a batch of 32 every 3.2 s, at 10 chunks/s
            tally.embed_sample(32, 3.2)
    clock.now = 30.0
    embedded = tally.sampled
    truth = 30 + (1200 - embedded - 300) / 20
    assert within(tally.keyword_eta(), 30.0, 0.05)
    assert within(tally.eta(), truth, 0.10)


def test_the_file_in_hand_counts_as_work_being_done():
    """Ten 40-page PDFs at 4 s each: 3 s into the third, 1 s is left on it and 28 s on the
    rest, not the full 32 s of the eight not done."""
    clock = Clock()
    tally = Tally(clock=clock)
    tally.start(10)
    tally.add_work(10 * 40 * PDF_PAGE_WORK, pages=400)
    for _ in range(2):
        clock.now += 4
        tally.advance(1, work=40 * PDF_PAGE_WORK, chunks=60, pages=40)
    clock.now += 3
    assert tally.keyword_eta() == pytest.approx(29.0)


def test_the_phases_are_estimated_apart_and_added():
    clock = Clock()
    tally = Tally(clock=clock, prior_rate=1000.0, prior_embed_rate=10.0)
    tally.start(4)
    tally.await_embedding(0)
    tally.add_work(60_000)
    assert tally.keyword_eta() == pytest.approx(60)  # the prior: 60 KB at 1 KB/s
    embed = 60_000 / PRIOR_CHUNK_BYTES / 10  # the chunks 60 KB holds, at 10/s
    assert tally.embed_eta() == pytest.approx(embed)
    assert tally.eta() == pytest.approx(60 + embed)


def test_a_batch_embedded_beside_the_parser_is_slower_by_the_cores_the_parser_takes():
    """On two cores the parser takes half of them (recorded: the embedding phase ran 1.4-2.8x
    faster than that batch); on sixteen it hardly matters."""
    assert sharing_slowdown(2) == 2.0
    assert sharing_slowdown(16) == pytest.approx(16 / 15)
    tally = Tally(clock=Clock(), prior_embed_rate=100.0, sample_slowdown=sharing_slowdown(2))
    tally.embed_sample(32, 3.2)
    assert tally.embed_rate() == pytest.approx(20.0)
    tally.measured_before(None, 14.0)  # what this index measured on its last run wins
    assert tally.embed_rate() == 14.0


def test_a_file_that_fails_leaves_the_work_and_the_speed_alone():
    """Ten 10-page PDFs at 1 s each; one more (400 pages by its count) fails at once: the
    eight left take 8 s, not 0.4 s (its pages counted as parsed in no time) nor 48 s."""
    clock = Clock()
    tally = Tally(clock=clock)
    tally.start(11)
    tally.add_work(500 * PDF_PAGE_WORK, pages=500)
    for _ in range(2):
        clock.now += 1
        tally.advance(1, work=10 * PDF_PAGE_WORK, chunks=30, pages=10)
    tally.skip_work(400 * PDF_PAGE_WORK, pages=400)
    tally.advance(1)
    assert within(tally.keyword_eta(), 8.0, 0.05)


def embedding_phase(clock: Clock, chunks: int) -> Tally:
    tally = Tally(clock=clock)  # no speed expected: only the one measured
    tally.start(1)
    tally.await_embedding(chunks)
    tally.embedding(chunks)
    return tally


def embed_windows(tally: Tally, clock: Clock, windows: int, seconds: float) -> None:
    """`windows` windows of chunks, each taking `seconds`: the embedder sorts a window by
    length, so each 16th of it takes its measured share of the time (`WINDOW_TIME`)."""
    step = EMBED_WINDOW // 16
    for _ in range(windows):
        for k in range(16):
            clock.now += (WINDOW_TIME[k + 1] - WINDOW_TIME[k]) * seconds
            tally.embedded(step)


def test_a_window_begun_with_its_short_chunks_is_not_read_as_a_faster_machine():
    """Two windows of 256 chunks at 25.6 s each (10 chunks/s). Half a window in, its 128
    shortest chunks took 41% of its time: 40.6 s are left, not 384 chunks at the 12 chunks/s
    they went (32 s, -22%)."""
    clock = Clock()
    tally = embedding_phase(clock, 2 * EMBED_WINDOW)
    step = EMBED_WINDOW // 16
    for k in range(8):
        clock.now += (WINDOW_TIME[k + 1] - WINDOW_TIME[k]) * 25.6
        tally.embedded(step)
    assert within(tally.eta(), 51.2 - clock.now, 0.05)


def test_the_embedding_speed_follows_a_machine_that_slows_down():
    """Four windows at 20 chunks/s, then the machine gets busy: two at 5/s. The run's mean
    (10/s) alone says 256 s for the ten windows left; the recent speed pulls the estimate
    towards the 512 s they take at 5/s."""
    assert RECENT_CHUNKS <= 2 * EMBED_WINDOW
    clock = Clock()
    tally = embedding_phase(clock, 16 * EMBED_WINDOW)
    embed_windows(tally, clock, 4, EMBED_WINDOW / 20)
    embed_windows(tally, clock, 2, EMBED_WINDOW / 5)
    mean_only = 10 * EMBED_WINDOW / 10
    assert tally.eta() > 1.2 * mean_only
    assert tally.eta() < 512  # blended with the run's: a burst of load passes


def test_pages_of_a_file_queued_again_count_once():
    """A scan queued by a stopped run is found in the queue, then parsed and queued again:
    its pages wait once; a file whose pages leave the queue takes them out."""
    tally = Tally(clock=Clock())
    tally.await_ocr(3, "/a/scan.pdf")  # found in the queue
    tally.await_ocr(2, "/a/mixed.pdf")
    tally.await_ocr(3, "/a/scan.pdf")  # parsed again, queued again
    assert tally.ocr_waiting == 5
    tally.await_ocr(0, "/a/mixed.pdf")  # failed now: unqueued
    assert tally.ocr_waiting == 3


def test_the_window_is_the_one_the_embedder_sorts():
    """`WINDOW_TIME` was measured on windows of FILL_BATCH chunks, each sorted by length and
    embedded 16 at a time: a change to either makes the weighting wrong."""
    import inspect

    from kb_search.embedding import embedder
    from kb_search.vectors.writer import FILL_BATCH

    batch = inspect.signature(embedder.Embedder.embed_passages).parameters["batch_size"].default
    assert EMBED_WINDOW == FILL_BATCH == batch * embedder._SORT_WINDOW_BATCHES
    assert batch == EMBED_BATCH
    assert len(WINDOW_TIME) == EMBED_WINDOW // batch + 1
    assert list(WINDOW_TIME) == sorted(WINDOW_TIME) and WINDOW_TIME[-1] == 1.0


@pytest.mark.parametrize("chunks", [100, 300, 1000])
def test_every_chunk_embedded_leaves_no_time_and_a_full_bar(chunks):
    """The last window holds only what is left: its share is of its own size."""
    from kb_search.progress import window_work

    assert window_work(chunks, chunks) == pytest.approx(chunks)
    assert window_work(chunks - 1, chunks) < chunks


def loaded_run(shares: list[tuple[float, float]], chunks: int, per_cpu_s: float = 10.0):
    """An embedding phase of `chunks` whose process gets `share` CPU-seconds per second from
    each (time, share) on, each chunk costing the same CPU time (`per_cpu_s` chunks a
    CPU-second, by `window_work`): the (wall, CPU, chunks embedded) after each batch."""
    from kb_search.progress import window_work

    now = cpu = 0.0
    points = []
    for done in range(EMBED_BATCH, chunks + 1, EMBED_BATCH):
        cost = (window_work(done, chunks) - window_work(done - EMBED_BATCH, chunks)) / per_cpu_s
        share = next(s for at, s in reversed(shares) if now >= at)
        now, cpu = now + cost / share, cpu + cost
        points.append((now, cpu, done))
    return points


def replayed(points, chunks: int, with_cpu: bool = True):
    """The Tally of `points`, its ETA and the true time left after each batch."""
    clock = Clock()
    cpu = [0.0]
    tally = Tally(clock=clock)
    tally.cpu_clock = (lambda: cpu[0]) if with_cpu else (lambda: None)
    tally.start(1)
    tally.await_embedding(chunks)
    tally.embedding(chunks)
    end = points[-1][0]
    for now, used, done in points:
        clock.now, cpu[0] = now, used
        tally.embedded(done - tally.embed_done)
        yield now, tally.eta(), end - now


@pytest.mark.parametrize("shares", [[(0, 1.8), (60, 0.45)], [(0, 0.45), (60, 1.8)]])
def test_the_embedding_speed_follows_the_cpu_share_the_load_leaves(shares):
    """The machine's load changes a minute into the phase (three busy processes come, or
    go): the process's CPU share moves 4x, a chunk's CPU cost does not. A minute after the
    change the ETA is within 30% of the time left, and stays there (the run's blended speed
    was -54% or +46% then, and took three minutes more)."""
    chunks = 6400
    checked = 0
    for now, eta, left in replayed(loaded_run(shares, chunks), chunks):
        if now >= 120 and left > 20:
            assert within(eta, left), (now, eta, left)
            checked += 1
    assert checked > 20


def test_without_cpu_time_the_speed_is_the_blended_one():
    """A platform (or a recorded run) without the process's CPU time: the wall-clock speed,
    the run's and the recent one blended, as before."""
    chunks = 6400
    points = loaded_run([(0, 1.8), (60, 0.45)], chunks)
    with_cpu = list(replayed(points, chunks))
    without = list(replayed(points, chunks, with_cpu=False))
    assert without[-1][1] == pytest.approx(0.0)
    clock = Clock()
    tally = embedding_phase(clock, 16 * EMBED_WINDOW)
    embed_windows(tally, clock, 4, EMBED_WINDOW / 20)
    assert tally.cpu_clock is None and tally.embedded_cpu.per_cpu_second() is None
    assert tally.embed_rate() == pytest.approx(tally.progress_embedded.per_second())
    # the same run, its CPU unknown: the ETA differs from the CPU-led one after the change
    late = [(a[1], b[1]) for a, b in zip(with_cpu, without) if a[0] > 100 and a[2] > 20]
    assert late and all(abs(c - w) > 0.05 * c for c, w in late)


def test_a_real_clock_brings_the_process_cpu_time_and_a_test_clock_none():
    import time

    assert Tally().cpu_clock is time.process_time
    assert Tally(clock=Clock()).cpu_clock is None


def test_a_batch_slowed_by_the_load_shows_before_it_is_done():
    """A minute at 1.8 CPU-seconds a second, then the process gets 0.1: its batch in hand
    (1.6 CPU-seconds) takes 16 s. 12 s into it the process's CPU clock has shown the drop:
    the ETA has grown, where a clock that only counts chunks credits the batch as done."""
    chunks = 6400
    points = [p for p in loaded_run([(0, 1.8)], chunks) if p[0] <= 60]
    clock = Clock()
    cpu = [0.0]
    tally = Tally(clock=clock)
    tally.cpu_clock = lambda: cpu[0]
    tally.start(1)
    tally.await_embedding(chunks)
    tally.embedding(chunks)
    for now, used, done in points:
        clock.now, cpu[0] = now, used
        tally.embedded(done - tally.embed_done)
    before = tally.eta()
    clock.now, cpu[0] = clock.now + 12, cpu[0] + 1.2
    assert tally.eta() > 1.5 * before


def test_the_cpu_share_can_be_read_while_batches_are_added():
    """The progress display reads the estimate from its own thread while the embedder adds
    a point per batch: reading the recent CPU share never fails on a changing history."""
    import sys
    import threading

    rate = CpuRate()
    errors: list[Exception] = []
    done = threading.Event()

    def display() -> None:
        while not done.is_set():
            if not rate.points:
                continue
            try:  # half the recent window back: the history is read through
                rate.share(rate.points[-1][0] + 5, 1e9)
            except RuntimeError as exc:  # 'deque mutated during iteration'
                errors.append(exc)
                return

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    reader = threading.Thread(target=display)
    reader.start()
    try:
        at = 0.0
        for _ in range(100_000):
            at += 0.01
            rate.add(at, at, at)
            if errors:
                break
    finally:
        done.set()
        reader.join()
        sys.setswitchinterval(switch)
    assert errors == []


def test_a_tiny_first_file_is_not_taken_for_the_whole_folders_speed_and_chunks():
    """A 5 MB folder whose first file is a 459-byte changelog (2 chunks) done 0.7 s after the
    start (the parser's start-up): old code took 685 bytes/s and a chunk per 230 bytes for the
    whole folder, an ETA of 10,115 s for a run that took 1,350 s (recorded, `kb add` of a
    587-file folder). The priors now weigh as a little measuring of the job's own."""
    clock = Clock()
    tally = Tally(clock=clock, prior_rate=300_000.0, prior_embed_rate=9.0)
    tally.start(444)
    tally.await_embedding(0)
    tally.add_work(5_113_263)
    clock.now += 0.7
    tally.await_embedding(2)
    tally.advance(1, work=459, chunks=2)
    # the truth of that run: 26 s of parsing, then 11,100 chunks embedded in 1,324 s
    assert within(tally.eta(), 1350.0, share=0.5)
    for _ in range(40):  # once the run measures enough of its own, its own speed decides
        clock.now += 0.5
        tally.await_embedding(250)
        tally.advance(1, work=50_000, chunks=250)
    assert tally.keyword_eta() == pytest.approx((5_113_263 - 459 - 2_000_000) / 100_000, rel=0.1)
