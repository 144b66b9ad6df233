"""The chunk keyword index built for speed (tantivy BM25), derived from SQLite and repairable.

FTS5 scores every chunk holding any query word before it can sort; at 200k chunks that alone took
longer than the whole search budget. Tantivy ranks the top k of an OR query with block-max WAND,
skipping chunks that cannot enter the top k. One index per tenant (a tenant's BM25 statistics are
its own), on disk under ``<store>/keyword/``, keyed by the chunk's SQLite rowid.

SQLite stays the source of truth: the tenant's FTS5 table keeps every chunk's search text, and this
index is rebuilt from it when it is missing, unreadable or out of date. As with the HNSW index
(``ann.py``), a sidecar names the SQLite generation the index reflects; every write updates the
index after the SQLite commit and then the sidecar, so a crash in between leaves a sidecar that no
longer matches and the next open rebuilds. Deleted chunks stay in tantivy's segments (marked
deleted) until a merge, so ``rebuild`` (run by the store's scrub, after a note is forgotten)
writes a fresh index and removes the old files.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import tantivy

from memex.retrieval.store.keyword_terms import analyzer, query_terms

log = logging.getLogger(__name__)

ANALYZER = "memex"
# A single writer thread: a personal vault is written note by note. 15 MB is tantivy's floor per
# thread for the write buffer; a rebuild gets more, then lets it go.
WRITE_HEAP = 15_000_000
REBUILD_HEAP = 64_000_000


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("rowid", stored=False, indexed=True, fast=True)
    # Term frequencies without positions: BM25 needs no more, and the index stays small.
    builder.add_text_field("text", stored=False, tokenizer_name=ANALYZER, index_option="freq")
    return builder.build()


class KeywordIndex:
    """One tenant's BM25 index over (rowid, search text) pairs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._side = path.with_suffix(".json")
        self._schema = _schema()
        self._analyzer = analyzer()
        self._index: tantivy.Index | None = None
        self._writer: tantivy.IndexWriter | None = None

    def _open(self) -> tantivy.Index:
        self.path.mkdir(parents=True, exist_ok=True)
        index = tantivy.Index(self._schema, path=str(self.path))
        index.register_tokenizer(ANALYZER, self._analyzer)
        return index

    def __len__(self) -> int:
        return 0 if self._index is None else int(self._index.searcher().num_docs)

    # -- lifecycle -----------------------------------------------------------------------------
    def load_if_current(self, generation: int, size: int) -> bool:
        """Opens the saved index if its sidecar names ``generation`` and it holds ``size``
        chunks; False means rebuild."""
        try:
            saved = json.loads(self._side.read_text())
        except (OSError, ValueError):
            return False
        if saved.get("generation") != generation or not self.path.exists():
            return False
        try:
            self._index = self._open()
        except Exception:  # a torn or foreign index: rebuilding is always safe
            log.warning("keyword index %s unreadable; rebuilding from SQLite", self.path)
            self._index = None
            return False
        if len(self) != size:
            self.close()
            return False
        return True

    def rebuild(self, rows: Iterable[tuple[int, str]], generation: int) -> None:
        """Writes a fresh index of ``rows`` in place of the old one (whose files, deleted chunks'
        terms included, are removed), then the sidecar."""
        self.invalidate()
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)
        index = self._open()
        writer = index.writer(heap_size=REBUILD_HEAP, num_threads=1)
        for rowid, text in rows:
            writer.add_document(tantivy.Document(rowid=rowid, text=text))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        self._index = index
        self._save(generation)

    def replace(self, old: Iterable[int], new: Iterable[tuple[int, str]], generation: int) -> None:
        """Deletes the chunks ``old``, adds ``new`` and commits, then names ``generation`` in the
        sidecar. Searches see the change on return."""
        index = self._index or self._open()
        self._index = index
        if self._writer is None:
            self._writer = index.writer(heap_size=WRITE_HEAP, num_threads=1)
        writer = self._writer
        for rowid in old:
            writer.delete_documents_by_term("rowid", rowid)
        for rowid, text in new:
            writer.add_document(tantivy.Document(rowid=rowid, text=text))
        writer.commit()
        index.reload()
        self._save(generation)

    def _save(self, generation: int) -> None:
        tmp = self._side.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"generation": generation}))
        os.replace(tmp, self._side)

    def invalidate(self) -> None:
        """Removes the sidecar so a crash before the next write forces a rebuild."""
        self._side.unlink(missing_ok=True)

    def close(self) -> None:
        """Lets go of the writer (its lock) and the index."""
        self._writer = None
        self._index = None

    def destroy(self) -> None:
        """Removes the index and its sidecar from disk (the tenant is deleted)."""
        self.invalidate()
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)

    # -- reading -------------------------------------------------------------------------------
    def search(self, query: str, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best (rowid, BM25 score) for the query's words OR-ed, best first.

        The terms are ``keyword_terms.query_terms``: the words FTS5 would be given, analysed; a
        word the analyzer splits (``foo_bar``) counts as its parts, where FTS5 would ask for the
        phrase."""
        if self._index is None or limit <= 0:
            return []
        terms = query_terms(query)
        if not terms:
            return []
        should = tantivy.Occur.Should
        q = tantivy.Query.boolean_query(
            [(should, tantivy.Query.term_query(self._schema, "text", t)) for t in terms]
        )
        searcher = self._index.searcher()
        found = searcher.search(q, limit, count=False).hits
        rowids = searcher.fast_field_values("rowid", [address for _, address in found])
        pairs = zip(rowids, found, strict=True)
        return [(int(r), float(s)) for r, (s, _) in pairs if isinstance(r, int)]

    def count(self, rowids: Iterable[int]) -> int:
        """How many of ``rowids`` the index holds (live, not deleted)."""
        keys = list(rowids)
        if self._index is None or not keys:
            return 0
        q = tantivy.Query.term_set_query(self._schema, "rowid", keys)
        return len(self._index.searcher().search(q, len(keys), count=False).hits)
