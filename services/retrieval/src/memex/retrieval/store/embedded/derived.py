"""The embedded store's indexes derived from SQLite, per tenant: the ANN indexes of chunks and
records (``ann``), the chunk keyword index (``keyword_index``) and the chunk catalogue
(``catalog``).

Each is loaded, or rebuilt from SQLite, on first use, and updated after every committed write;
when an update fails it is dropped and its saved files invalidated, so the next use rebuilds it
rather than trusting it. ``EmbeddedStore`` owns one ``DerivedIndexes`` and uses it from its
worker thread only.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from memex.retrieval.store.embedded import note_queries, queries, search_queries
from memex.retrieval.store.embedded.ann import AnnIndex
from memex.retrieval.store.embedded.catalog import ChunkCatalog
from memex.retrieval.store.embedded.keyword_index import KeywordIndex

log = logging.getLogger(__name__)

CHUNKS = "chunks"
RECORDS = "records"


class DerivedIndexes:
    """The ANN indexes by (tenant, kind), the keyword indexes and chunk catalogues by tenant."""

    def __init__(self, directory: Path, dimension: int, conn: sqlite3.Connection) -> None:
        self._dimension = dimension
        self._dir = directory
        self._conn = conn
        self.ann: dict[tuple[str, str], AnnIndex] = {}
        self.keywords: dict[str, KeywordIndex] = {}
        self.catalogs: dict[str, ChunkCatalog] = {}

    def close(self) -> None:
        """Saves the ANN indexes (with the generation they reflect) and closes the keyword
        indexes."""
        for (tenant, kind), ann in self.ann.items():
            try:
                ann.save(queries.generation(self._conn, tenant, kind))
            except Exception:  # the next open rebuilds it from SQLite
                log.exception("could not save the ANN index %s", ann.path)
        for index in self.keywords.values():
            index.close()  # every write already committed it and named its generation

    def index(self, tenant: str, kind: str) -> AnnIndex:
        """The tenant's ANN index of ``kind``, loaded or rebuilt from SQLite on first use."""
        key = (tenant, kind)
        ann = self.ann.get(key)
        if ann is not None:
            return ann
        digest = hashlib.sha256(tenant.encode()).hexdigest()[:24]
        ann = AnnIndex(self._dimension, self._dir / "ann" / f"{digest}-{kind}.usearch")
        if not ann.load_if_current(queries.generation(self._conn, tenant, kind)):
            keys, vectors = queries.all_vectors(self._conn, tenant, kind, self._dimension)
            log.info("rebuilding the %s ANN index of a tenant from %d vectors", kind, len(keys))
            ann.add(keys, vectors)
        self.ann[key] = ann
        return ann

    def _keyword_path(self, tenant: str) -> Path:
        digest = hashlib.sha256(tenant.encode()).hexdigest()[:24]
        return self._dir / "keyword" / f"{digest}-chunks"

    def keyword(self, tenant: str) -> KeywordIndex:
        """The tenant's chunk keyword index, opened or rebuilt from SQLite on first use."""
        index = self.keywords.get(tenant)
        if index is not None:
            return index
        index = KeywordIndex(self._keyword_path(tenant))
        generation = queries.generation(self._conn, tenant, CHUNKS)
        if not index.load_if_current(
            generation, search_queries.search_text_count(self._conn, tenant)
        ):
            log.info("rebuilding the keyword index of a tenant from SQLite")
            index.rebuild(search_queries.search_texts(self._conn, tenant), generation)
        self.keywords[tenant] = index
        return index

    def catalog(self, tenant: str) -> ChunkCatalog:
        """The tenant's chunk catalogue, built from SQLite on first use."""
        catalog = self.catalogs.get(tenant)
        if catalog is None:
            catalog = ChunkCatalog(
                note_queries.catalog_notes(self._conn, tenant),
                note_queries.catalog_chunks(self._conn, tenant),
            )
            self.catalogs[tenant] = catalog
        return catalog

    @contextlib.contextmanager
    def updating(self, tenant: str, kind: str) -> Iterator[None]:
        """Around a derived-index update that follows a commit: if it fails, the in-memory
        indexes (ANN, and for chunks the keyword index) are dropped and their sidecars
        invalidated, so the next use rebuilds them from SQLite, never trusting them. The chunk
        catalogue, never saved, is dropped likewise."""
        try:
            yield
        except BaseException:
            if kind == CHUNKS:
                self.catalogs.pop(tenant, None)
            ann = self.ann.pop((tenant, kind), None)
            if ann is not None:
                ann.invalidate()
            index = self.keywords.pop(tenant, None) if kind == CHUNKS else None
            if index is not None:
                index.invalidate()
                index.close()
            raise

    def drop_tenant(self, tenant: str) -> None:
        """Forgets a deleted tenant's indexes: its ANN sidecars invalidated, its keyword index
        files destroyed (opened just for that when not in use)."""
        self.catalogs.pop(tenant, None)
        for kind in (CHUNKS, RECORDS):
            ann = self.ann.pop((tenant, kind), None)
            if ann is not None:
                ann.invalidate()
        index = self.keywords.pop(tenant, None) or KeywordIndex(self._keyword_path(tenant))
        index.destroy()
