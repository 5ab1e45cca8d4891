"""`kb eval`: retrieval quality on a BEIR-layout dataset (`beir`) or on the user's own
questions over the indexed knowledge base (`questions`); the metrics in `metrics`."""

from kb_search.errors import EvalError
from kb_search.evaluate.beir import run_eval
from kb_search.evaluate.metrics import percentile

__all__ = ["EvalError", "percentile", "run_eval"]
