"""The models kb talks to over HTTP beyond the embedder: a chat model (`chat.py`: `openai:` /
`ollama:`, streamed) and rerank endpoints (`rerank_endpoint.py`: TEI `/rerank`, `/v1/rerank`).

Both are opt-in settings (`llm.*`, `search.reranker` + `rerank.*`) and run only when
configured; `wire.py` holds what their requests share (a total deadline, retries, one-line
errors). The embedding model still lives in `embedding/` and `vectors/`.
"""
