"""The one core every face calls: a knowledge base built from a Config.

`KnowledgeBase` opens the database, the embedding model and the vector index lazily, owns
their lifetime, and offers the verbs (search, ask, similar, add, sync, watch, remove, tag,
reindex, init, doctor, export, eval, get); what the faces only read (documents, chunks, tags,
stats, the added folders) is `kb.reads` (`kb_search.reads`). The CLI and the
MCP server parse their input, call one method and render the result; they hold no wiring of
their own.

A verb imports the machinery it runs when it is called: every command's start pays only for
its own (each measured on top of `import kb_search.knowledge_base`, two busy cores: the search
pipeline +44 ms, `kb get`'s reading +62 ms, ingest +124 ms, eval +200 ms, numpy for similarity
+214 ms).
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_search.config import Config, absolute_dir
from kb_search.errors import (
    DBError,
    KbError,
    UserInputError,
)
from kb_search.net import time_limit
from kb_search.profile import Profile
from kb_search.progress import NoProgress, Progress
from kb_search.search.budget import SEARCH_CANCELLED, budgeted
from kb_search.store import db

if TYPE_CHECKING:
    from kb_search.ask import Answer
    from kb_search.doctor import Check
    from kb_search.embedding import TextEmbedder
    from kb_search.executor_choice import ExecutorChoice
    from kb_search.ingest.executor import AddOptions
    from kb_search.ingest.summary import AddSummary
    from kb_search.ingest.sync import SyncSummary
    from kb_search.ingest.watch import WatchBatch, WatchPlan, WatchThread
    from kb_search.models.loaded import Models, VectorLegState
    from kb_search.reading import Reading
    from kb_search.reads import Reads
    from kb_search.search.expand import Expansion
    from kb_search.search.pipeline import SearchOptions
    from kb_search.search.results import SearchResponse
    from kb_search.store.export import ExportResult
    from kb_search.store.roots import Removal
    from kb_search.vectors.reindex import ReindexSummary


class KnowledgeBase:
    """One knowledge base. Its `profile` (`kb_search.profile`: one-shot, warm, serve), chosen
    by the face, says how models are loaded and kept and which vector index answers.
    `embedder` replaces the configured model (tests)."""

    def __init__(
        self,
        config: Config,
        *,
        profile: Profile = Profile.ONE_SHOT,
        embedder: TextEmbedder | None = None,
        cwd: Path | None = None,
        warn: Callable[[str], None] | None = None,
    ):
        self.config = config
        self.profile = profile
        self.cwd = cwd or Path.cwd()
        self.warn = warn or (lambda _message: None)
        self._embedder = embedder
        self._local = threading.local()
        self._readers: list[db.Connection] = []
        self._writer: db.Connection | None = None
        self._readers_lock = threading.Lock()
        self._models: Models | None = None
        self._reads: Reads | None = None
        self._lazy_lock = threading.Lock()

    # ---- lifetime ----------------------------------------------------------------------------

    @property
    def db_path(self) -> Path:
        return self.config.db_path

    @property
    def error_log(self) -> Path:
        from kb_search.ingest.summary import ERROR_LOG

        return self.config.data_dir / ERROR_LOG

    def reader(self) -> db.Connection:
        """A read-only connection for this thread (readers never block on a running ingest)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = db.connect(self.db_path, readonly=True, trace=self._sql_trace())
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def writer(self, create: bool = False, adopt_empty: bool = False) -> db.Connection:
        """The one writing connection (opened on first use; migrates the file)."""
        if self._writer is None:
            if create:
                self.config.data_dir.mkdir(parents=True, exist_ok=True)
            self._writer = db.connect(
                self.db_path, create=create, adopt_empty=adopt_empty, trace=self._sql_trace()
            )
        return self._writer

    @property
    def reads(self) -> Reads:
        """The index's read-only views for the faces (documents, chunks, cited passages,
        tags, stats, the added folders): `kb_search.reads`."""
        with self._lazy_lock:
            if self._reads is None:
                from kb_search.reads import Reads  # `kb search` needs none of the store's views

                self._reads = Reads(self.reader, self.config, self.cwd)
            return self._reads

    def _sql_trace(self) -> Callable[[str], None] | None:
        """`trace_sql` (KB_TRACE_SQL=1): every statement this KB runs, on stderr."""
        return db.sql_tracer(sys.stderr) if self.config["trace_sql"] else None

    def close(self) -> None:
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for conn in readers:
            try:
                conn.close()
            except db.ProgrammingError:
                pass  # opened by another thread (an MCP worker): freed with that thread
        self._local = threading.local()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._models is not None:  # the next search opens the leg anew
            self._models.forget_leg()

    def companion(self) -> KnowledgeBase:
        """Another KB over the same files with its own connections, sharing this one's loaded
        models: a thread that writes (`kb serve --watch`) beside one that serves."""
        other = KnowledgeBase(
            self.config,
            profile=self.profile,
            embedder=self._embedder,
            cwd=self.cwd,
            warn=self.warn,
        )
        other._models = self.models.sharing(other._model_records)
        return other

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the models --------------------------------------------------------------------------

    @property
    def models(self) -> Models:
        """Every model this KB uses (embedding, vector leg, rerankers, chat), loaded when first
        needed: `models/`."""
        with self._lazy_lock:  # the MCP server's threads: one holder, so each model loads once
            if self._models is None:
                from kb_search.models.loaded import Models

                self._models = Models(
                    self.config,
                    profile=self.profile,
                    injected=self._embedder,
                    warn=self.warn,
                    records=self._model_records,
                )
            return self._models

    def _model_records(self) -> db.Connection | None:
        """Where the DB records its models: None while no DB exists."""
        if self._writer is not None:
            return self._writer
        return self.reader() if self.db_path.exists() else None

    def vector_leg(self) -> VectorLegState:
        """The vector leg (model + index over the DB's vectors), loaded once."""
        return self.models.vector_leg(self.reader)

    # ---- reading -----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        options: SearchOptions,
        explain: str | None = None,
        relative_to_roots: bool = False,
        expand: bool = False,
    ) -> SearchResponse:
        """One query, stopped after `search.timeout_s` so no request can stall the others. Its
        `timings_ms.total` covers everything this call did: when it loaded the model (the first
        vector search of a process), `model_load` says how long that took. `explain`: a path
        whose place at each stage the response explains (`explanation`), relative to this KB's
        cwd, or to the added folders with `relative_to_roots` (a caller with no directory of
        its own: an MCP client). `expand`: the chat model's phrasings join the variants
        (`search.expand`; ConfigError when none is set)."""
        started = time.perf_counter()
        expansion = None
        if expand:
            options, expansion = self._expanded(query, options)
        loaded_before = self.models.leg_loaded
        leg = None if options.mode == "lexical" else self.vector_leg()
        response = self._budgeted_search(query, options, leg, explain, relative_to_roots)
        if leg is not None and not loaded_before:
            response.timings_ms["model_load"] = self.models.load_ms
        if expansion is not None:
            from kb_search.search.expand import mark_expanded

            mark_expanded(response, expansion)
        response.timings_ms["total"] = (time.perf_counter() - started) * 1000
        return response

    def _budgeted_search(
        self,
        query: str,
        options: SearchOptions,
        leg: VectorLegState | None,
        explain: str | None,
        relative_to_roots: bool,
    ) -> SearchResponse:
        """The pipeline on this thread's reader within one request's budget (`search.timeout_s`,
        the client's cancel). A leg the budget stopped says so in `legs`; with none left, the
        search is an error."""
        from kb_search.search.pipeline import Trace, search

        conn = self.reader()
        vector, why = (leg.search, leg.unavailable) if leg is not None else (None, None)
        trace = Trace() if explain is not None else None
        with budgeted(conn, self.config["search.timeout_s"]) as budget:
            options = replace(
                options,
                deadline=budget.deadline,
                should_stop=budget.spent,
                max_query_chars=self.config["search.max_query_chars"],
            )
            # The budget holds for the network too: a remote model's query embedding stops
            # at 80% of it, so a stalled server costs the vector leg, not the lexical answer.
            with time_limit(budget.deadline - 0.2 * budget.seconds):
                response = search(
                    conn, query, options, vector=vector, vector_unavailable=why, trace=trace
                )
                if trace is not None and explain is not None:
                    cwd = None if relative_to_roots else self.cwd
                    response.explanation = self._explain(
                        conn, explain, options, trace, response, cwd
                    )
        legs = response.legs.values()
        if budget.spent() and all(s.startswith("error") for s in legs):
            raise budget.stopped()
        return response

    def ask(
        self,
        question: str,
        options: SearchOptions,
        expand: bool = False,
        on_text: Callable[[str], None] | None = None,
    ) -> Answer:
        """`kb ask`: search as `kb search` does, then the chat model's answer from the passages
        found, with their citations, or a refusal when none is close enough (`ask.py`).
        `on_text` gets the answer as it streams. ConfigError before any search when no chat
        model is configured."""
        from kb_search.ask import answer

        started = time.perf_counter()
        model = self.models.chat()
        response = self.search(question, options, expand=expand)
        result = answer(model, question, response, self.config["ask.min_similarity"], on_text)
        result.timings_ms["total"] = (time.perf_counter() - started) * 1000
        return result

    def _expanded(self, query: str, options: SearchOptions) -> tuple[SearchOptions, Expansion]:
        """`options` with the chat model's phrasings for `query` after the caller's own."""
        from kb_search.search.expand import expand, with_expansion

        model = self.models.chat()
        cache = self.config.data_dir / "expansions"
        deadline = time.monotonic() + self.config["search.expand_timeout_s"]
        expansion = expand(model, query, cache, deadline)
        variants = with_expansion(options.variants, expansion)
        return replace(options, variants=variants, expanded=len(expansion.phrasings)), expansion

    def _explain(
        self,
        conn: db.Connection,
        path: str,
        options: SearchOptions,
        trace: Any,
        response: Any,
        cwd: Path | None,
    ) -> Any:
        from kb_search.explain import explain_path

        vector = None if options.mode == "lexical" else self.vector_leg().search
        returned = [r.chunk_id for r in response.results]
        return explain_path(conn, path, options, trace, returned, vector, cwd)

    def search_options(self, **values: Any) -> SearchOptions:
        """SearchOptions with this KB's defaults for what is not given (None = default; but
        reranker=None is no rerank stage, whatever the config says)."""
        from kb_search.search.pipeline import SearchOptions
        from kb_search.search.query import Filters

        given = {k: v for k, v in values.items() if v is not None}
        if "reranker" not in values:  # reranker=None given: no rerank stage
            given["reranker"] = self.models.reranker()
        given.setdefault("mode", self.config["search.default_mode"])
        given.setdefault("top", self.config["search.default_top"])
        given.setdefault("rrf_k", self.config["search.rrf_k"])
        given.setdefault("fusion", self.config["search.fusion"])
        given.setdefault("rerank_depth", self.config["search.rerank_depth"])
        given.setdefault("filters", Filters())
        return SearchOptions(**given)

    def similar(self, ref: str, *, chunk: bool = False, top: int = 10) -> SearchResponse:
        from kb_search.search.similar import similar_chunks, similar_documents

        leg = self.vector_leg()
        if leg.search is None or leg.table is None:
            raise UserInputError(f"similarity needs vectors: {leg.unavailable}")
        index, table = leg.search.index, leg.table.name
        with self.reads.budgeted("similarity query") as (conn, _):
            if chunk:
                return similar_chunks(conn, index, table, self.reads.chunk_id(ref), top)
            return similar_documents(conn, index, table, self.reads.document_id(conn, ref), top)

    def get(
        self,
        citations: list[str],
        context: int = 0,
        max_bytes: int | None = None,
        *,
        raw: bool = False,
        symbol: bool = False,
        relative_to_roots: bool = False,
    ) -> Reading:
        """The cited passages (`kb get`), only from indexed documents, as the clean text that
        was indexed (`raw`: a text file's own lines; `symbol`: a code line widened to the
        function or class around it), within the search budget (`search.timeout_s`, the
        client's cancellation). Paths are relative to this KB's cwd, or to the added folders
        with `relative_to_roots`."""
        from kb_search.reading import read_citations

        cwd = None if relative_to_roots else self.cwd
        conn = self.reader()
        with budgeted(conn, self.config["search.timeout_s"], "read") as budget:
            return read_citations(
                conn, citations, context, max_bytes, cwd,
                raw=raw, symbol=symbol, should_stop=budget.spent,
            )  # fmt: skip

    @staticmethod
    @contextmanager
    def cancelled_by(event: threading.Event) -> Iterator[None]:
        """Every search and budgeted read started in this context (and the worker threads
        that copy it) stops at its next check once `event` is set: the MCP server sets it
        when a tool call's client cancels or goes away."""
        token = SEARCH_CANCELLED.set(event)
        try:
            yield
        finally:
            SEARCH_CANCELLED.reset(token)

    @staticmethod
    def watch_in_background(
        run: Callable[[threading.Event], object], report: Callable[[str], None]
    ) -> WatchThread:
        """`run(stop)` (a `watch` on a companion KB) on a daemon thread that reports a failure
        instead of dying silently; `close()` stops it after the batch in progress."""
        from kb_search.ingest.watch import WatchThread

        thread = WatchThread(run, report)
        thread.start()
        return thread

    def export(
        self, target: Path, force: bool = False, progress: Progress | None = None
    ) -> ExportResult:
        from kb_search.store.export import export_db

        return export_db(self.reader(), target, force=force, progress=progress)

    # ---- writing -----------------------------------------------------------------------------

    def init(
        self, model: str | None = None, docling: bool = False, endpoint: str | None = None
    ) -> dict[str, Any]:
        """Create the data dir and the DB, provision the model (a remote one: probe its
        endpoint once), bind the DB to it; `docling` also fetches Docling's PDF layout models
        (online)."""
        from kb_search.store.inventory import stats
        from kb_search.vectors.binding import bind

        if model:
            self.config.override("model", model)
        self._use_endpoint(endpoint)
        conn = self.writer(create=True, adopt_empty=True)
        embedder = self.models.writing_embedder(conn)
        bind(conn, embedder)
        info = stats(conn, self.db_path)
        if docling:
            from kb_search.formats.docling import fetch_docling_models

            info["docling_models"] = str(fetch_docling_models())
        return {"data_dir": str(self.config.data_dir), "db": str(self.db_path), **info}

    def add(
        self,
        paths: Iterable[Path],
        *,
        tags: Iterable[str] = (),
        doc_type: str | None = None,
        workers: int | None = None,
        retry_failed: bool = False,
        progress: Progress | None = None,
        executor: ExecutorChoice | None = None,
        include_generated: bool = False,
    ) -> AddSummary:
        """Ingest files and folders. A path that does not exist is a UserInputError before
        anything is written; the model loads only when a chunk must be embedded."""
        from kb_search.ingest.executor import add_options
        from kb_search.ingest.pipeline import add_paths

        paths = [Path(p) for p in paths]
        for path in paths:
            if not path.expanduser().exists():
                why = "broken symlink" if path.is_symlink() else "no such file or directory"
                raise UserInputError(f"{path}: {why}")
        options = add_options(
            self.config,
            workers,
            executor,
            tags=list(tags),
            doc_type=doc_type,
            retry_failed=retry_failed,
            include_generated=include_generated,
        )
        conn = self.writer(create=True)
        return self._ingest(conn, options, progress, functools.partial(add_paths, conn, paths))

    def sync(
        self,
        paths: Iterable[Path] | None = None,
        *,
        workers: int | None = None,
        retry_failed: bool = False,
        progress: Progress | None = None,
        executor: ExecutorChoice | None = None,
        include_generated: bool = False,
        embed: bool = True,
    ) -> SyncSummary:
        """Rescan what was added; the model loads only when a chunk must be embedded
        (`embed=False`: text only, for `embed_some` to follow)."""
        from kb_search.ingest.executor import add_options
        from kb_search.ingest.sync import sync

        options = add_options(
            self.config,
            workers,
            executor,
            retry_failed=retry_failed,
            include_generated=include_generated,
        )
        conn = self.writer()
        chosen = list(paths) if paths is not None else None
        run = functools.partial(sync, conn, chosen, embed=embed)
        return self._ingest(conn, options, progress, run)

    def embed_some(self, limit: int) -> int:
        """Embed up to `limit` chunks that have no vector yet (one transaction); how many."""
        conn = self.writer()
        return self.models.for_writing(conn).vectors.fill(conn, limit=limit)

    def _ingest(
        self,
        conn: db.Connection,
        options: AddOptions,
        progress: Progress | None,
        run: Callable[..., Any],
    ) -> Any:
        """What `add` and `sync` share: the error log, the lazily loaded model, the executor,
        and the notes their summary gets afterwards."""
        from kb_search.ingest.summary import ErrorLog, with_closing_notes

        log = ErrorLog(self.error_log)
        began = time.time()
        writing = self.models.for_writing(conn)
        options = replace(options, tokenizer_path=writing.tokenizer_path)
        summary = run(
            options,
            vectors=writing.vectors,
            error_log=log,
            progress=progress or NoProgress(),
            executor=self.models.executor(conn, options),
        )
        summary.model_loaded = writing.vectors.model_loaded
        return with_closing_notes(summary, log, conn, options.ocr, since=began)

    def watch(
        self,
        paths: Iterable[Path] | None,
        on_batch: Callable[[WatchBatch], None],
        stop: threading.Event,
        *,
        workers: int | None = None,
        on_ready: Callable[[WatchPlan], None] | None = None,
    ) -> WatchPlan:
        """Follow the roots (or `paths` under them) with file-system events until `stop` is
        set, syncing each debounced batch of changed paths with `sync` (text first; chunks
        are embedded a few at a time while no batch waits). Call it on the thread
        that owns this KB's writer; a long-lived KB keeps the model between batches."""
        from kb_search.ingest.watch import EMBED_STEP, watch

        return watch(
            self.writer(),
            list(paths) if paths is not None else None,
            lambda batch, chosen: self.sync(batch, workers=chosen, embed=False),
            on_batch,
            stop,
            workers=workers,
            ignored=(self.config.data_dir, self.db_path),
            on_ready=on_ready,
            embed_step=lambda: self.embed_some(EMBED_STEP),
        )

    def remove(self, refs: Iterable[str]) -> Removal:
        """Delete documents by id or path, or every document under a folder, forgetting an
        added folder (ingest.remove); all of it or nothing."""
        from kb_search.ingest.remove import remove

        return remove(self.writer(), refs, self.cwd)

    def tag(self, ref: str, names: list[str]) -> tuple[int, list[str]]:
        """Add tags; returns the document id and its tags now."""
        from kb_search.store.records import document_tags
        from kb_search.store.tags import add_tags

        conn = self.writer()
        doc_id = self.reads.document_id(conn, ref)
        add_tags(conn, doc_id, names)
        return doc_id, document_tags(conn, {doc_id}).get(doc_id, [])

    def untag(self, ref: str, names: list[str]) -> tuple[int, int, list[str]]:
        """Remove tags; returns the document id, how many were removed and its tags now."""
        from kb_search.store.records import document_tags
        from kb_search.store.tags import remove_tags

        conn = self.writer()
        doc_id = self.reads.document_id(conn, ref)
        removed = remove_tags(conn, doc_id, names)
        return doc_id, removed, document_tags(conn, {doc_id}).get(doc_id, [])

    def reindex(
        self,
        model: str | None = None,
        full: bool = False,
        progress: Progress | None = None,
        executor: ExecutorChoice | None = None,
        endpoint: str | None = None,
    ) -> ReindexSummary:
        """Embed chunks without vectors (resumable); `model` switches the DB to another
        (`endpoint`: a remote model's server). With the Ray executor, batches of chunks are
        embedded on the cluster."""
        from kb_search.executor_choice import ExecutorChoice
        from kb_search.ingest.left_out import remove_stored_secrets
        from kb_search.models.embedders import canonical
        from kb_search.store.vectors import db_model
        from kb_search.vectors.reindex import reindex

        progress = progress or NoProgress()
        self._use_endpoint(endpoint)
        conn = self.writer()
        excluded = remove_stored_secrets(conn)  # stored by a kb from before the rule
        name = canonical(model) if model else db_model(conn) or self.models.choice().name
        executor = executor or ExecutorChoice.configured(self.config)
        with self.models.reindex_embedder(name, executor) as (embedder, batch):
            summary = reindex(
                conn,
                embedder,
                full=full,
                on_start=lambda total: progress.start(total, "chunks"),
                on_batch=lambda n: progress.advance(n, chunks=n),
                batch=batch,
            )
        summary.excluded = excluded
        return summary

    def _use_endpoint(self, endpoint: str | None) -> None:
        """A remote model's server given on the command line (recorded when the DB binds)."""
        if endpoint:
            self.config.override("embedding.endpoint", endpoint)

    # ---- health and quality --------------------------------------------------------------------

    def doctor(self) -> list[Check]:
        """Every health check: SQLite, schema, integrity, FTS, chunks, sqlite-vec, the model and
        its vectors, and which parsers this install uses."""
        from kb_search.doctor import Check, model_checks, reranker_check, run_checks
        from kb_search.store.salvage import damage_advice

        try:
            try:
                conn = self.writer()
            except DBError:
                conn = self.reader()  # read-only: every check that only reads still runs
        except db.DatabaseError as exc:
            if db.explain(exc) is None:
                raise
            # A file too damaged to open: the one check that matters, and what to do.
            return [Check("sqlite", False, damage_advice(self.db_path))]
        models = model_checks(conn, self.models.choice(), self.models.embedder)
        depth = self.config["search.rerank_depth"]
        rerank = reranker_check(self.config["search.reranker"], depth, self.models.reranker)
        policy = (self.config["vectors.index"], self.config["vectors.ann_min_chunks"])
        return run_checks(conn, [*models, rerank], policy)

    def eval(
        self,
        target: Path,
        modes: list[str],
        progress: Progress | None = None,
        fusion: str | None = None,
        reranker: str | None = None,
    ) -> dict[str, Any]:
        """Retrieval quality: on a BEIR-layout dataset directory (indexed into its own DB
        under the data dir, kept and reused), or on a questions file over this KB. `fusion`
        overrides `search.fusion` for the hybrid mode, `reranker` the `search.reranker`
        setting ("none": no rerank stage); the report names the ones used."""
        from kb_search.evaluate.metrics import DEPTH

        fusion = fusion or self.config["search.fusion"]
        if reranker and reranker != "none":  # a directory on the command line: from its cwd
            reranker = absolute_dir(reranker, self.cwd)
        rerank = self.models.reranker(reranker or self.config["search.reranker"])
        used = {
            "fusion": fusion,
            "reranker": rerank.name if rerank is not None else "none",
            "rerank_depth": self.config["search.rerank_depth"] if rerank is not None else None,
        }

        def options_for(mode: str, variants: tuple[str, ...] = ()) -> SearchOptions:
            return self.search_options(
                mode=mode,
                top=DEPTH,
                snippets=False,
                fusion=fusion,
                reranker=rerank,
                variants=variants,
            )

        if Path(target).is_file():
            from kb_search.evaluate.questions import questions_report

            def run(
                text: str, mode: str, variants: tuple[str, ...], expand: bool = False
            ) -> SearchResponse:
                return self.search(text, options_for(mode, variants), expand=expand)

            expand = self.config["llm.model"] is not None  # a chat model: hybrid+expand too
            report = questions_report(self.reader(), Path(target), modes, run, expand)
            if expand:
                used["llm"] = self.config["llm.model"]
            return {**report, **used}
        return {**self._eval_beir(Path(target), modes, progress, options_for), **used}

    def _eval_beir(
        self,
        target: Path,
        modes: list[str],
        progress: Progress | None,
        options_for: Callable[[str], SearchOptions],
    ) -> dict[str, Any]:
        from kb_search.evaluate.beir import corpus_size, run_eval
        from kb_search.ingest.executor import chunk_settings

        progress = progress or NoProgress()
        embedder = None
        if set(modes) - {"lexical"}:
            embedder = self.models.embedder(self.models.choice().name)
        progress.start(corpus_size(target), "documents")
        report = run_eval(
            target,
            self.config.data_dir / "eval",
            chunk_settings(self.config),
            modes,
            embedder=embedder,
            progress=lambda n: progress.advance(n),
            options_for=options_for,
        )
        return {"kind": "beir", **report}


def explain_error(exc: BaseException) -> KbError | None:
    """A one-line error a person can act on, for the storage errors they can meet (disk full,
    a damaged or locked file); None for anything else."""
    return db.explain(exc) if isinstance(exc, db.DatabaseError) else None
