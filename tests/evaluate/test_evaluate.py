import math
import random

import pytest

from kb_search.evaluate.beir import load_dataset
from kb_search.evaluate.metrics import mrr_at, ndcg_at, percentile, recall_at


def test_ndcg_by_hand():
    relevant = {"a": 2, "b": 1, "z": 1}
    ranking = ["b", "x", "a"]
    dcg = 1 / math.log2(2) + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(ranking, relevant, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at(["a", "b", "z"], relevant, 10) == pytest.approx(1.0)
    assert ndcg_at(["x"], relevant, 10) == 0.0
    # cut-off: a relevant document at rank 11 does not count for nDCG@10
    assert ndcg_at([f"n{i}" for i in range(10)] + ["a"], relevant, 10) == 0.0


def test_metrics_agree_with_trec_eval():
    """Random runs and graded qrels scored by pytrec_eval (trec_eval's own code)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(60)]
    qrels, runs = {}, {}
    for q in range(40):
        qid = f"q{q}"
        qrels[qid] = {d: rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 8))}
        if not any(qrels[qid].values()):
            qrels[qid][docs[0]] = 1
        runs[qid] = rng.sample(docs, rng.randint(5, 50))
    trec_run = {
        qid: {doc: float(len(ranking) - i) for i, doc in enumerate(ranking)}
        for qid, ranking in runs.items()
    }
    measures = {"ndcg_cut.10", "recall.100", "recip_rank"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(trec_run)
    for qid, ranking in runs.items():
        assert ndcg_at(ranking, qrels[qid], 10) == pytest.approx(expected[qid]["ndcg_cut_10"])
        assert recall_at(ranking, qrels[qid], 100) == pytest.approx(expected[qid]["recall_100"])
        # trec_eval's recip_rank has no cut-off: compare where the first hit is in the top 10
        first = next(
            i for i, d in enumerate(ranking + list(qrels[qid])) if qrels[qid].get(d, 0) > 0
        )
        if first < 10:
            assert mrr_at(ranking, qrels[qid], 10) == pytest.approx(expected[qid]["recip_rank"])
        else:
            assert mrr_at(ranking, qrels[qid], 10) == 0.0


def test_recall_and_mrr():
    relevant = {"a": 1, "b": 1, "c": 0}
    assert recall_at(["x", "a", "c"], relevant, 100) == 0.5
    assert recall_at(["x", "a"], relevant, 1) == 0.0
    assert mrr_at(["x", "c", "b"], relevant, 10) == pytest.approx(1 / 3)
    assert mrr_at(["x"] * 10 + ["a"], relevant, 10) == 0.0


def test_percentile():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5.0], 95) == 5.0
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)


def test_load_dataset(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "T", "text": "x"}\n')
    (tmp_path / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "x"}\n{"_id": "q2", "text": "y"}\n'
    )
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    ds = load_dataset(tmp_path)
    assert ds.queries == {"q1": "x"}
    assert ds.qrels == {"q1": {"d1": 1}}


def test_eval_index_follows_the_corpus_content_not_its_mtime(tmp_path):
    import os

    from kb_search.evaluate.beir import index_fingerprint
    from kb_search.parsed import ChunkSettings

    test_load_dataset(tmp_path)
    settings = ChunkSettings()
    before = index_fingerprint(load_dataset(tmp_path), settings, "m")
    corpus = tmp_path / "corpus.jsonl"
    os.utime(corpus, (1, 1))  # copied or touched: same content
    assert index_fingerprint(load_dataset(tmp_path), settings, "m") == before
    corpus.write_text('{"_id": "d1", "title": "T", "text": "y"}\n')  # same size, new text
    assert index_fingerprint(load_dataset(tmp_path), settings, "m") != before


def test_hit_at_k():
    from kb_search.evaluate.metrics import hit_at

    assert hit_at(["a", "b", "c"], {"b": 1}, 1) == 0.0
    assert hit_at(["a", "b", "c"], {"b": 1}, 5) == 1.0
    assert hit_at(["a"], {"a": 0}, 5) == 0.0
