"""What every answer must satisfy, whatever was asked: checked by the adversarial suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from kb_search.errors import KbError
from kb_search.search.results import SearchResponse
from kb_search.store.db import Connection
from kb_search.store.records import chunks_by_id

SCHEMA = json.loads(
    (
        Path(__file__).resolve().parents[2] / "src/kb_search/schemas/search_response.schema.json"
    ).read_text()
)
PYTHON_LEAKS = ("Traceback", "File \"", "Error:", "Exception", "pydantic", "errors.pydantic.dev")


def check_error_text(message: str) -> None:
    """A message a user or client sees: one line, our words, valid text."""
    assert message.strip(), "empty error message"
    assert "\n" not in message and "\r" not in message, f"multi-line error: {message!r}"
    message.encode("utf-8")
    leaks = [leak for leak in PYTHON_LEAKS if leak in message]
    assert not leaks, f"library text in an error: {message!r}"


def check_kb_error(exc: BaseException) -> None:
    assert isinstance(exc, KbError), f"{type(exc).__name__}: {exc}"
    check_error_text(str(exc))


def check_response(conn: Connection, response: SearchResponse, top: int) -> dict[str, Any]:
    """The JSON contract and the result invariants; returns the JSON."""
    data = response.to_dict()
    text = json.dumps(data, ensure_ascii=False)
    text.encode("utf-8")  # no lone surrogate anywhere in the output
    jsonschema.validate(json.loads(text), SCHEMA)
    assert data["returned"] == len(data["results"]) <= top
    scores = [r["score"] for r in data["results"]]
    assert all(0.0 <= s <= 1.0 for s in scores), scores
    assert scores == sorted(scores, reverse=True), scores
    ids = [r["chunk_id"] for r in data["results"]]
    assert len(set(ids)) == len(ids), f"a chunk returned twice: {ids}"
    stored = chunks_by_id(conn, ids)
    for result in data["results"]:
        chunk = stored.get(result["chunk_id"])
        assert chunk is not None, f"result cites chunk {result['chunk_id']}, not in the DB"
        assert result["citation"] == chunk.citation
        assert result["citation"].startswith(result["source"]["path"])
        assert result["text"] == chunk.text
        assert result["source"]["document_id"] == chunk.document_id
        assert result["source"]["path"] == chunk.path
    return data
