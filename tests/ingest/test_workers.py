import os
import signal
import threading
import time

from kb_search.ingest.workers import ParseJob, ParserPool
from kb_search.parsed import ChunkSettings


def big_markdown(path, sections=4000):
    path.write_text(
        "\n\n".join(f"## Section {i}\n\n" + "lorem ipsum dolor " * 60 for i in range(sections))
    )
    return path


def test_outcomes_for_good_empty_and_bad_files(tmp_path):
    good = tmp_path / "good.md"
    good.write_text("# Title\n\nSome text about otters.\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\x00\xff" * 100)
    job = ParseJob(settings=ChunkSettings(), max_bytes=10_000_000)
    with ParserPool(job, workers=2, timeout_s=60) as pool:
        outcomes = {o.key: o for o in pool.parse([(1, good), (2, empty), (3, binary)])}
    assert outcomes[1].status == "ok" and outcomes[1].document.title == "Title"
    assert outcomes[2].status == "empty"
    assert outcomes[3].status == "error" and "binary" in outcomes[3].reason


def test_timeout_kills_the_worker_and_the_pool_goes_on(tmp_path):
    small = tmp_path / "small.md"
    small.write_text("# Small\n\nfine\n")
    big = big_markdown(tmp_path / "big.md")
    job = ParseJob(settings=ChunkSettings(), max_bytes=100_000_000)
    with ParserPool(job, workers=1, timeout_s=60) as pool:
        assert [o.status for o in pool.parse([(0, small)])] == ["ok"]  # worker warmed up
        first_pid = pool._slots[0].process.pid
        pool.timeout_s = 0.05
        [late] = list(pool.parse([(1, big)]))
        assert late.status == "error" and late.reason.startswith("timed out after")
        assert pool._slots[0].process.pid != first_pid
        pool.timeout_s = 60
        assert [o.status for o in pool.parse([(2, small)])] == ["ok"]


def test_a_crashing_worker_is_reported_and_replaced(tmp_path):
    small = tmp_path / "small.md"
    small.write_text("# Small\n\nfine\n")
    big = big_markdown(tmp_path / "big.md", sections=20000)
    job = ParseJob(settings=ChunkSettings(), max_bytes=100_000_000)
    with ParserPool(job, workers=1, timeout_s=120) as pool:
        list(pool.parse([(0, small)]))
        pid = pool._slots[0].process.pid
        threading.Timer(0.3, os.kill, (pid, signal.SIGKILL)).start()
        outcomes = list(pool.parse([(1, big), (2, small)]))
    assert outcomes[0].key == 1 and outcomes[0].reason == "parser process crashed (signal 9)"
    assert outcomes[1].key == 2 and outcomes[1].status == "ok"


def test_the_next_file_is_parsed_while_the_caller_handles_an_outcome(tmp_path):
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text("# A\n\none\n")
    second.write_text("# B\n\ntwo\n")
    dispatched: list[int] = []
    job = ParseJob(settings=ChunkSettings(), max_bytes=10_000_000)
    with ParserPool(job, workers=1, timeout_s=60) as pool:
        outcomes = pool.parse([(1, first), (2, second)], dispatched.append)
        assert next(outcomes).key == 1
        assert dispatched == [1, 2]  # already with the worker, before the caller asks
        assert [o.key for o in outcomes] == [2]


def test_the_caller_works_while_a_long_file_is_parsed_and_its_outcome_still_comes(tmp_path):
    """`idle(seconds)`: called while no outcome is ready, with how long the file in hand has
    been parsed (the writer embeds a batch then); the outcome comes when it is ready."""
    import time

    big = big_markdown(tmp_path / "big.md", sections=8000)
    seen: list[float] = []

    def idle(parsing: float) -> bool:
        seen.append(parsing)
        time.sleep(0.01)
        return True

    job = ParseJob(settings=ChunkSettings(), max_bytes=100_000_000)
    with ParserPool(job, workers=1, timeout_s=120) as pool:
        [outcome] = list(pool.parse([(1, big)], idle=idle))
    assert outcome.status == "ok" and outcome.key == 1
    assert len(seen) > 1 and seen == sorted(seen) and seen[-1] > seen[0]


def test_an_outcome_that_came_while_the_caller_worked_is_not_a_timeout(tmp_path):
    """The caller's work in `idle` (an embedding batch beside the OCR phase) may outlast the
    time limit; a file parsed meanwhile is an outcome, not a file that timed out."""
    small = tmp_path / "small.md"
    small.write_text("# Small\n\nfine\n")
    job = ParseJob(settings=ChunkSettings(), max_bytes=10_000_000)
    calls = []

    def idle(parsing: float) -> bool:
        calls.append(parsing)
        if len(calls) == 1:
            time.sleep(1.5)  # longer than the limit: the file is parsed meanwhile
            return True
        return False

    with ParserPool(job, workers=1, timeout_s=60) as pool:
        list(pool.parse([(0, small)]))  # worker warmed up
        pool.timeout_s = 1.0
        [outcome] = list(pool.parse([(1, small)], idle=idle))
    assert calls and outcome.status == "ok", outcome.reason
