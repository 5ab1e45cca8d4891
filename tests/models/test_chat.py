"""The chat model client against a real HTTP server on loopback (tests/model_server.py: scripted
answers streamed over chunked HTTP as OpenAI server-sent events and Ollama NDJSON), with the
faults it can be told to make: 429 + Retry-After, 500, a dropped connection, a slow drip, a
silent server, a stream that dies mid-answer, a line that is not JSON, a refused key."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kb_search.config import load_config
from kb_search.errors import ConfigError, EndpointError
from kb_search.models.chat import ChatModel, ChatSettings, chat_model
from model_server import Running

REPLY = " ".join(f"word{i}" for i in range(30)) + " [1]."
FIXTURE = {"replies": [{"match": "hello", "reply": REPLY}], "default": "no idea"}
ASK = [{"role": "user", "content": "hello there"}]
SECRET = "sk-test-0123456789abcdef"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    started = Running(FIXTURE, tmp_path_factory.mktemp("chat-server"))
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def healthy(server: Running) -> None:
    server.fault("ok")


def _model(server: Running, scheme: str, **settings: object) -> tuple[ChatModel, list[float]]:
    slept: list[float] = []
    endpoint = f"{server.url}/v1" if scheme == "openai" else server.url
    values = {"timeout_s": 5.0, "retries": 3, **settings}
    model = ChatModel(f"{scheme}:tiny", ChatSettings(endpoint, **values), sleep=slept.append)
    return model, slept


@pytest.mark.parametrize("scheme", ["openai", "ollama"])
def test_the_answer_streams_in_pieces_as_the_server_sends_them(server, scheme) -> None:
    model, _ = _model(server, scheme, api_key=SECRET)
    pieces = list(model.stream(ASK))
    assert len(pieces) > 5 and "".join(pieces) == REPLY
    request = server.stats()["requests"][-1]
    assert request["path"] == ("/v1/chat/completions" if scheme == "openai" else "/api/chat")
    assert request["body"]["model"] == "tiny" and request["body"]["stream"] is True
    assert request["body"]["messages"] == ASK
    assert server.stats()["auth"] == [f"Bearer {SECRET}"]
    assert SECRET not in repr(model.settings)
    assert model.complete(ASK) == REPLY


@pytest.mark.parametrize("scheme", ["openai", "ollama"])
def test_429_waits_as_long_as_retry_after_says_then_answers(server, scheme) -> None:
    model, slept = _model(server, scheme)
    server.fault("429", count=2, retry_after=0.25)
    assert model.complete(ASK) == REPLY
    assert slept == [0.25, 0.25]
    assert len(server.stats()["requests"]) == 3


@pytest.mark.parametrize("mode", ["500", "drop"])
def test_a_5xx_or_a_dropped_connection_is_tried_again_with_backoff(server, mode) -> None:
    model, slept = _model(server, "openai")
    server.fault(mode, count=2)
    assert model.complete(ASK) == REPLY
    assert len(slept) == 2 and 0 < slept[0] < slept[1]  # backoff grows


def test_a_server_that_keeps_failing_is_one_line_after_the_retries(server) -> None:
    model, slept = _model(server, "ollama", retries=2)
    server.fault("500", count=-1)
    with pytest.raises(EndpointError) as caught:
        model.complete(ASK)
    assert "failed (3 tries): HTTP 500" in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("scheme", ["openai", "ollama"])
def test_a_slow_drip_is_cut_at_the_total_deadline(server, scheme) -> None:
    model, _ = _model(server, scheme, timeout_s=1.0)
    server.fault("slow", delay=0.3)  # 11 pieces, each 0.3 s apart: 3.3 s in all
    started = time.monotonic()
    got: list[str] = []
    with pytest.raises(EndpointError, match="did not finish within 1 s"):
        for piece in model.stream(ASK):
            got.append(piece)
    assert time.monotonic() - started < 1.6
    assert 1 <= len(got) <= 4  # what came before the deadline was handed on


def test_a_server_silent_after_its_headers_is_cut_at_the_deadline(server) -> None:
    model, _ = _model(server, "openai", timeout_s=0.8)
    server.fault("stall", delay=5)
    started = time.monotonic()
    with pytest.raises(EndpointError, match="within 0.8 s"):
        model.complete(ASK)
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("scheme", ["openai", "ollama"])
def test_a_stream_that_dies_mid_answer_says_so_after_what_came(server, scheme) -> None:
    model, slept = _model(server, scheme)
    server.fault("die", pieces=3)
    got: list[str] = []
    with pytest.raises(EndpointError, match="stopped mid-answer"):
        for piece in model.stream(ASK):
            got.append(piece)
    assert "".join(got) == " ".join(REPLY.split(" ")[:9]) + " "
    assert len(got) == 3 and slept == []  # never retried after the first piece


@pytest.mark.parametrize("scheme", ["openai", "ollama"])
def test_a_line_that_is_not_json_is_an_error(server, scheme) -> None:
    model, _ = _model(server, scheme)
    server.fault("malformed")
    with pytest.raises(EndpointError, match="not JSON"):
        model.complete(ASK)


def test_a_refused_key_is_not_retried_and_never_shown(server) -> None:
    model, slept = _model(server, "openai", api_key=SECRET)
    server.fault("401")
    with pytest.raises(EndpointError) as caught:
        model.complete(ASK)
    message = str(caught.value)
    assert "HTTP 401: check the API key" in message and slept == []
    assert SECRET not in message and "***" in message  # the server echoed it: redacted


def test_no_server_is_one_line(tmp_path: Path) -> None:
    model = ChatModel("openai:x", ChatSettings("http://127.0.0.1:9", timeout_s=2, retries=1),
                      sleep=lambda s: None)  # fmt: skip
    with pytest.raises(EndpointError) as caught:
        model.complete(ASK)
    assert "failed (2 tries)" in str(caught.value) and "\n" not in str(caught.value)


def test_settings_no_model_no_client_and_an_openai_model_needs_an_endpoint(tmp_path) -> None:
    env = {"KB_DATA_DIR": str(tmp_path / "d"), "HOME": str(tmp_path)}
    assert chat_model(load_config(env=env).values) is None
    ollama = chat_model(load_config(env={**env, "KB_LLM_MODEL": "ollama:llama3.2"}).values)
    assert ollama.url == "http://localhost:11434/api/chat"
    with pytest.raises(ConfigError, match="llm.endpoint"):
        chat_model(load_config(env={**env, "KB_LLM_MODEL": "openai:gpt"}).values)
    with pytest.raises(ConfigError, match="openai:NAME or ollama:NAME"):
        chat_model(load_config(env={**env, "KB_LLM_MODEL": "gpt4"}).values)
    with pytest.raises(ConfigError, match="http"):
        chat_model(load_config(env={**env, "KB_LLM_MODEL": "openai:g",
                                    "KB_LLM_ENDPOINT": "file:///etc"}).values)  # fmt: skip


def test_a_project_file_names_no_chat_server_until_trusted(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    (project / ".kb.yaml").write_text(
        "llm:\n  model: openai:x\n  endpoint: http://evil.example/v1\n  api_key: stolen\n"
    )
    env = {"KB_DATA_DIR": str(tmp_path / "d"), "HOME": str(tmp_path)}
    config = load_config(env=env, cwd=project)
    assert config["llm.model"] is None and config["llm.endpoint"] is None
    assert {"llm.model", "llm.endpoint", "llm.api_key"} <= set(config.ignored)


def test_the_key_is_shown_only_as_set(tmp_path: Path) -> None:
    env = {"KB_DATA_DIR": str(tmp_path / "d"), "HOME": str(tmp_path), "KB_LLM_API_KEY": SECRET,
           "KB_RERANK_API_KEY": SECRET}  # fmt: skip
    config = load_config(env=env)
    rows = {key: value for key, value, _ in config.as_rows()}
    assert rows["llm.api_key"] == "(set)" and rows["rerank.api_key"] == "(set)"
