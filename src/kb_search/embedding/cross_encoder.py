"""A cross-encoder: reads a query and a passage together and says how well the passage answers
it (what the rerank stage runs). Same machinery as the embedder: a BERT checkpoint converted
to ONNX once (provision.py, head="classifier"), onnxruntime and tokenizers, no torch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kb_search.embedding.embedder import default_threads, graph_inputs, make_session, padded_feed
from kb_search.embedding.provision import ModelInfo, ModelNotAvailableError, provision_model


class CrossEncoder:
    """Relevance of passages to a query, in [0, 1]: the sigmoid of a one-logit model, else the
    probability of its relevance class (`ModelInfo.relevant_label`, from the checkpoint's
    id2label)."""

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
        if isinstance(shape[1], int) and shape[1] > 2:
            raise ModelNotAvailableError(
                f"{self.info.name} classifies into {shape[1]} labels: not a relevance"
                " (cross-encoder) model, which has one score or two classes"
            )
        # A pair longer than the window loses tokens from its longer side first (a chunk,
        # nearly always), as sentence-transformers cuts them when these models are trained.
        self._tokenizer = Tokenizer.from_file(str(self.info.tokenizer_path))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.info.max_tokens, strategy="longest_first")
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0
        self._probe()

    def _probe(self) -> None:
        """Score one pair now: a tokenizer that does not mark the passage as the second
        segment, or a graph that cannot run on pairs, fails here (at load, `kb doctor`,
        `kb serve`), not on every search."""
        pair = self._tokenizer.encode("query", "passage")
        bare = self._tokenizer.encode("query", "passage", add_special_tokens=False)
        # BERT marks the passage as segment 1; graphs without segments (RoBERTa) need not.
        segments = "token_type_ids" in self._input_names
        if len(pair.ids) <= len(bare.ids) or (segments and 1 not in pair.type_ids):
            raise ModelNotAvailableError(
                f"{self.info.name}: its tokenizer does not encode a query and a passage as a"
                " pair ([CLS] query [SEP] passage [SEP], the passage as segment 1)"
            )
        import onnxruntime as ort

        quiet = ort.RunOptions()
        quiet.log_severity_level = 4  # the reason goes into our one line, not onnxruntime's log
        try:
            self._run([pair], quiet)
        except Exception as exc:  # noqa: BLE001 - onnxruntime's errors have no common base
            raise ModelNotAvailableError(
                f"{self.info.name} cannot score a query and a passage: {error_reason(exc)}"
            ) from exc

    @property
    def name(self) -> str:
        return self.info.name

    def score(
        self,
        query: str,
        passages: Sequence[str],
        batch_size: int = 16,
        deadline: float | None = None,
    ) -> np.ndarray:
        """One score per passage, in input order. Past `deadline` (time.monotonic()),
        DeadlineExceeded between two batches."""
        out = np.empty(len(passages), dtype=np.float32)
        if not passages:
            return out
        encodings = self._tokenizer.encode_batch([(query, p) for p in passages])
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), batch_size):
            if deadline is not None and time.monotonic() > deadline:
                raise DeadlineExceeded(f"{self.name} stopped after {start} of {len(order)}")
            idx = order[start : start + batch_size]
            out[idx] = self._run([encodings[i] for i in idx])
        return out

    def _run(self, encodings: list, options: object = None) -> np.ndarray:
        feed = graph_inputs(padded_feed(encodings, self._pad_id), self._input_names)
        logits = self._session.run([self._output], feed, options)[0].astype(np.float64)
        return relevance(logits, self.info.relevant_label)


def error_reason(exc: BaseException) -> str:
    """An onnxruntime error in one line: its last (the status message), or its type."""
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


class DeadlineExceeded(RuntimeError):
    """Scoring ran past the search's time budget."""


def relevance(logits: np.ndarray, label: int = -1) -> np.ndarray:
    """[batch, labels] logits -> [batch] scores in [0, 1]: the sigmoid of one logit, else the
    softmax probability of class `label`."""
    if logits.shape[1] == 1:
        return 1.0 / (1.0 + np.exp(-logits[:, 0]))
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted[:, label] / shifted.sum(axis=1)


def load_cross_encoder(name: str, cache_dir: Path, source: Path | None = None) -> CrossEncoder:
    """Provision (convert once, cache) and load a cross-encoder."""
    return CrossEncoder(provision_model(name, cache_dir, source, head="classifier"))
