"""The speeds an index measured on its last run, kept in its meta table: text parsed and
written (`progress.work_units` per second) and chunks embedded by each model (per second).
The next `kb add` or `kb sync` of the same index starts its ETA from them
(`Progress.measured_before`) instead of a prior made on another machine."""

from __future__ import annotations

import json

from kb_search.store.db import Connection, DatabaseError, get_meta, set_meta

PARSE_KEY = "speed.parse"
EMBED_KEY = "speed.embed:"  # + the model's name
# A speed is kept only from a run this long, and this large: a few chunks or a second are
# mostly start-up.
MIN_SECONDS = 10.0
MIN_CHUNKS = 100


def recall(conn: Connection, model: str | None) -> tuple[float | None, float | None]:
    """(work units parsed per second, chunks embedded per second by `model`), each None
    when this index has not measured it."""
    parse = _read(conn, PARSE_KEY)
    return parse, _read(conn, EMBED_KEY + model) if model else None


def remember_parse(conn: Connection, units: float, seconds: float) -> None:
    if seconds >= MIN_SECONDS and units > 0:
        _write(conn, PARSE_KEY, units / seconds)


def remember_embed(conn: Connection, model: str | None, chunks: int, seconds: float) -> None:
    if model and seconds >= MIN_SECONDS and chunks >= MIN_CHUNKS:
        _write(conn, EMBED_KEY + model, chunks / seconds)


def _read(conn: Connection, key: str) -> float | None:
    try:
        value = json.loads(get_meta(conn, key) or "null")
    except (DatabaseError, ValueError):
        return None
    speed = value.get("per_s") if isinstance(value, dict) else None
    ok = isinstance(speed, (int, float)) and not isinstance(speed, bool) and 0 < speed < 1e12
    return float(speed) if ok else None


def _write(conn: Connection, key: str, speed: float) -> None:
    try:
        set_meta(conn, key, json.dumps({"per_s": round(speed, 3)}))
    except DatabaseError:
        pass  # an estimate's memory: never worth failing the run
