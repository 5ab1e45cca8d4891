"""Sentence embeddings with onnxruntime + HF tokenizers (no torch)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kb_search.embedding.provision import ModelInfo

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Encoding, Tokenizer

# Texts are tokenised and length-sorted in windows of this many batches: enough to group similar
# lengths together, small enough to keep memory flat on a 100k-chunk ingest. Batches of 16 pad
# less than 32 after sorting and cost onnxruntime nothing in GEMM efficiency at these lengths.
_SORT_WINDOW_BATCHES = 16


def default_threads() -> int:
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        available = os.cpu_count() or 1
    # Past ~8 threads a 6-layer model gains little and starves the rest of the process.
    return max(1, min(available, 8))


class Embedder:
    """Embeds passages and queries with a model provisioned by `provision_model`."""

    def __init__(
        self,
        model: ModelInfo | Path | str,
        *,
        threads: int | None = None,
        prepack: bool = True,
        provider: str = "auto",
    ) -> None:
        """`model` is a provisioned directory or the ModelInfo that provision_model returned.

        `prepack=False` skips onnxruntime's weight prepacking: ~60 ms faster to load, ~2x
        slower per batch — right for a process that embeds one query and exits.
        `provider`: "auto" (the best onnxruntime provider here), or one to force (providers.py).
        """
        from kb_search.embedding.providers import (
            available_providers,
            choose_provider,
            session_providers,
        )

        self.info = model if isinstance(model, ModelInfo) else ModelInfo.load(Path(model))
        chosen = choose_provider(provider, available_providers())
        self._session = make_session(
            self.info.onnx_path, threads or default_threads(), prepack, session_providers(chosen)
        )
        self.provider = self._session.get_providers()[0]
        self._input_names = {i.name for i in self._session.get_inputs()}
        outputs = [o.name for o in self._session.get_outputs()]
        self._output = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
        self._tokenizer = _load_tokenizer(self.info.tokenizer_path, self.info.max_tokens)
        self._counter: Tokenizer | None = None
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def dim(self) -> int:
        return self.info.dim

    @property
    def max_tokens(self) -> int:
        """Model window in word pieces, including special tokens."""
        return self.info.max_tokens

    @property
    def max_content_tokens(self) -> int:
        """Largest `count_tokens(passage)` that is embedded without truncation."""
        specials = len(self._tokenizer.encode("").ids)
        return self.max_tokens - specials - self.count_tokens(self.info.passage_prefix)

    def count_tokens(self, text: str) -> int:
        """Word pieces in text, without special tokens and without truncation."""
        return len(self._count_tokenizer().encode(text, add_special_tokens=False).ids)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """count_tokens for many texts at once (tokenised in parallel)."""
        encodings = self._count_tokenizer().encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector, shape (dim,), float32."""
        return self._embed([self.info.query_prefix + text], 1, None)[0]

    def embed_passages(
        self,
        texts: Sequence[str],
        batch_size: int = 16,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Vectors for texts in input order, shape (len(texts), dim), float32.

        `progress` is called after each batch with the number of texts just embedded.
        """
        prefix = self.info.passage_prefix
        return self._embed([prefix + t for t in texts], batch_size, progress)

    def passage_batches(
        self, texts: Sequence[str], batch_size: int = 16
    ) -> Iterator[tuple[list[int], np.ndarray]]:
        """The vectors of `texts` a batch at a time, as each is embedded: (the batch's
        positions in `texts`, their vectors). The batches are those of `embed_passages` (the
        same length-sorted windows), so a caller can save each part as it comes."""
        prefix = self.info.passage_prefix
        return self._batches([prefix + t for t in texts], batch_size)

    def _count_tokenizer(self) -> Tokenizer:
        if self._counter is None:
            self._counter = _load_tokenizer(self.info.tokenizer_path, None)
        return self._counter

    def _embed(
        self, texts: list[str], batch_size: int, progress: Callable[[int], None] | None
    ) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for idx, vectors in self._batches(texts, batch_size):
            out[idx] = vectors
            if progress is not None:
                progress(len(idx))
        return out

    def _batches(
        self, texts: list[str], batch_size: int
    ) -> Iterator[tuple[list[int], np.ndarray]]:
        batch_size = max(1, batch_size)
        window = batch_size * _SORT_WINDOW_BATCHES
        for start in range(0, len(texts), window):
            encodings = self._tokenizer.encode_batch(texts[start : start + window])
            order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
            for b in range(0, len(order), batch_size):
                idx = order[b : b + batch_size]
                yield [start + i for i in idx], self._run([encodings[i] for i in idx])

    def _run(self, encodings: list[Encoding]) -> np.ndarray:
        feed = padded_feed(encodings, self._pad_id)
        hidden = self._session.run([self._output], graph_inputs(feed, self._input_names))[0]
        return self._pool(hidden, feed["attention_mask"])

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.info.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        if self.info.normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, 1e-12)
        return pooled.astype(np.float32, copy=False)


def padded_feed(encodings: Sequence[Encoding], pad_id: int) -> dict[str, np.ndarray]:
    """A batch of encodings as a BERT graph's inputs: ids padded to the longest, the attention
    mask, the segment (token type) ids."""
    width = max(len(e.ids) for e in encodings)
    ids = np.full((len(encodings), width), pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, enc in enumerate(encodings):
        n = len(enc.ids)
        ids[row, :n] = enc.ids
        mask[row, :n] = 1
        types[row, :n] = enc.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def graph_inputs(feed: dict[str, np.ndarray], names: set[str]) -> dict[str, np.ndarray]:
    """Only the inputs the graph has (some take no token_type_ids)."""
    return {k: v for k, v in feed.items() if k in names}


def make_session(
    path: Path, threads: int, prepack: bool = True, providers: list[str] | None = None
) -> InferenceSession:
    """A session on `providers` (default: the CPU)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # shape-merge warnings on dynamic axes are noise
    if not prepack:
        options.add_session_config_entry("session.disable_prepacking", "1")
    # Spinning workers burn CPU between runs; on a shared laptop/server that costs more than the
    # microseconds it saves (measured: no throughput loss at 1-2 threads).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(
        str(path), options, providers=providers or ["CPUExecutionProvider"]
    )


def _load_tokenizer(path: Path, max_tokens: int | None) -> Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    # tokenizer.json files often ship a fixed pad/truncate length (128 for all-MiniLM): replace it.
    tokenizer.no_padding()
    if max_tokens is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer
