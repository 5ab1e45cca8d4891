"""A cross-encoder: reads a query and a passage together and says how well the passage answers
it (what the rerank stage runs). Same machinery as the embedder: a BERT checkpoint converted
to ONNX once (provision.py, head="classifier"), onnxruntime and tokenizers, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kb_search.embedding.embedder import default_threads, make_session, padded_feed
from kb_search.embedding.provision import ModelInfo, ModelNotAvailableError, provision_model


class CrossEncoder:
    """Relevance of passages to a query, in [0, 1] (sigmoid of a one-logit model, else the
    probability of the last class, "relevant", of a softmax)."""

    def __init__(self, model: ModelInfo | Path, threads: int | None = None) -> None:
        from tokenizers import Tokenizer

        self.info = model if isinstance(model, ModelInfo) else ModelInfo.load(Path(model))
        self._session = make_session(self.info.onnx_path, threads or default_threads())
        self._input_names = {i.name for i in self._session.get_inputs()}
        outputs = self._session.get_outputs()
        names = [o.name for o in outputs]
        self._output = "logits" if "logits" in names else names[0]
        shape = next(o.shape for o in outputs if o.name == self._output)
        if len(shape) != 2:
            raise ModelNotAvailableError(
                f"{self.info.name} is not a cross-encoder: its output {self._output!r} has"
                f" shape {shape}, not [batch, labels]"
            )
        self._tokenizer = Tokenizer.from_file(str(self.info.tokenizer_path))
        self._tokenizer.no_padding()
        # A long passage is cut, never the query (longest_first takes from the longer one).
        self._tokenizer.enable_truncation(max_length=self.info.max_tokens)
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0

    @property
    def name(self) -> str:
        return self.info.name

    def score(self, query: str, passages: Sequence[str], batch_size: int = 16) -> np.ndarray:
        """One score per passage, in input order."""
        out = np.empty(len(passages), dtype=np.float32)
        if not passages:
            return out
        encodings = self._tokenizer.encode_batch([(query, p) for p in passages])
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            out[idx] = self._run([encodings[i] for i in idx])
        return out

    def _run(self, encodings: list) -> np.ndarray:
        feed = padded_feed(encodings, self._pad_id)
        feed = {k: v for k, v in feed.items() if k in self._input_names}
        logits = self._session.run([self._output], feed)[0].astype(np.float64)
        return relevance(logits)


def relevance(logits: np.ndarray) -> np.ndarray:
    """[batch, labels] logits -> [batch] scores in [0, 1]."""
    if logits.shape[1] == 1:
        return 1.0 / (1.0 + np.exp(-logits[:, 0]))
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted[:, -1] / shifted.sum(axis=1)


def load_cross_encoder(name: str, cache_dir: Path, source: Path | None = None) -> CrossEncoder:
    """Provision (convert once, cache) and load a cross-encoder."""
    return CrossEncoder(provision_model(name, cache_dir, source, head="classifier"))
