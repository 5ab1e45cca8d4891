"""Every model kb uses, and who loads which, when, for whom. A KnowledgeBase holds one
`loaded.Models` and asks it; ingest, search and rerank receive what it returns and load nothing
themselves.

Who loads which model, when, for whom (each a method of `Models`):

- `for_writing(conn)` -> `Writing.vectors` (`writing.LazyVectors`): the writing embedding model
  (the DB's, else the configured one), loaded when the first chunk without a stored vector is
  embedded (at once only when the model is not provisioned yet; never for a no-op `kb add` or
  `kb sync`), for the ingest writer and `kb watch` between its batches.
- `for_writing(conn)` -> `Writing.tokenizer_path`: that model's tokenizer.json, found in the
  provisioned files without loading the model, before any file is parsed, for the parser
  workers (set once on the frozen `AddOptions`).
- `executor(conn, options)`: the executor the face chose; Ray's is shipped the provisioned
  model (`writing._shipped_model`) when it parses its first file, for the cluster's actors,
  which load it there (never in this process).
- `reindex_embedder(name, executor)`: the model `kb reindex` embeds with, here or on Ray.
- `vector_leg(reader)`: the query model and the vector index over the DB, opened on the first
  vector or hybrid search, for search's vector leg.
- `embedder(name)`: any embedding model by name, for `kb init` (the binding), `kb doctor` and
  the BEIR eval.
- `reranker(name)` (`rerankers.py`): the rerank stage, built on the first search with
  `search.reranker` set (and by `kb doctor`, `kb eval`), for search's rerank stage.
- `chat()` (`chat.py`, an HTTP client): the chat model, for `kb ask`, `--expand` and eval with
  `llm.model`.

How long each stays is the KnowledgeBase's `Profile`: SERVE keeps every embedding model once
loaded (prepacked, warmed up); ONE_SHOT and WARM load fast and keep none but the vector leg of
the KB. Rerankers and the chat model are built once per `Models` in every profile.

Rooms: `embedders.py` (which embedding model, and making one: local ONNX, `openai:`/`ollama:`,
one registered in process), `loaded.py` (`Models`), `writing.py` (the lazily loaded writing
model, what Ray ships, reindex's embedder), `rerankers.py` (rerankers by name), `chat.py` and
`rerank_endpoint.py` (clients of a person's model server; `wire.py`: what their requests
share). How an embedding model runs (ONNX, a cross-encoder, a remote client) is `embedding/`;
a DB's binding to its model is `vectors/binding.py`.
"""
