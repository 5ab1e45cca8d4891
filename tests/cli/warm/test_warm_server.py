"""The warm search server end to end: real processes, real unix sockets, the test embedder."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from warm_harness import (
    KB_MODULE,
    TESTS,
    WarmKb,
    is_warm_server,
    make_kb,
    stop_all,
    wait_gone,
)

from kb_search.cli.search_request import SearchRequest
from kb_search.cli.warm.protocol import recv_message, send_message

# unix sockets, SO_PEERCRED and /proc (to find the servers a test leaves) are Linux's
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

QUERIES = [
    ("backups", "retention"),
    ("roll", "back", "a", "release", "--mode", "lexical"),
    ("retry", "with", "jitter", "--mode", "vector", "--top", "2"),
    ("backups", "--compact"),
    ("release", "--fields", "citation,title,score"),
    ("retry", "type:code"),
    ("backups", "--path", "*.md", "--min-score", "0.2"),
    ("backups", "retention", "--compact", "--max-tokens", "120"),
    ("nothing", "matches", "zzqqxx"),
]


def without_timings(text: str) -> dict:
    data = json.loads(text)
    data.pop("timings_ms", None)
    return data


def test_server_starts_serves_and_exits_when_idle(warm_kb: WarmKb) -> None:
    env = warm_kb.environment.env
    env["KB_WARM_IDLE_S"] = "2"
    first = warm_kb.json("search", "backups")  # no server yet: answered in-process
    assert first["results"][0]["source"]["title"] == "Backups"
    info = warm_kb.wait_for_server()
    assert info["requests"] == 0 and info["idle_timeout_s"] == 2
    served = warm_kb.json("search", "backups")
    assert without_timings(json.dumps(served)) == without_timings(json.dumps(first))
    assert warm_kb.status()["requests"] == 2  # the search, then the status call before it
    paths = warm_kb.client.paths()
    assert stat.S_IMODE(paths.directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(paths.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(paths.log.stat().st_mode) == 0o600
    assert wait_gone(info["pid"], timeout=30), "the idle server did not exit"
    assert not paths.socket.exists()
    assert "idle for 2 s" in paths.log.read_text()


def test_the_server_is_started_after_the_search_that_found_none(warm_kb: WarmKb) -> None:
    """`kb search` with no server answers in-process first and starts the server only then:
    the server's start-up (imports, model, vectors) would otherwise slow that first search
    (measured ~95 ms on two cores). A search that finds none asks for the start;
    `start_if_wanted` makes it, once."""
    client = warm_kb.client
    request = SearchRequest("backups")
    assert client.search(request, reply="json") is None
    assert client.start_wanted == client.paths()
    time.sleep(1)
    assert warm_kb.status() is None  # nothing started yet
    starts: list[object] = []
    start = client.start
    client.start = lambda paths, replacing=False: starts.append(paths) or start(paths, replacing)
    client.start_if_wanted()
    client.start_if_wanted()  # nothing wanted any more: not started twice
    assert starts == [client.paths()] and client.start_wanted is None
    warm_kb.wait_for_server()
    lexical = SearchRequest("backups", mode="lexical")
    assert warm_kb.client.search(lexical, reply="json") is not None  # served by it


def test_output_is_identical_with_and_without_the_server(warm_kb: WarmKb) -> None:
    warm_kb.start_server()
    before = warm_kb.status()["requests"]
    for query in QUERIES:
        cold = warm_kb.run("search", *query, "--format", "json", warm=False).stdout
        warm = warm_kb.run("search", *query, "--format", "json").stdout
        assert without_timings(warm) == without_timings(cold), query
        cold_human = warm_kb.run("search", *query, "--format", "human", warm=False).stdout
        warm_human = warm_kb.run("search", *query, "--format", "human").stdout
        assert warm_human == cold_human, query
    bad = warm_kb.run("search", "x", "--after", "notadate", ok=False)
    cold_bad = warm_kb.run("search", "x", "--after", "notadate", ok=False, warm=False)
    assert (bad.exit_code, bad.stderr, bad.stdout) == (1, cold_bad.stderr, "")
    # every warm call above was answered by the server, one status call between each
    assert warm_kb.status()["requests"] == before + 2 * len(QUERIES) + 2


def test_the_server_sees_documents_added_after_it_started(warm_kb: WarmKb) -> None:
    warm_kb.start_server()
    assert warm_kb.json("search", "zanzibar", "--mode", "lexical")["results"] == []
    (warm_kb.docs / "trip.md").write_text("# Trip\n\nFerry to Zanzibar on Tuesday.\n")
    warm_kb.run("add", str(warm_kb.docs), warm=False)
    requests = warm_kb.status()["requests"]
    for mode in ("lexical", "hybrid", "vector"):
        hits = warm_kb.json("search", "zanzibar", "ferry", "--mode", mode)["results"]
        assert hits and hits[0]["source"]["title"] == "Trip", mode
    assert warm_kb.status()["requests"] == requests + 1 + 3


def test_a_stale_socket_is_replaced_and_the_search_still_answers(warm_kb: WarmKb) -> None:
    paths = warm_kb.client.paths()
    paths.directory.mkdir(mode=0o700, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(paths.socket))  # a socket file nobody listens on: a crashed server's
    dead.close()
    cold = warm_kb.run("search", "backups", "--format", "json", warm=False).stdout
    result = warm_kb.run("search", "backups", "--format", "json")
    assert without_timings(result.stdout) == without_timings(cold)
    assert result.stderr == ""
    info = warm_kb.wait_for_server()
    assert is_warm_server(info["pid"])


def test_no_restart_storm_after_a_start_that_did_not_come_up(warm_kb: WarmKb) -> None:
    paths = warm_kb.client.paths()
    paths.directory.mkdir(mode=0o700, exist_ok=True)
    paths.started.touch()  # a server was started a moment ago and is not listening
    warm_kb.run("search", "backups", "--format", "json")
    time.sleep(1)
    assert not paths.log.exists(), "a server was started again at once"
    old = time.time() - 3600
    os.utime(paths.started, (old, old))
    warm_kb.run("search", "backups", "--format", "json")
    assert warm_kb.wait_for_server()


def test_a_server_of_another_config_is_replaced(warm_kb: WarmKb) -> None:
    env = warm_kb.environment.env
    env["KB_RRF_K"] = "7"
    old = warm_kb.start_server()
    del env["KB_RRF_K"]
    cold = warm_kb.run("search", "backups", "--format", "json", warm=False).stdout
    answer = warm_kb.run("search", "backups", "--format", "json").stdout
    assert without_timings(answer) == without_timings(cold)  # not the old server's answer
    assert wait_gone(old["pid"]), "the mismatched server was not stopped"
    new = warm_kb.wait_for_server()
    assert new["pid"] != old["pid"]
    served = warm_kb.run("search", "backups", "--format", "json").stdout
    assert without_timings(served) == without_timings(cold)
    assert warm_kb.status()["requests"] >= 1


def test_a_replaced_database_file_is_not_served_from_the_old_one(warm_kb: WarmKb) -> None:
    old = warm_kb.start_server()
    db = Path(warm_kb.environment.env["KB_DATA_DIR"]) / "kb.db"
    copy = db.with_name("copy.db")
    copy.write_bytes(db.read_bytes())
    copy.replace(db)  # same path, another file: the server's handle reads the old one
    cold = warm_kb.run("search", "backups", "--format", "json", warm=False).stdout
    answer = warm_kb.run("search", "backups", "--format", "json").stdout
    assert without_timings(answer) == without_timings(cold)
    assert wait_gone(old["pid"])


def test_a_server_of_a_rebound_database_is_replaced(warm_kb: WarmKb) -> None:
    del warm_kb.environment.env["KB_MODEL"]  # no explicit model: search uses the DB's own
    old = warm_kb.start_server()
    warm_kb.run("reindex", "--model", "kb-test/hash-64-other", warm=False)
    cold = warm_kb.run("search", "backups", "--format", "json", warm=False).stdout
    answer = warm_kb.run("search", "backups", "--format", "json").stdout
    assert without_timings(answer) == without_timings(cold)
    assert wait_gone(old["pid"]), "the server of the old model did not stop"
    assert "model binding changed" in warm_kb.client.paths().log.read_text()
    new = warm_kb.wait_for_server()
    assert new["pid"] != old["pid"]
    served = warm_kb.run("search", "backups", "--format", "json").stdout
    assert without_timings(served) == without_timings(cold)
    assert warm_kb.status()["requests"] == 2  # the first status call and that search


def test_garbage_from_the_socket_falls_back_quietly(warm_kb: WarmKb) -> None:
    listener = warm_kb.impostor(backlog=4)

    def answer_garbage() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            with conn:  # garbage where the server's greeting belongs
                conn.sendall(b"\x00\x00\x00\x05hello" + b"\x00" * 8)

    thread = threading.Thread(target=answer_garbage, daemon=True)
    thread.start()
    query = ("backups", "--mode", "lexical", "--format", "json")  # lexical starts no server
    cold = warm_kb.run("search", *query, warm=False).stdout
    quiet = warm_kb.run("search", *query)
    assert without_timings(quiet.stdout) == without_timings(cold)
    assert quiet.stderr == ""
    warm_kb.environment.env["KB_DEBUG"] = "1"
    loud = warm_kb.run("search", *query)
    assert without_timings(loud.stdout) == without_timings(cold)
    assert "kb warm: " in loud.stderr
    thread.join(timeout=10)
    listener.close()


def test_off_by_setting_or_environment(warm_kb: WarmKb) -> None:
    paths = warm_kb.client.paths()
    warm_kb.run("search", "backups", warm=False)  # KB_NO_WARM=1
    warm_kb.environment.env["KB_WARM"] = "false"  # search.warm: false
    warm_kb.run("search", "backups")
    time.sleep(1)
    assert not paths.socket.exists() and not paths.log.exists()
    status = json.loads(warm_kb.run("warm", "status", "--format", "json").stdout)
    assert status["running"] is False and status["enabled"] is False


def test_two_data_dirs_get_two_servers(tmp_path: Path, model_cache: Path, server_env) -> None:
    one = make_kb(tmp_path, model_cache, "one")
    two = make_kb(tmp_path, model_cache, "two")
    (two.docs / "only-two.md").write_text("# Walrus\n\nThe walrus census.\n")
    two.run("add", str(two.docs), warm=False)
    try:
        first, second = one.start_server(), two.start_server()
        assert first["pid"] != second["pid"] and first["socket"] != second["socket"]
        assert one.json("search", "walrus", "census", "--mode", "lexical")["results"] == []
        hits = two.json("search", "walrus", "census", "--mode", "lexical")["results"]
        assert hits[0]["source"]["title"] == "Walrus"
        assert one.status()["requests"] == 2 and two.status()["requests"] == 2
        stopped = json.loads(one.run("warm", "stop", "--format", "json").stdout)
        assert stopped == {"stopped": True, "pid": first["pid"]}
        assert wait_gone(first["pid"]) and two.status() is not None
    finally:
        stop_all(one)
        stop_all(two)


def test_concurrent_clients_are_served_at_once(warm_kb: WarmKb) -> None:
    warm_kb.start_server()
    client = warm_kb.client
    queries = ["backups", "rollback release", "retry jitter", "pasta"] * 4
    expected = {q: client.search(SearchRequest(q)).to_dict()["results"] for q in set(queries)}
    answers: dict[int, list] = {}

    def ask(i: int, query: str) -> None:
        answers[i] = client.search(SearchRequest(query)).to_dict()["results"]

    threads = [threading.Thread(target=ask, args=(i, q)) for i, q in enumerate(queries)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [answers[i] for i in range(len(queries))] == [expected[q] for q in queries]


def _subprocess_env(warm_kb: WarmKb) -> dict[str, str]:
    env = {**os.environ, **warm_kb.environment.env}
    env.pop("KB_NO_WARM", None)
    # The client needs no test embedder (the server has the model): only the code under test,
    # not an installed copy that may be another version.
    env["PYTHONPATH"] = str(TESTS.parent / "src")
    return env


def test_the_client_imports_no_model_code(warm_kb: WarmKb) -> None:
    warm_kb.start_server()
    requests = warm_kb.status()["requests"]
    found = subprocess.run(
        [*KB_MODULE[:1], "-X", "importtime", *KB_MODULE[1:], "search", "backups"],
        env=_subprocess_env(warm_kb),
        cwd=warm_kb.environment.cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["source"]["title"] == "Backups"
    assert warm_kb.status()["requests"] == requests + 2  # it was the server that answered
    imported = {line.split("|")[-1].strip() for line in found.stderr.splitlines()}
    heavy = {"numpy", "onnxruntime", "tokenizers", "kb_search.embedding", "kb_search.vectors"}
    heavy |= {"sqlean", "kb_search.search.pipeline", "kb_search.cli.ingest"}  # JSON: none needed
    assert not heavy & imported, heavy & imported


def _kb_process(warm_kb: WarmKb, *args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """`kb ARGS` as a real process with stdout piped, and the modules it imported."""
    done = subprocess.run(
        [*KB_MODULE[:1], "-X", "importtime", *KB_MODULE[1:], *args],
        env=_subprocess_env(warm_kb),
        cwd=warm_kb.environment.cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    lines = done.stderr.splitlines(True)
    done.stderr = "".join(line for line in lines if "import time:" not in line)
    return done, imported


def test_a_piped_search_is_answered_before_the_cli_loads(warm_kb: WarmKb) -> None:
    """The front door: the server parses the command line; no click, the same JSON."""
    warm_kb.start_server()
    before = warm_kb.status()["requests"]
    for query in QUERIES:
        cold = warm_kb.run("search", *query, "--format", "json", warm=False).stdout
        done, imported = _kb_process(warm_kb, "search", *query)
        assert done.returncode == 0, done.stderr
        assert without_timings(done.stdout) == without_timings(cold), query
        assert not {"click", "kb_search.cli.root", "kb_search.cli.search"} & imported, query
    assert warm_kb.status()["requests"] == before + len(QUERIES) + 1  # one request each
    # What the front door leaves to the full CLI: the same answers and errors as before.
    cold_human = warm_kb.run("search", "backups", "--format", "human", warm=False).stdout
    human, imported = _kb_process(warm_kb, "search", "backups", "--format", "human")
    assert (human.returncode, human.stdout) == (0, cold_human) and "click" in imported
    cold_bad = warm_kb.run("search", "x", "--after", "notadate", ok=False, warm=False)
    bad, _ = _kb_process(warm_kb, "search", "x", "--after", "notadate")
    assert (bad.returncode, bad.stdout, bad.stderr) == (1, "", cold_bad.stderr)
    usage, _ = _kb_process(warm_kb, "search", "--top", "0", "x")
    assert usage.returncode == 2 and "--top" in usage.stderr and usage.stdout == ""
    # The database named by options, before the command or after it: the same server.
    config = warm_kb.client.config
    cold = warm_kb.run("search", "backups", "--format", "json", warm=False).stdout
    for args in (
        ("search", "backups", "--db", str(config.db_path)),
        ("--data-dir", str(config.data_dir), "search", "backups"),
    ):
        named, imported = _kb_process(warm_kb, *args)
        assert named.returncode == 0 and "click" not in imported, named.stderr
        assert without_timings(named.stdout) == without_timings(cold)
    # Another database: not this server's (its identity differs), so the full CLI says so.
    missing, imported = _kb_process(warm_kb, "search", "backups", "--db", "nowhere.db")
    assert missing.returncode == 1 and "no index at" in missing.stderr and "click" in imported


def test_ctrl_c_while_waiting_for_the_server_exits_130(warm_kb: WarmKb) -> None:
    listener = warm_kb.impostor(backlog=1)
    arrived = threading.Event()

    def hang() -> None:  # greets, reads the request, never answers
        conn, _ = listener.accept()
        with conn:
            send_message(conn, {"status": "ready"})
            recv_message(conn)
            arrived.set()
            time.sleep(30)

    threading.Thread(target=hang, daemon=True).start()
    process = subprocess.Popen(
        [*KB_MODULE, "search", "backups"],
        env=_subprocess_env(warm_kb),
        cwd=warm_kb.environment.cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as at a terminal, even under a runner that ignores SIGINT (a background job)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert arrived.wait(60), "the client never asked the socket"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    listener.close()
    assert process.returncode == 130
    assert "Traceback" not in err and out == ""


def test_a_server_refuses_clients_of_another_identity(warm_kb: WarmKb) -> None:
    warm_kb.start_server()
    paths = warm_kb.client.paths()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(paths.socket))
        assert recv_message(sock)[0] == {"status": "ready"}
        send_message(sock, {"op": "search", "identity": {"version": "0.0.0"}, "query": "x"})
        header, payload = recv_message(sock)
    assert header["status"] == "mismatch" and payload == b""


@pytest.mark.model
def test_real_model_answers_the_same_warm_and_cold(tmp_path: Path, model_cache: Path) -> None:
    warm = make_kb(tmp_path, model_cache, model=None)  # the real model
    try:
        warm.start_server()
        for query in QUERIES[:4]:
            cold = warm.run("search", *query, "--format", "json", warm=False).stdout
            hot = warm.run("search", *query, "--format", "json").stdout
            assert without_timings(hot) == without_timings(cold), query
        assert warm.status()["requests"] >= 4
    finally:
        stop_all(warm)


def test_a_relative_data_dir_finds_the_same_server(warm_kb: WarmKb) -> None:
    """KB_DATA_DIR=data in the data dir's parent: the server (its own cwd) opens the same file."""
    info = warm_kb.start_server()
    config = warm_kb.client.config
    relative = os.path.relpath(config.data_dir, warm_kb.environment.cwd)
    cold = warm_kb.run("search", "backups", "--format", "json", warm=False).stdout
    warm_kb.environment.env["KB_DATA_DIR"] = relative
    for args in (("--data-dir", relative, "search", "backups"), ("search", "backups")):
        done, imported = _kb_process(warm_kb, *args)
        assert done.returncode == 0 and "click" not in imported, (args, done.stderr)
        assert without_timings(done.stdout) == without_timings(cold)
    assert warm_kb.status()["pid"] == info["pid"]  # answered, never replaced


def test_the_front_door_takes_only_search_command_lines() -> None:
    from kb_search.cli.warm.front import split_search

    assert split_search(["search", "x", "--top", "3"]) == ({}, ["x", "--top", "3"])
    assert split_search(["--db=/a.db", "search", "x", "--db", "/b.db"]) == (
        {"db": "/b.db"},  # the last one wins, as in click
        ["x", "--db", "/b.db"],
    )
    assert split_search(["--color", "never", "search", "x"]) == ({}, ["x"])
    assert split_search(["search", "--", "--db", "x"]) == ({}, ["--", "--db", "x"])
    for other in (["search"], ["add", "x"], ["search", "x", "--help"], ["search", "x", "--db"]):
        assert split_search(other) is None, other
    assert split_search(["--bogus", "search", "x"]) is None


def test_the_server_reranks_as_the_in_process_search_does(warm_kb: WarmKb) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "embedding"))
    from tiny_bert import write_cross_encoder

    write_cross_encoder(warm_kb.environment.cwd / "models" / "ce")
    # named relative to the caller's directory: the server, elsewhere, loads the same model
    warm_kb.environment.env["KB_RERANKER"] = "models/ce"
    warm_kb.start_server()
    before = warm_kb.status()["requests"]
    for query in [("backups",), ("retry", "--top", "2"), ("release", "--mode", "lexical")]:
        cold = without_timings(warm_kb.run("search", *query, "--format", "json", warm=False).stdout)
        warm = without_timings(warm_kb.run("search", *query, "--format", "json").stdout)
        assert warm == cold, query
        assert all("rerank" in r["score_breakdown"] for r in warm["results"])
    assert warm_kb.status()["requests"] == before + 3 + 1
