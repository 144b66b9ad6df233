"""The retrieval service's engine: store, embedder, indexer, searcher and records (no gRPC)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.embedder import Embedder, open_embedder
from memex.retrieval.forget import ForgetReceipt, Forgetter
from memex.retrieval.ingest.indexer import Indexer, IndexOptions, IndexSummary, Progress
from memex.retrieval.ingest.notes import Sensitivity
from memex.retrieval.records import Records
from memex.retrieval.rerank import Reranker
from memex.retrieval.rerank_onnx import open_reranker
from memex.retrieval.search import Searcher, Tuning
from memex.retrieval.store import open_store
from memex.retrieval.store.base import Store
from memex.retrieval.whisper_models import CATALOGUE as WHISPER_CATALOGUE
from memex.shared.errors import FailedPrecondition, InvalidArgument

log = logging.getLogger(__name__)

_TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class RetrievalCore:
    """Everything a servicer calls, wired from settings."""

    def __init__(
        self,
        settings: RetrievalSettings,
        store: Store,
        embedder: Embedder,
        reranker: Reranker | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        s = settings
        self.indexer = Indexer(
            store,
            embedder,
            IndexOptions(
                include=s.include,
                exclude=s.exclude,
                records_folder=s.records_folder,
                collections=s.record_collections,
                sensitive_collections=s.sensitive_collections,
                sensitivity=Sensitivity(
                    frozenset(t.casefold() for t in s.sensitive_tags), tuple(s.sensitive_folders)
                ),
                max_file_bytes=s.max_file_bytes,
                max_document_bytes=s.max_document_bytes,
                whisper_model_dir=s.whisper_model_dir or WHISPER_CATALOGUE[s.whisper_model].path(),
                whisper_threads=s.whisper_threads,
                embed_batch=s.embed_batch,
            ),
        )
        self.searcher = Searcher(
            store,
            embedder,
            Tuning(
                rrf_k=s.rrf_k,
                weights={
                    "vector": s.vector_weight,
                    "keyword": s.keyword_weight,
                    "graph": s.graph_weight,
                    "beliefs": s.beliefs_weight,
                    "observations": s.observations_weight,
                },
                depth=s.channel_depth,
                half_life_days=s.recency_half_life_days,
                recency_weight=s.recency_weight,
                salience_weight=s.salience_weight,
                default_k=s.default_k,
                max_k=s.max_k,
                collections=tuple(s.record_collections),
                fusion=s.fusion,
                rerank_depth=s.rerank_depth,
                rerank_weight=s.rerank_weight,
            ),
            reranker=reranker,
        )
        self.records = Records(store, self.indexer, s.record_collections, s.sensitive_collections)
        self.forgetter = Forgetter(store, self.searcher, self.indexer.archive, s.store, s.max_k)
        self._indexing: dict[str, asyncio.Lock] = {}

    def tenant(self, name: str) -> str:
        """The request's tenant, or the default one; InvalidArgument for a malformed name."""
        if not name:
            return self.settings.default_tenant
        if not _TENANT.match(name):
            raise InvalidArgument(
                f"invalid tenant {name!r}: use up to 64 letters, digits, '.', '_' or '-'"
            )
        return name

    async def index(
        self, tenant: str, vault_path: str, full: bool, progress: Progress | None
    ) -> IndexSummary:
        """One indexing run per tenant at a time."""
        lock = self._indexing.setdefault(tenant, asyncio.Lock())
        if lock.locked():
            raise FailedPrecondition(
                f"an indexing run for tenant {tenant!r} is in progress; wait for it to finish"
            )
        async with lock:
            return await self.indexer.run(tenant, vault_path, full=full, progress=progress)

    async def forget_note(self, tenant: str, note: str, dry_run: bool) -> ForgetReceipt:
        """Forgets a note; not while the tenant is being indexed (the run could write it back)."""
        lock = self._indexing.setdefault(tenant, asyncio.Lock())
        if lock.locked():
            raise FailedPrecondition(
                f"an indexing run for tenant {tenant!r} is in progress; forget when it has finished"
            )
        async with lock:
            return await self.forgetter.forget(tenant, note, dry_run=dry_run)


@contextlib.asynccontextmanager
async def open_core(settings: RetrievalSettings) -> AsyncIterator[RetrievalCore]:
    """Loads the reranker (a bad one fails here, before anything else starts), connects to the
    embedding service (for the vector dimension), opens the store, and starts warming the
    default tenant's indexes in the background (the service answers meanwhile)."""
    reranker = open_reranker(settings)
    async with (
        open_embedder(
            settings.embedding_addr, settings.embedding_timeout_seconds, wait_s=300.0
        ) as embedder,
        open_store(settings, embedder.dimension) as store,
    ):
        warming = asyncio.create_task(_warm(store, settings.default_tenant))
        try:
            yield RetrievalCore(settings, store, embedder, reranker)
        finally:
            warming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await warming


async def _warm(store: Store, tenant: str) -> None:
    started = time.perf_counter()
    try:
        await store.warm(tenant)
    except Exception:  # the first search loads (or fails) the same way and says why
        log.exception("warming tenant %r's indexes failed; its first search will retry", tenant)
        return
    log.info("tenant %r's indexes ready in %.1fs", tenant, time.perf_counter() - started)
