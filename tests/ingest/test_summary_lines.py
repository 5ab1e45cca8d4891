"""What the add and sync summaries say about work an interrupted run left."""

from __future__ import annotations

from kb_search.ingest.summary import AddSummary
from kb_search.ingest.sync import SyncSummary


def test_a_resumed_add_says_it_embedded_what_an_earlier_run_left():
    """Old code: a `kb add` that resumed after a kill -9 embedded 993 chunks for 5 minutes and
    said only "Added 0 documents. 0 failed. 70 skipped (already indexed)."."""
    summary = AddSummary(skipped=70, embedded=993)
    assert summary.line().endswith(
        "70 skipped (already indexed). 993 chunks embedded that an earlier run left without a"
        " vector."
    )
    fresh = AddSummary(added=3, chunks=40, embedded=40)  # its own chunks: nothing to add
    assert "earlier run" not in fresh.line()
    both = AddSummary(added=1, chunks=10, embedded=11)
    assert "1 chunk embedded that an earlier run left without a vector" in both.line()


def test_a_sync_says_it_too():
    summary = SyncSummary(unchanged=5, embedded=12)
    assert "12 chunks embedded that an earlier run left without a vector" in summary.line()
    assert "earlier run" not in SyncSummary(updated=1, chunks=4, embedded=4).line()
