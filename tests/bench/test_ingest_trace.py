"""`python -m bench ingest_trace score`: a recorded run's progress events replayed through the
estimator, scored against when the run really ended."""

from __future__ import annotations

import json

import pytest
from bench.ingest_trace import errors, load, replay

from kb_search.progress import window_work


def write_trace(path, rate: float) -> None:
    """Ten 100 KB files in 10 s, then 1,000 chunks embedded at `rate` per second, each window
    of 256 short ones first, as the embedder sorts it (`progress.WINDOW_TIME`)."""
    events = [{"t": 0.0, "e": "start", "a": [10, "files"]},
              {"t": 0.0, "e": "add_work", "a": [1_000_000.0], "k": {"pages": 0}}]  # fmt: skip
    for i in range(1, 11):
        events.append({"t": float(i), "e": "await_embedding", "a": [100]})
        events.append({"t": float(i), "e": "advance", "a": [1], "k": {"work": 1e5, "chunks": 100}})
    events.append({"t": 10.0, "e": "embedding", "a": [1000]})
    for done in range(10, 1001, 10):
        events.append({"t": 10.0 + window_work(done) / rate, "e": "embedded", "a": [10]})
    end = events[-1]["t"]
    truth = {"end": end, "keyword_s": 10.0, "documents": 10, "chunks": 1000, "failed": 0,
             "model": "all-MiniLM-L6-v2"}  # fmt: skip
    path.write_text("\n".join(json.dumps(x) for x in [*events, truth]) + "\n")


@pytest.mark.parametrize("rate", [5.0, 10.0, 20.0])  # slower than the prior, near it, faster
def test_a_steady_run_is_estimated_within_a_few_percent_once_measured(tmp_path, rate):
    """Whatever this machine's speed against the prior's (9 chunks/s): a faster laptop is
    not held to the prior once the run has measured its own."""
    trace = tmp_path / "steady.jsonl"
    write_trace(trace, rate=rate)
    events, truth = load(trace)
    samples = replay(events, truth["model"])
    assert samples and samples[0][0] == 1.0  # one estimate a second
    scored = errors(samples, truth["end"])
    for at in ("50%", "75%"):
        assert abs(scored[at]) < 0.08, (at, scored)
    if rate <= 10.0:  # a quarter of the way is long enough into the embedding to be measured
        assert abs(scored["25%"]) < 0.05, scored
        assert scored["within 30% after 1 min"] == 1.0


def test_an_older_trace_is_replayed_as_todays_code_reports_it():
    """Before `skip_work`, a failed file was a step done with its work; before unopenable PDFs
    counted one page, an encrypted 2 MB file was 666 pages of work until it failed."""
    from bench.ingest_trace import _current, upgrade

    from kb_search.cli.progress import ProgressView

    failed = {"t": 2.0, "e": "advance", "a": [1], "k": {"work": 2_000_000.0, "pages": 666}}
    events = [
        {"t": 0.0, "e": "start", "a": [2, "files"]},
        {"t": 0.0, "e": "add_work", "a": [2_030_000.0], "k": {"pages": 676}},
        {"t": 1.0, "e": "advance", "a": [0], "k": {"work": 30_000.0, "chunks": 30, "pages": 10}},
        {"t": 1.0, "e": "advance", "a": [1]},
        failed,
    ]
    upgraded = upgrade(events)
    assert upgraded[1]["a"] == [33_000.0] and upgraded[1]["k"]["pages"] == 11
    assert upgraded[4]["k"] == {"work": 3000.0, "pages": 1}
    view = ProgressView("x")
    assert _current(upgraded[4], view) == [
        ("skip_work", [3000.0], {"pages": 1}),
        ("advance", [1], {}),
    ]
    assert _current(upgraded[2], view) == [("advance", [0], upgraded[2]["k"])]


def write_loaded_trace(path, with_cpu: bool) -> None:
    """One 100 KB file, then 4,000 chunks embedded at 10 a CPU-second; the process gets 1.8
    CPU-seconds a second, 0.45 from 60 s on (the machine got busy and stayed so). The CPU
    time is recorded with each event and between them, as `record` does."""
    events = [{"t": 0.0, "e": "start", "a": [1, "files"], "c": 0.0},
              {"t": 0.0, "e": "add_work", "a": [1e5], "k": {"pages": 0}, "c": 0.0},
              {"t": 1.0, "e": "await_embedding", "a": [4000], "c": 0.5},
              {"t": 1.0, "e": "advance", "a": [1], "k": {"work": 1e5, "chunks": 4000}, "c": 0.5},
              {"t": 1.0, "e": "embedding", "a": [4000], "c": 0.5}]  # fmt: skip
    now, cpu = 1.0, 0.5
    for done in range(16, 4001, 16):
        cost = (window_work(done, 4000) - window_work(done - 16, 4000)) / 10
        share = 1.8 if now < 60 else 0.45
        while cost > 1e-9:  # a tick every 0.5 s while the batch runs
            step = min(cost, 0.5 * share)
            now, cpu, cost = now + step / share, cpu + step, cost - step
            events.append({"t": now, "e": "cpu", "a": [], "c": cpu})
        events.append({"t": now, "e": "embedded", "a": [16], "c": cpu})
    if not with_cpu:
        events = [{k: v for k, v in e.items() if k != "c"} for e in events if e["e"] != "cpu"]
    truth = {"end": now, "keyword_s": 1.0, "documents": 1, "chunks": 4000, "failed": 0,
             "model": "all-MiniLM-L6-v2"}  # fmt: skip
    path.write_text("\n".join(json.dumps(x) for x in [*events, truth]) + "\n")


def test_the_cpu_time_a_trace_recorded_paces_the_replayed_estimate(tmp_path):
    """The same run replayed with and without the CPU time it recorded: with it, the ETA
    follows the machine that got busy within a minute; without (a trace recorded before
    `record` wrote it), the blended wall-clock speed lags for minutes."""
    scored = {}
    for with_cpu in (True, False):
        trace = tmp_path / f"loaded-{with_cpu}.jsonl"
        write_loaded_trace(trace, with_cpu)
        events, truth = load(trace)
        scored[with_cpu] = errors(replay(events, truth["model"]), truth["end"])
    with_cpu, without = scored[True], scored[False]
    assert with_cpu["within 30% after 1 min"] > 0.9, with_cpu  # 93%
    assert with_cpu["mean |error| after 1 min"] < 0.2, with_cpu  # 13%
    assert without["within 30% after 1 min"] < 0.75, without  # 65%
    assert without["mean |error| after 1 min"] > 0.25, without  # 30%
