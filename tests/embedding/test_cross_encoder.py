"""The cross-encoder reranker on a tiny random BertForSequenceClassification: the converted
graph against a numpy reference, provisioning, scoring, and the rerank stage in a search.

No cross-encoder with real weights can be had offline (no hub here, and no PyPI package ships
one), so what the real model would rank is not tested here: the arithmetic and the plumbing are.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from tiny_bert import (  # noqa: E402
    cross_encoder_weights,
    reference_logits,
    write_checkpoint,
    write_cross_encoder,
    write_safetensors,
)

from kb_search.config import load_config  # noqa: E402
from kb_search.embedding.bert_onnx import ConversionError, build_bert_onnx  # noqa: E402
from kb_search.embedding.cross_encoder import CrossEncoder, load_cross_encoder, relevance  # noqa: E402
from kb_search.embedding.provision import provision_model  # noqa: E402
from kb_search.errors import ConfigError  # noqa: E402
from kb_search.knowledge_base import KnowledgeBase  # noqa: E402
from kb_search.models.rerankers import CrossEncoderReranker, reranker_named  # noqa: E402
from kb_testing import HashEmbedder  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"
IDS = np.array([[2, 5, 7, 3, 9, 11, 3], [2, 6, 3, 8, 3, 0, 0]], dtype=np.int64)
MASK = (IDS != 0).astype(np.int64)
TYPES = np.array([[0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0]], dtype=np.int64)


def _logits(graph_dir: Path) -> np.ndarray:
    session = ort.InferenceSession(
        str(graph_dir / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    feed = {"input_ids": IDS, "attention_mask": MASK, "token_type_ids": TYPES}
    return session.run(["logits"], feed)[0]


@pytest.mark.parametrize("labels", [1, 2])
@pytest.mark.parametrize("external", [True, False])
def test_classifier_graph_equals_the_reference(tmp_path: Path, labels: int, external: bool) -> None:
    model = write_cross_encoder(tmp_path / "ce", labels=labels)
    weights = "model.safetensors" if external else None
    graph = build_bert_onnx(
        model / "config.json", model / "model.safetensors", weights, head="classifier"
    )
    (model / "model.onnx").write_bytes(graph)
    got = _logits(model)
    want = reference_logits(cross_encoder_weights(labels), IDS, MASK, TYPES)
    assert got.shape == (2, labels)
    np.testing.assert_allclose(got, want, atol=1e-4)
    # the second sequence's padding changes nothing
    short = reference_logits(
        cross_encoder_weights(labels), IDS[1:, :5], MASK[1:, :5], TYPES[1:, :5]
    )
    np.testing.assert_allclose(got[1:], short, atol=1e-4)


def test_an_embedding_checkpoint_is_not_taken_for_a_cross_encoder(tmp_path: Path) -> None:
    model = write_checkpoint(tmp_path / "encoder")
    with pytest.raises(ConversionError, match="not a sequence-classification"):
        build_bert_onnx(model / "config.json", model / "model.safetensors", head="classifier")


def test_relevance_is_a_probability() -> None:
    one = relevance(np.array([[0.0], [2.0], [-2.0]]))
    np.testing.assert_allclose(one, [0.5, 1 / (1 + np.exp(-2)), 1 / (1 + np.exp(2))])
    two = relevance(np.array([[1.0, 1.0], [0.0, 3.0]]))
    np.testing.assert_allclose(two, [0.5, np.exp(3) / (1 + np.exp(3))])


def test_provisioned_cross_encoder_scores_pairs_as_the_reference(tmp_path: Path) -> None:
    model = write_cross_encoder(tmp_path / "ce")
    encoder = load_cross_encoder("local/ce", tmp_path / "cache", model)
    assert encoder.info.head == "classifier"
    query = "alpha search"
    passages = ["beta gamma index", "vector", "alpha search model note delta", ""]
    scores = encoder.score(query, passages, batch_size=2)
    tokenizer = encoder._tokenizer
    for passage, score in zip(passages, scores):
        enc = tokenizer.encode(query, passage)
        ids = np.array([enc.ids])
        want = relevance(
            reference_logits(
                cross_encoder_weights(), ids, np.ones_like(ids), np.array([enc.type_ids])
            )
        )
        assert enc.type_ids[0] == 0 and enc.type_ids[-1] == 1  # query A, passage B
        assert score == pytest.approx(want[0], abs=1e-5)
    assert encoder.score(query, []).shape == (0,)
    # reused from the cache without the source
    shutil.rmtree(model)
    again = CrossEncoder(provision_model("local/ce", tmp_path / "cache", head="classifier"))
    np.testing.assert_allclose(again.score(query, passages), scores, atol=1e-6)


def test_an_embedder_and_a_reranker_of_one_model_keep_entries_of_their_own(tmp_path: Path) -> None:
    model = write_cross_encoder(tmp_path / "ce")
    cache = tmp_path / "cache"
    encoder = provision_model("local/ce", cache, model)
    cross = provision_model("local/ce", cache, model, head="classifier")
    assert (encoder.head, cross.head) == ("encoder", "classifier") and encoder.path != cross.path
    stamps = [(e.path / "kb_model.json").stat().st_mtime_ns for e in (encoder, cross)]
    for _ in range(2):  # provisioned again both ways: each entry reused, none converted again
        assert provision_model("local/ce", cache, model).path == encoder.path
        assert provision_model("local/ce", cache, model, head="classifier").path == cross.path
    assert [(e.path / "kb_model.json").stat().st_mtime_ns for e in (encoder, cross)] == stamps
    assert len(CrossEncoder(cross).score("alpha", ["beta"])) == 1
    with pytest.raises(Exception, match="not a cross-encoder"):
        CrossEncoder(encoder)


def test_a_failed_reranker_leaves_the_embedders_entry_alone(tmp_path: Path) -> None:
    encoder_dir = write_checkpoint(tmp_path / "minilm")  # an embedder: no classifier
    cache = tmp_path / "cache"
    entry = provision_model("local/minilm", cache, encoder_dir)
    with pytest.raises(ConversionError):
        provision_model("local/minilm", cache, encoder_dir, head="classifier")
    assert (entry.path / "kb_model.json").is_file()


def test_two_directories_of_one_name_are_two_rerankers(tmp_path: Path) -> None:
    a = reranker_named(str(write_cross_encoder(tmp_path / "a" / "model", seed=1)), tmp_path / "c")
    b = reranker_named(str(write_cross_encoder(tmp_path / "b" / "model", seed=2)), tmp_path / "c")
    assert a.name != b.name and a.model.info.path != b.model.info.path
    assert a.model.score("alpha", ["beta"])[0] != b.model.score("alpha", ["beta"])[0]


def test_a_two_class_reranker_scores_the_class_its_labels_call_relevant(tmp_path: Path) -> None:
    model = write_cross_encoder(tmp_path / "ce", labels=2)
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(
        json.dumps({**config, "id2label": {"0": "relevant", "1": "irrelevant"}})
    )
    encoder = load_cross_encoder("local/ce", tmp_path / "cache", model)
    assert encoder.info.relevant_label == 0
    enc = encoder._tokenizer.encode("alpha", "beta gamma")
    ids = np.array([enc.ids])
    logits = reference_logits(
        cross_encoder_weights(2), ids, np.ones_like(ids), np.array([enc.type_ids])
    )
    want = np.exp(logits[0]) / np.exp(logits[0]).sum()
    assert encoder.score("alpha", ["beta gamma"])[0] == pytest.approx(want[0], abs=1e-5)
    three = write_cross_encoder(tmp_path / "nli", labels=3)
    with pytest.raises(ConfigError, match="3 labels: not a relevance"):
        reranker_named(str(three), tmp_path / "cache")


def test_a_model_that_cannot_score_pairs_is_refused_when_it_loads(tmp_path: Path) -> None:
    model = write_cross_encoder(tmp_path / "one-segment")
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "type_vocab_size": 1}))
    tensors = cross_encoder_weights()
    tensors["bert.embeddings.token_type_embeddings.weight"] = tensors[
        "bert.embeddings.token_type_embeddings.weight"
    ][:1]
    write_safetensors(model / "model.safetensors", tensors)
    with pytest.raises(ConfigError, match="cannot score a query and a passage") as caught:
        reranker_named(str(model), tmp_path / "cache")
    assert "\n" not in str(caught.value)


def test_a_tokenizer_without_a_pair_template_is_refused(tmp_path: Path) -> None:
    from tokenizers.implementations import BertWordPieceTokenizer

    model = write_cross_encoder(tmp_path / "no-pairs")
    tokenizer = BertWordPieceTokenizer(str(model / "vocab.txt"))
    tokenizer._tokenizer.post_processor = None
    tokenizer.save(str(model / "tokenizer.json"))
    with pytest.raises(ConfigError, match="does not encode a query and a passage as a pair"):
        reranker_named(str(model), tmp_path / "cache")


def test_long_pairs_are_cut_from_their_longer_side(tmp_path: Path) -> None:
    model = write_cross_encoder(tmp_path / "ce")
    encoder = load_cross_encoder("local/ce", tmp_path / "cache", model)
    window = encoder.info.max_tokens
    query = "alpha beta gamma"
    long_passage = " ".join(["delta"] * (3 * window))
    [enc] = encoder._tokenizer.encode_batch([(query, long_passage)])
    words = encoder._tokenizer.encode(query, add_special_tokens=False).ids
    assert len(enc.ids) == window and enc.ids[1:4] == words  # the short query stays whole
    long_query = " ".join(["search"] * (2 * window))  # longer than the window on its own
    scores = encoder.score(long_query, ["index vector", long_passage])
    assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))


def test_the_rerank_stage_stops_at_the_search_budget(tmp_path: Path) -> None:
    from kb_search.errors import SearchError
    from kb_search.search.results import Candidate

    reranker = reranker_named(str(write_cross_encoder(tmp_path / "ce")), tmp_path / "cache")
    candidates = [Candidate(i, 0.5, {}, text=f"alpha w{i}") for i in range(40)]
    with pytest.raises(SearchError, match="past the search's budget"):
        reranker.rerank("alpha", candidates, deadline=time.monotonic() - 1)
    assert len(reranker.rerank("alpha", candidates, deadline=time.monotonic() + 60)) == 40


def test_a_search_whose_rerank_runs_past_the_budget_is_stopped(tmp_path, monkeypatch) -> None:
    from kb_search.embedding.cross_encoder import CrossEncoder as Model
    from kb_search.errors import SearchError

    model = write_cross_encoder(tmp_path / "slow-ce")
    shutil.copytree(SAMPLE, tmp_path / "notes")
    run = Model._run
    monkeypatch.setattr(Model, "_run", lambda self, *a: time.sleep(0.4) or run(self, *a))
    with _kb(tmp_path, str(model), depth=40) as kb:
        kb.add([tmp_path / "notes"])
        options = kb.search_options(top=5)  # built (its probe runs) before the clock starts
        kb.config.values["search.timeout_s"] = 0.3
        started = time.monotonic()
        with pytest.raises(SearchError, match="ran past its 0.3 s budget"):
            kb.search("git", options)
        assert time.monotonic() - started < 2.0  # not all 3 batches and the rest


def test_rerank_depth_is_at_most_200(tmp_path: Path) -> None:
    env = {"KB_DATA_DIR": str(tmp_path / "data"), "KB_RERANK_DEPTH": "201"}
    with pytest.raises(ConfigError, match="rerank_depth"):
        load_config(env=env)


def test_a_relative_reranker_directory_means_the_same_model_from_any_directory(
    tmp_path: Path,
) -> None:
    write_cross_encoder(tmp_path / "models" / "ce")
    env = {"KB_DATA_DIR": str(tmp_path / "data"), "KB_RERANKER": "models/ce@int8"}
    config = load_config(env=env, cwd=tmp_path)
    assert config["search.reranker"] == f"{(tmp_path / 'models' / 'ce').resolve()}@int8"
    assert load_config(env={**env, "KB_RERANKER": "none"}, cwd=tmp_path)["search.reranker"] == (
        "none"
    )
    model_id = load_config(env={**env, "KB_RERANKER": "org/model"}, cwd=tmp_path)
    assert model_id["search.reranker"] == "org/model"
    # in a config file: beside the file, else a model id (never the cwd of whoever runs it)
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yaml").write_text("search:\n  reranker: models/ce\n")
    from_file = load_config(env={"KB_DATA_DIR": str(data)}, cwd=tmp_path)
    assert from_file["search.reranker"] == "models/ce"
    with pytest.raises(ConfigError, match="reranker 'models/ce' is not available"):
        reranker_named("models/ce", tmp_path / "cache")  # from tmp_path: not taken as a dir


def _kb(tmp_path: Path, reranker: str, depth: int = 30) -> KnowledgeBase:
    env = {
        "KB_DATA_DIR": str(tmp_path / "data"),
        "KB_WORKERS": "0",
        "KB_MODEL_CACHE": str(tmp_path / "models"),
        "KB_RERANKER": reranker,
        "KB_RERANK_DEPTH": str(depth),
    }
    return KnowledgeBase(load_config(env=env), embedder=HashEmbedder(), cwd=tmp_path)


def test_search_reranks_the_fused_head_with_the_cross_encoder(tmp_path: Path) -> None:
    model = write_cross_encoder(tmp_path / "my reranker")
    shutil.copytree(SAMPLE, tmp_path / "notes")
    with _kb(tmp_path, str(model), depth=6) as kb:
        kb.add([tmp_path / "notes"])
        # per_file=0: no diversity stage after the rerank, to see its order as it is
        options = kb.search_options(top=20, per_file=0)
        assert isinstance(options.reranker, CrossEncoderReranker)
        assert re.fullmatch(r"local/my reranker-[0-9a-f]{6}", options.reranker.name)
        response = kb.search("install git", options)
        assert "rerank" in response.timings_ms
        fused_ids = [r.chunk_id for r in kb.search("install git", kb.search_options(
            top=20, reranker=_NoRerank(), per_file=0)).results]  # fmt: skip
        head, tail = response.results[:6], response.results[6:]
        # the head: the fused top 6, ordered by the cross-encoder's reading of the chunk with
        # its title and heading line
        assert {r.chunk_id for r in head} == set(fused_ids[:6])
        texts = {}
        conn = kb.reader()
        for r in head:
            title, heading, text = conn.execute(
                "SELECT d.title, c.heading, c.text FROM chunks c JOIN documents d"
                " ON d.id = c.document_id WHERE c.id = ?",
                (r.chunk_id,),
            ).fetchone()
            context = " > ".join(x for x in (title, heading) if x)
            texts[r.chunk_id] = f"{context}\n{text}" if context else text
        want = options.reranker.model.score("install git", [texts[r.chunk_id] for r in head])
        assert [r.score for r in head] == pytest.approx(sorted(want, reverse=True), abs=1e-6)
        assert all(r.score_breakdown["rerank"] == pytest.approx(r.score, abs=1e-6) for r in head)
        assert all(r.score_breakdown["fts"] is not None or r.score_breakdown["vector"] is not None
                   for r in head)  # fmt: skip
        # the tail keeps the fused order, never above the head
        assert [r.chunk_id for r in tail] == fused_ids[6:]
        assert all(r.score <= head[-1].score for r in tail)
        # a shorter list is a prefix of a longer one
        top3 = kb.search("install git", kb.search_options(top=3))
        assert [r.chunk_id for r in top3.results] == [r.chunk_id for r in response.results[:3]]


class _NoRerank:
    """A reranker that keeps the fused order (to read it with the same options)."""

    name = "keep"

    def rerank(self, query, candidates, deadline=None):
        return candidates


def test_a_directory_that_is_not_a_model_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError) as caught:
        reranker_named(str(tmp_path / "empty"), tmp_path / "cache")
    assert str(caught.value).startswith(f"reranker '{tmp_path / 'empty'}' is not available: ")
    assert "\n" not in str(caught.value)


def test_kb_search_with_an_unavailable_reranker_says_so_in_one_line(
    kb, sample, environment, monkeypatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    kb("add", str(sample))
    environment.env["KB_RERANKER"] = "nope/no-such-reranker"
    result = kb("search", "git", ok=False)
    assert result.exit_code != 0
    message = result.stderr.strip()
    assert "reranker 'nope/no-such-reranker' is not available" in message
    assert "\n" not in message and "Traceback" not in result.output + result.stderr


def test_eval_names_the_reranker_and_none_turns_it_off(kb, sample, environment, tmp_path) -> None:
    model = write_cross_encoder(tmp_path / "tiny-ce")
    questions = tmp_path / "q.jsonl"
    item = {"id": "1", "question": "install git", "relevant": ["my notes/docs/git-admin.md"]}
    questions.write_text(json.dumps(item) + "\n")
    kb("add", str(sample))
    environment.env["KB_RERANKER"] = str(model)
    reranked = kb.json("eval", str(questions), "--mode", "hybrid")
    name = reranked["reranker"]
    assert name.startswith("local/tiny-ce-") and reranked["rerank_depth"] == 30
    plain = kb.json("eval", str(questions), "--mode", "hybrid", "--reranker", "none")
    assert plain["reranker"] == "none" and plain["rerank_depth"] is None
    human = kb("eval", str(questions), "--mode", "hybrid", "--format", "human").stdout
    assert f"reranked by {name} (top 30)" in human


def test_doctor_reports_the_reranker(kb, sample, environment, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    kb("add", str(sample))
    checks = {c["name"]: c for c in kb.json("doctor")["checks"]}
    assert checks["reranker"]["ok"] and checks["reranker"]["detail"].startswith("none")
    environment.env["KB_RERANKER"] = str(write_cross_encoder(tmp_path / "tiny-ce"))
    checks = {c["name"]: c for c in kb.json("doctor")["checks"]}
    assert checks["reranker"]["ok"]
    assert re.match(r"local/tiny-ce-[0-9a-f]{6} \(local:", checks["reranker"]["detail"])
    environment.env["KB_RERANKER"] = "nope/no-such-reranker"
    result = kb("doctor", "--format", "json", ok=False)
    assert result.exit_code == 1
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert not checks["reranker"]["ok"] and "is not available" in checks["reranker"]["detail"]


def test_a_quantised_reranker_scores_close_to_the_float_one(tmp_path: Path) -> None:
    pytest.importorskip("onnx")  # onnxruntime's quantiser needs it (the int8 extra)
    model = write_cross_encoder(tmp_path / "ce")
    fp32 = reranker_named(str(model), tmp_path / "cache")
    int8 = reranker_named(f"{model}@int8", tmp_path / "cache")
    assert int8.name == f"{fp32.name}@int8" and fp32.name.startswith("local/ce-")
    assert int8.model.info.variant == "int8" and int8.model.info.head == "classifier"
    passages = ["beta gamma index", "vector", "alpha search model note delta"]
    a = fp32.model.score("alpha search", passages)
    b = int8.model.score("alpha search", passages)
    assert np.abs(a - b).max() < 0.1 and not np.array_equal(a, b)


def test_the_terminal_says_the_results_were_reranked(kb, sample, environment, tmp_path) -> None:
    kb("add", str(sample))
    assert '"git" (hybrid): ' in kb("search", "git", "--format", "human").stdout
    environment.env["KB_RERANKER"] = str(write_cross_encoder(tmp_path / "tiny-ce"))
    assert '"git" (hybrid, reranked): ' in kb("search", "git", "--format", "human").stdout
