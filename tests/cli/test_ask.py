"""`kb ask` and `kb search --expand` end to end: the CLI in-process, a KB over the sample
corpus, and a real chat server on loopback (tests/model_server.py) answering from a script
over streamed HTTP, OpenAI- and Ollama-shaped, with its faults."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kb_search.ask import checked_text, claims_of
from kb_search.search.expand import parse_expansion
from model_server import Running

ANSWER = (
    "Build it from source with make prefix=/usr/local all [1]. "
    "It needs the curl, expat and zlib headers [1][2]."
)
FIXTURE = {
    "replies": [
        {"match": "install git from source", "reply": ANSWER},
        {
            "match": "what does the meeting say",
            "reply": "The team met [1]. They chose Postgres [7].",
        },
        {"match": "Question: colour the terminal", "reply": "Red \x1b[31mtext\x1b]0;x\x07 [1]."},
        {
            "match": "Question: retry statuses",
            "reply": "Statuses 502, 503 and 504 are retried [2].",
        },
        {
            "match": "retry statuses",
            "reply": "lex: retry.statuses transient 502 503\n"
            "vec: which HTTP status codes are retried\n"
            "hyde: retry.statuses lists the transient codes",
        },
    ],
    "default": "nothing scripted",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    started = Running(FIXTURE, tmp_path_factory.mktemp("ask-server"))
    yield started
    started.stop()


@pytest.fixture
def asking(kb, sample, environment, server):
    """The sample corpus indexed, kb pointed at the scripted chat server."""
    server.fault("ok")
    kb("add", str(sample))
    environment.env.update(
        KB_LLM_MODEL="openai:scripted", KB_LLM_ENDPOINT=f"{server.url}/v1",
        KB_ASK_MIN_SIMILARITY="0", KB_LLM_RETRIES="0",
    )  # fmt: skip
    return kb


def test_without_a_chat_model_ask_says_how_to_set_one_in_one_line(kb, sample) -> None:
    kb("add", str(sample))
    result = kb("ask", "how", "do", "I", "install", "git", ok=False)
    assert result.exit_code == 1
    line = result.stderr.strip()
    assert "\n" not in line and "llm.model" in line and "ollama:" in line
    assert "Traceback" not in result.output + result.stderr


def test_the_answer_cites_only_passages_it_was_given_and_each_opens(asking, server) -> None:
    data = asking.json("ask", "how", "do", "I", "install", "git", "from", "source")
    assert data["refused"] is False and data["complete"] is True
    assert data["answer"] == ANSWER
    given = {p["number"]: p for p in data["passages"]}
    assert data["citations"] and all(c == given[c["number"]] for c in data["citations"])
    assert [c["citations"] for c in data["claims"]] == [[1], [1, 2]]
    for citation in data["citations"]:  # each opens with kb get: the chunk it names
        got = asking.json("get", citation["citation"])["passages"]
        assert len(got) == 1 and citation["chunk_id"] in got[0]["chunk_ids"]
    assert {"search", "first_token", "answer", "total"} <= set(data["timings_ms"])
    # the prompt held the retrieved passages, numbered with their citations, and nothing else
    prompt = server.stats()["requests"][-1]["body"]["messages"][-1]["content"]
    blocks = [line for line in prompt.splitlines() if line.startswith("[")]
    assert [b.split(" ")[0] for b in blocks] == [f"[{n}]" for n in sorted(given)]
    assert all(f"[{n}] {p['citation']}" in prompt for n, p in given.items())
    assert prompt.rstrip().endswith("Question: how do I install git from source")


def test_a_citation_of_a_passage_not_given_is_dropped_and_its_claim_uncited(asking) -> None:
    data = asking.json("ask", "what", "does", "the", "meeting", "say", "--passages", "3")
    assert data["dropped_citations"] == [7]
    assert data["answer"] == "The team met [1]. They chose Postgres [uncited]."
    assert [c["uncited"] for c in data["claims"]] == [False, True]
    assert [c["number"] for c in data["citations"]] == [1]


def test_weak_evidence_is_refused_saying_what_was_searched(asking, environment, server) -> None:
    environment.env["KB_ASK_MIN_SIMILARITY"] = "1"
    data = asking.json("ask", "what", "does", "the", "meeting", "say", "--type", "text")
    assert data["refused"] is True and data["answer"] == "" and data["citations"] == []
    reason = data["reason"]
    assert reason.startswith("the knowledge base has nothing on this")
    assert '"what does the meeting say"' in reason and "type: text" in reason
    assert server.stats()["requests"] == []  # the model was not asked


def test_a_stream_that_dies_mid_answer_keeps_what_came_and_exits_1(asking, server) -> None:
    server.fault("die", pieces=2)
    result = asking("ask", "install git from source", "--format", "json", ok=False)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["complete"] is False and "stopped mid-answer" in data["error"]
    assert data["answer"] == " ".join(ANSWER.split(" ")[:6]) + " "


def test_at_a_terminal_the_answer_streams_then_its_sources(asking, environment) -> None:
    result = asking("ask", "install git from source", "--format", "human")
    out = result.stdout
    assert out.startswith(ANSWER)
    assert "Sources:" in out and "[1] " in out and "git-admin.md" in out


def test_an_ollama_model_answers_the_same(asking, environment, server) -> None:
    environment.env.update(KB_LLM_MODEL="ollama:scripted", KB_LLM_ENDPOINT=server.url)
    data = asking.json("ask", "install git from source")
    assert data["answer"] == ANSWER and data["model"] == "ollama:scripted"
    assert server.stats()["requests"][-1]["path"] == "/api/chat"


def _db_digest(environment) -> str:
    db = Path(environment.env["KB_DATA_DIR"]) / "kb.db"
    return hashlib.sha256(db.read_bytes()).hexdigest()


def test_expand_searches_the_models_phrasings_as_also_and_caches_them(
    asking, environment, server
) -> None:
    before = _db_digest(environment)
    data = asking.json("search", "retry statuses", "--expand")
    assert [(v["text"], v["use"], v.get("from")) for v in data["variants"]] == [
        ("retry.statuses transient 502 503", "lexical", "model"),
        ("which HTTP status codes are retried", "vector", "model"),
        ("retry.statuses lists the transient codes", "vector", "model"),
    ]
    found = {f[0] for r in data["results"] for f in r["found_by"]}
    assert found & {1, 2, 3}  # the phrasings found hits, and say so
    also = asking.json(
        "search", "retry statuses", "--also", "lex: retry.statuses transient 502 503",
        "--also", "vec: which HTTP status codes are retried",
        "--also", "vec: retry.statuses lists the transient codes",
    )  # fmt: skip
    assert [r["chunk_id"] for r in data["results"]] == [r["chunk_id"] for r in also["results"]]
    asked = len(server.stats()["requests"])
    again = asking.json("search", "retry statuses", "--expand")
    assert len(server.stats()["requests"]) == asked  # from the cache
    assert again["results"] == data["results"]
    cache = Path(environment.env["KB_DATA_DIR"]) / "expansions"
    assert len(list(cache.glob("*.json"))) == 1
    assert _db_digest(environment) == before  # search never writes to the DB


def test_a_failing_model_leaves_the_question_alone_with_a_note(asking, server) -> None:
    server.fault("500", count=-1)
    data = asking.json("search", "backoff jitter", "--expand")
    plain = asking.json("search", "backoff jitter")
    assert [r["chunk_id"] for r in data["results"]] == [r["chunk_id"] for r in plain["results"]]
    assert data["variants"] == []
    assert any(n.startswith("--expand: chat model openai:scripted") for n in data["notes"])


def test_expand_without_a_chat_model_is_one_line(kb, sample) -> None:
    kb("add", str(sample))
    result = kb("search", "retry", "--expand", ok=False)
    assert result.exit_code == 1 and "llm.model" in result.stderr


def test_eval_gains_a_hybrid_expand_row_with_a_chat_model(asking, tmp_path, sample) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "retry statuses", "relevant": [
        "my notes/docs/http-retries.md"], "variants": ["lex: retry.statuses"]}) + "\n")  # fmt: skip
    data = asking.json("eval", str(questions), "--mode", "hybrid")
    modes = [s["mode"] for s in data["scores"]]
    assert modes == ["hybrid", "hybrid+variants", "hybrid+plain-variants", "hybrid+expand"]
    assert data["llm"] == "openai:scripted"


def test_parse_expansion_keeps_one_of_each_kind_and_drops_repeats() -> None:
    text = (
        "Sure! Here are phrasings:\n1. lex: PVC prune=false\nLEX: other words\n"
        "- vec: How do I keep a PVC?\nhyde: The PVC stays when Prune=false is set.\n"
    )
    assert parse_expansion(text, "keep a PVC") == [
        "lex: PVC prune=false",
        "vec: How do I keep a PVC?",
        "vec: The PVC stays when Prune=false is set.",
    ]
    assert parse_expansion("lex: Keep a pvc\nvec: keep, a PVC!", "keep a PVC") == []
    assert parse_expansion("no phrasings at all", "q") == []
    # one plain word is no phrasing; one identifier is
    assert parse_expansion("lex: configuration\nvec: settings", "q") == []
    assert parse_expansion("lex: url_is_from_any_domain", "q") == ["lex: url_is_from_any_domain"]
    assert parse_expansion("lex: ___\nvec: --", "q") == []  # nothing a search takes


def test_claims_and_markers() -> None:
    claims = claims_of("A is so [1]. B is not [2, 9].\nC has none.", 3)
    assert [(c.citations, c.dropped, c.uncited) for c in claims] == [
        ([1], [], False), ([2], [9], False), ([], [], True)]  # fmt: skip
    assert checked_text("A [1]. B [9]. C [2, 9].", 3) == "A [1]. B [uncited]. C [2]."


def test_a_model_phrasing_counts_only_when_it_agrees_with_the_question() -> None:
    from kb_search.search.expand import agreeing
    from kb_search.search.legs import LegResult

    question = {"lexical": LegResult("ok", [(1, 0.9), (2, 0.8)]),
                "vector": LegResult("ok", [(3, 0.7), (4, 0.6)])}  # fmt: skip
    caller = {"lexical": LegResult("ok", [(50, 0.9)])}  # the caller's own: never judged
    agrees = {"vector": LegResult("ok", [(60, 0.9)] * 9 + [(4, 0.5)])}  # 4 is in its top 10
    late = {"vector": LegResult("ok", [(70, 0.9)] * 10 + [(1, 0.1)])}  # 1 only at rank 11
    nothing = {"lexical": LegResult(status="empty")}
    kept, ignored = agreeing(question, [caller, agrees, late, nothing], expanded=3)
    assert ignored == {3, 4}
    assert kept == [caller, agrees, {}, {}]


def test_a_model_phrasing_that_finds_nothing_the_question_does_is_reported_ignored(
    asking, server
) -> None:
    server.script({"replies": [{"match": "backoff jitter", "reply": "lex: zyxwvut qqqq"}]})
    try:
        data = asking.json("search", "backoff jitter", "--expand")
        human = asking("search", "backoff jitter", "--expand", "--format", "human").stdout
    finally:
        server.script(FIXTURE)
    plain = asking.json("search", "backoff jitter")
    assert "Also searched [1] (keywords, by your chat model): zyxwvut qqqq (took no part:" in (
        " ".join(human.split())
    )
    assert data["variants"][0]["from"] == "model" and "ignored" in data["variants"][0]
    assert [r["chunk_id"] for r in data["results"]] == [r["chunk_id"] for r in plain["results"]]


def test_control_characters_from_the_model_never_reach_the_terminal(asking) -> None:
    out = asking("ask", "colour the terminal", "--format", "human").stdout
    assert "\x1b" not in out and "\x07" not in out
    assert out.startswith("Red \\x1b[31mtext\\x1b]0;x\\x07 [1].")
