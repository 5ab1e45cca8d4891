"""A chat model the person runs, behind HTTP: `openai:NAME` (any OpenAI-compatible server:
vLLM, llama.cpp's server, LM Studio, Ollama's /v1; the `llm.endpoint` setting names its base
URL, e.g. http://localhost:8080/v1) or `ollama:NAME` (Ollama's native /api/chat, by default
at http://localhost:11434).

Answers are streamed (OpenAI server-sent events, Ollama NDJSON) and yielded as text pieces.
Each request has a total deadline (`llm.timeout_s`); 429 (with its Retry-After), 5xx,
timeouts and dropped connections are retried with backoff until the first piece arrives,
never after (a retry would say the answer twice). A stream that ends early, or a line that is
not JSON, is an EndpointError. The key travels only in the Authorization header.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kb_search.errors import ConfigError, EndpointError
from kb_search.models.wire import Deadline, checked_endpoint, client, lines, open_response

OLLAMA_ENDPOINT = "http://localhost:11434"
SCHEMES = ("openai", "ollama")
HOW_TO_SET = (
    "set llm.model to ollama:NAME (Ollama on this machine), or to openai:NAME with llm.endpoint"
    " = the server's base URL (KB_LLM_MODEL / KB_LLM_ENDPOINT; docs/models.md)"
)


@dataclass(frozen=True)
class ChatSettings:
    endpoint: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60.0  # a whole request, first byte to last
    retries: int = 3
    max_tokens: int = 1024


class ChatModel:
    """One chat model at one endpoint; `stream` and `complete` send a list of messages."""

    def __init__(
        self, name: str, settings: ChatSettings, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        scheme, _, model = name.partition(":")
        if scheme not in SCHEMES or not model:
            raise ConfigError(f"llm.model {name!r}: use openai:NAME or ollama:NAME")
        self.name, self.scheme, self.model = name, scheme, model
        self.settings = settings
        self._sleep = sleep
        self._http = client()

    @property
    def url(self) -> str:
        suffix = "/api/chat" if self.scheme == "ollama" else "/chat/completions"
        base = self.settings.endpoint
        return base if base.endswith(suffix) else base + suffix

    def stream(
        self,
        messages: list[dict[str, str]],
        max_tokens: int | None = None,
        deadline: float | None = None,
    ) -> Iterator[str]:
        """The answer's text as it arrives. `deadline` (time.monotonic()) can only shorten
        `llm.timeout_s`."""
        limit = Deadline(self.settings.timeout_s, not_after=deadline)
        body = self._body(messages, max_tokens or self.settings.max_tokens)
        key = self.settings.api_key
        response, stack = open_response(
            self._http, self.url, body, limit, self.settings.retries + 1,
            f"chat model {self.name} at", key, self._sleep,
        )  # fmt: skip
        what = f"chat model {self.name} at {self.url}"
        with stack:
            if "json" in response.headers.get("content-type", "") and self.scheme == "openai":
                yield from self._whole(response, limit, what)  # a server that does not stream
            else:
                yield from self._pieces(response, limit, what)

    def complete(
        self,
        messages: list[dict[str, str]],
        max_tokens: int | None = None,
        deadline: float | None = None,
    ) -> str:
        return "".join(self.stream(messages, max_tokens, deadline))

    def close(self) -> None:
        self._http.close()

    # ---- the wire ------------------------------------------------------------------------------

    def _body(self, messages: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
        if self.scheme == "ollama":
            options = {"temperature": 0, "num_predict": max_tokens}
            return {"model": self.model, "messages": messages, "stream": True, "options": options}
        return {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "temperature": 0,
            "max_tokens": max_tokens,
        }

    def _pieces(self, response: Any, limit: Deadline, what: str) -> Iterator[str]:
        finished = False
        for line in lines(response, limit, what):
            line = line.strip()
            if self.scheme == "openai":
                if not line.startswith("data:"):
                    continue  # blank separators, `event:` and `:` comment lines
                line = line[5:].strip()
                if line == "[DONE]":
                    finished = True
                    break
            elif not line:
                continue
            event = _parsed(line, what)
            if isinstance(event, dict) and event.get("error"):
                raise EndpointError(f"{what} reported an error: {_error_text(event['error'])}")
            piece, done = self._piece(event, what)
            if piece:
                yield piece
            if done:
                finished = True
                break
        if not finished:
            raise EndpointError(
                f"{what} stopped mid-answer (the stream ended without its end mark)"
            )

    def _piece(self, event: Any, what: str) -> tuple[str, bool]:
        """The text one event carries, and whether it ends the answer."""
        try:
            if self.scheme == "ollama":
                return str(event.get("message", {}).get("content") or ""), bool(event.get("done"))
            choices = event.get("choices") or []
            if not choices:
                return "", False  # e.g. a closing usage-only event
            choice = choices[0]
            delta = choice.get("delta") or choice.get("message") or {}
            # finish_reason ends the choice, but OpenAI sends [DONE] after it: keep reading
            return str(delta.get("content") or ""), False
        except AttributeError:
            raise EndpointError(
                f"{what} sent an event of an unknown shape: {event!r:.120}"
            ) from None

    def _whole(self, response: Any, limit: Deadline, what: str) -> Iterator[str]:
        payload = _parsed("\n".join(lines(response, limit, what)), what)
        try:
            yield str(payload["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"{what} answered JSON that is not a chat completion") from None


def _parsed(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise EndpointError(f"{what} sent a line that is not JSON: {text[:80]!r}") from None


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        error = error.get("message") or error
    return str(error).splitlines()[0][:200] if str(error) else "unknown"


def chat_settings(values: Any) -> ChatSettings:
    """ChatSettings from a Config's `llm.*` values."""
    name = values["llm.model"]
    scheme, _, model = name.partition(":")
    if scheme not in SCHEMES or not model:
        raise ConfigError(f"llm.model {name!r}: use openai:NAME or ollama:NAME")
    endpoint = values["llm.endpoint"] or (OLLAMA_ENDPOINT if scheme == "ollama" else None)
    if not endpoint:
        raise ConfigError(f"{name} needs its server's base URL: set llm.endpoint (KB_LLM_ENDPOINT)")
    return ChatSettings(
        endpoint=checked_endpoint(endpoint, "llm.endpoint"),
        api_key=values["llm.api_key"],
        timeout_s=values["llm.timeout_s"],
        retries=values["llm.retries"],
        max_tokens=values["llm.max_tokens"],
    )


def chat_model(values: Any) -> ChatModel | None:
    """The configured chat model, None when `llm.model` is not set."""
    name = values["llm.model"]
    if not name:
        return None
    return ChatModel(name, chat_settings(values))
