"""The embedded store's chunk catalogue filters exactly as the SQL filter does, and stays
equal to one rebuilt from SQLite through writes, deletes and reused rowids."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.retrieval.store.base import SearchFilter
from memex.retrieval.store.embedded import EmbeddedStore, note_queries, search_queries
from memex.retrieval.store.embedded.catalog import ChunkCatalog
from memex.testing.retrieval import DIM, axis, note

FILTERS = [
    SearchFilter(),
    SearchFilter(include_sensitive=False),
    SearchFilter(date_from="2024-02-01"),
    SearchFilter(date_to="2024-02-28", include_sensitive=False),
    SearchFilter(date_from="2024-02-01", date_to="2024-02-01"),
    SearchFilter(tags=("garden",)),
    SearchFilter(tags=("garden", "money")),
    SearchFilter(tags=("nowhere",)),
]

NOTES = [
    note("Allotment", [("plot fee", axis(0)), ("water", axis(1))], tags=("garden", "money")),
    note("Diary", [("a day", axis(2))], date="2024-02-01", sensitive=True),
    note("Seeds", [("beans", axis(3)), ("peas", axis(4)), ("leeks", axis(5))], tags=("garden",)),
    note("Undated", [("no date", axis(6))], date=""),
    note("Budget", [("rent", axis(7))], date="2024-03-15", tags=("money",)),
]


async def _store(path: Path) -> EmbeddedStore:
    store = await EmbeddedStore.open(path, DIM)
    for n in NOTES:
        await store.upsert_note("t", n)
    return store


def _with_note_ids(store: EmbeddedStore) -> list[SearchFilter]:
    some = frozenset({NOTES[0].id, NOTES[1].id, "no-such-note"})
    return [
        *FILTERS,
        SearchFilter(note_ids=some),
        SearchFilter(note_ids=some, include_sensitive=False),
        SearchFilter(note_ids=frozenset()),
    ]


async def _assert_matches_sql(store: EmbeddedStore, tenant: str = "t") -> None:
    """The live catalogue, one rebuilt from SQLite, and the SQL filter all agree."""

    def check() -> None:
        conn = store._conn
        live = store._indexes.catalog(tenant)
        rebuilt = ChunkCatalog(
            note_queries.catalog_notes(conn, tenant), note_queries.catalog_chunks(conn, tenant)
        )
        # Every tenant's rowids, and rowids of no chunk at all.
        everything = [r[0] for r in conn.execute("SELECT rowid FROM chunks")]
        probe = [*everything, max(everything, default=0) + 100, -1]
        for flt in _with_note_ids(store):
            expected = sorted(search_queries.chunk_candidates(conn, tenant, flt))
            assert live.candidates(flt) == expected, flt
            assert rebuilt.candidates(flt) == expected, flt
            assert live.passing(probe, flt) == set(expected), flt
        for n in note_queries.catalog_notes(conn, tenant):
            assert live.note(n.id) == n
        owners = {
            r[0]: r[1]
            for r in conn.execute("SELECT id, note_id FROM chunks WHERE tenant = ?", (tenant,))
        }
        mine = {
            r[0]: r[1]
            for r in conn.execute("SELECT rowid, id FROM chunks WHERE tenant = ?", (tenant,))
        }
        assert live.ids(probe) == rebuilt.ids(probe) == mine
        asked = [*owners, "no-such-chunk", "", "x" * 80]
        expected_notes = {cid: live.note(nid) for cid, nid in owners.items()}
        assert live.notes_of(asked) == rebuilt.notes_of(asked) == expected_notes
        assert live.share(SearchFilter()) == (1.0 if owners else 0.0)

    await store._run(check)


async def test_the_catalogue_filters_as_sql_does(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        await _assert_matches_sql(store)
        assert store._indexes.catalog("t").note("no-such-note") is None
    finally:
        await store.close()


async def test_the_catalogue_follows_rewrites_and_deletes(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        await _assert_matches_sql(store)  # built before the writes below
        # A rewrite that changes the note's metadata and its number of chunks.
        seeds = note("Seeds", [("beans", axis(3))], tags=("money",), sensitive=True, version="2")
        await store.upsert_note("t", seeds)
        await _assert_matches_sql(store)
        # Deleting the newest note frees the largest rowid, which SQLite then reuses.
        await store.delete_notes("t", [NOTES[-1].id])
        await _assert_matches_sql(store)
        await store.upsert_note("t", note("New", [("reused", axis(7))], tags=("garden",)))
        await _assert_matches_sql(store)
        await store.delete_notes("t", [n.id for n in NOTES])
        await _assert_matches_sql(store)
    finally:
        await store.close()


async def test_a_note_made_sensitive_leaves_the_default_searches(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    quiet = SearchFilter(include_sensitive=False)
    try:
        before = await store.search_chunks_vector("t", axis(0), 1, quiet)
        assert [h.id for h in before] == [NOTES[0].chunks[0].id]
        hidden = note(
            "Allotment", [("plot fee", axis(0)), ("water", axis(1))], sensitive=True, version="2"
        )
        await store.upsert_note("t", hidden)
        owners = {h.id for h in await store.search_chunks_vector("t", axis(0), 10, quiet)}
        owners |= {h.id for h in await store.search_chunks_keyword("t", "plot fee", 10, quiet)}
        assert not owners & {c.id for c in hidden.chunks}
    finally:
        await store.close()


async def test_a_failed_index_update_drops_the_catalogue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await _store(tmp_path)
    try:
        await _assert_matches_sql(store)

        def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("disk full")

        monkeypatch.setattr(ChunkCatalog, "replace_note", broken)
        with pytest.raises(RuntimeError):
            await store.upsert_note("t", note("Late", [("late", axis(2))]))
        assert "t" not in store._indexes.catalogs
        monkeypatch.undo()
        await _assert_matches_sql(store)  # rebuilt from SQLite, with the committed note
    finally:
        await store.close()


async def test_tenants_have_their_own_catalogues(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        await store.upsert_note("u", note("Other", [("other", axis(0))], tags=("garden",)))
        await _assert_matches_sql(store, "u")
        await _assert_matches_sql(store, "t")
        await store.delete_tenant("u")
        assert "u" not in store._indexes.catalogs
    finally:
        await store.close()
