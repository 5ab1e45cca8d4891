"""Every model kb uses, and who loads which, when, for whom. A KnowledgeBase holds one
`loaded.Models` and asks it; ingest, search and rerank receive what it returns and load nothing
themselves.

| model | loaded by (`Models.`) | when | for whom |
|---|---|---|---|
| the writing embedding model | `for_writing(conn)` -> `Writing.vectors` (`writing.LazyVectors`) | the first chunk without a stored vector is embedded; at once only when the model is not provisioned yet; never for a no-op `kb add`/`sync` | the ingest writer, `kb watch` between batches |
| its tokenizer.json | `for_writing(conn)` -> `Writing.tokenizer_path` (from the provisioned files, without loading the model) | before any file is parsed | parser workers (a frozen `AddOptions.tokenizer_path`) |
| the model shipped to Ray actors | `executor(conn, options)` (`writing._shipped_model`) | the first file a Ray run parses | the cluster's actors (not loaded in this process) |
| the reindex model | `reindex_embedder(name, executor)` | `kb reindex` | `vectors/reindex.py`, here or on Ray |
| the query model + vector index | `vector_leg(reader)` | the first vector or hybrid search | search's vector leg |
| any embedding model by name | `embedder(name)` | `kb init` (binding), `kb doctor`, BEIR eval | the binding, the doctor's check, eval |
| a reranker | `reranker(name)` (`rerankers.py`) | the first search with `search.reranker` set; doctor; eval | search's rerank stage |
| the chat model | `chat()` (`chat.py`, an HTTP client) | `kb ask`, `--expand`, eval with `llm.model` | `ask.py`, `search/expand.py` |

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
