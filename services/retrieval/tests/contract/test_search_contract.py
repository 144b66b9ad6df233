"""Contract: keyword and vector channels with filters; records and the record query language."""

from __future__ import annotations

import pytest

from memex.retrieval.store.base import Condition, SearchFilter, Sort, Store
from memex.testing.retrieval import axis, note, record, vec

ALL = SearchFilter()


async def _corpus(store: Store) -> dict[str, str]:
    notes = [
        note("Old", [("garden tomatoes", vec(1, 0.2))], date="2020-05-01", tags=("garden",)),
        note("New", [("garden roses", vec(1, 0.1))], date="2024-06-01", tags=("garden", "home")),
        note("Secret", [("garden diary", vec(1, 0))], date="2024-07-01", sensitive=True),
        note("Other", [("taxes and forms", vec(0, 1))], date="2024-07-02"),
    ]
    for n in notes:
        await store.upsert_note("t1", n)
    return {n.title: n.chunks[0].id for n in notes}


async def test_keyword_bm25_ranks_and_or_semantics(store: Store) -> None:
    ids = await _corpus(store)
    hits = await store.search_chunks_keyword("t1", "tomatoes garden", 10, ALL)
    assert hits[0].id == ids["Old"]
    assert {h.id for h in hits} == {ids["Old"], ids["New"], ids["Secret"]}
    assert all(h.score > 0 for h in hits)
    assert hits == sorted(hits, key=lambda h: (-h.score, h.id))


async def test_keyword_ranking_ignores_other_tenants(store: Store) -> None:
    """BM25 statistics are the tenant's own: another tenant writing many notes that hold a query
    word changes neither the scores nor the order of this tenant's keyword hits."""
    notes = [
        note("Boat", [("alice sold the boat at the harbour", vec(1, 0))]),
        note("Harbour", [("the harbour was quiet; a boat came in late", vec(1, 0.1))]),
        note("Garden", [("tomatoes and a boat shaped planter", vec(0, 1))]),
    ]
    for n in notes:
        await store.upsert_note("a", n)
    query = "boat harbour"
    before = await store.search_chunks_keyword("a", query, 10, ALL)
    assert len(before) == 3
    for i in range(40):
        await store.upsert_note("b", note(f"Log {i}", [(f"harbour log entry {i}", vec(0, 1))]))
    after = await store.search_chunks_keyword("a", query, 10, ALL)
    assert [h.id for h in after] == [h.id for h in before]
    assert [h.score for h in after] == pytest.approx([h.score for h in before], rel=1e-9)
    # The other tenant's words really do weigh there: "harbour" is common in b, rare in a.
    theirs = await store.search_chunks_keyword("b", "harbour", 50, ALL)
    assert len(theirs) == 40
    assert theirs[0].score < before[0].score


async def test_keyword_search_matches_the_forms_of_a_word(store: Store) -> None:
    """Both backends stem and fold diacritics (tantivy analyses; Weaviate, which does not stem,
    is given the analysed terms): a query finds the other forms of its words."""
    notes = [
        note("Boiler", [("both boilers were serviced on Tuesday", vec(1, 0))]),
        note("Shoes", [("new running shoes for the half", vec(0, 1))]),
        note("Cafe", [("coffee at the Café Nero by the station", vec(1, 1))]),
    ]
    for n in notes:
        await store.upsert_note("t1", n)
    for query, title in [("boiler service", "Boiler"), ("runs", "Shoes"), ("cafe", "Cafe")]:
        hits = await store.search_chunks_keyword("t1", query, 10, ALL)
        wanted = next(n for n in notes if n.title == title).chunks[0].id
        assert [h.id for h in hits] == [wanted], query


async def test_keyword_query_syntax_is_inert(store: Store) -> None:
    ids = await _corpus(store)
    for query in ['taxes" OR *', "taxes AND NOT(", "taxes:{}^~", "NEAR(taxes)"]:
        hits = await store.search_chunks_keyword("t1", query, 10, ALL)
        assert ids["Other"] in {h.id for h in hits}, query
    assert await store.search_chunks_keyword("t1", "  ?! ", 10, ALL) == []


async def test_filters_apply_to_both_channels(store: Store) -> None:
    ids = await _corpus(store)
    window = SearchFilter(date_from="2024-01-01", date_to="2024-06-30")
    for hits in (
        await store.search_chunks_keyword("t1", "garden", 10, window),
        await store.search_chunks_vector("t1", vec(1, 0), 10, window),
    ):
        assert [h.id for h in hits] == [ids["New"]]
    safe = SearchFilter(include_sensitive=False)
    assert ids["Secret"] not in {
        h.id for h in await store.search_chunks_vector("t1", vec(1, 0), 10, safe)
    }
    tagged = SearchFilter(tags=("garden", "home"))
    assert [h.id for h in await store.search_chunks_keyword("t1", "garden", 10, tagged)] == [
        ids["New"]
    ]
    old_id = (await store.get_chunks("t1", [ids["Old"]]))[ids["Old"]].note.id
    only = SearchFilter(note_ids=frozenset({old_id}))
    assert [h.id for h in await store.search_chunks_vector("t1", vec(0, 1), 10, only)] == [
        ids["Old"]
    ]


async def test_filtered_vector_search_still_fills_k(store: Store) -> None:
    for i in range(60):
        tags = ("rare",) if i % 20 == 0 else ()
        await store.upsert_note("t1", note(f"N{i}", [(f"text {i}", vec(1, i / 60))], tags=tags))
    hits = await store.search_chunks_vector("t1", vec(0, 1), 3, SearchFilter(tags=("rare",)))
    assert len(hits) == 3


async def test_records_roundtrip_and_sources(store: Store) -> None:
    alice = record("entities", "alice", "Alice Smith, my sister", vector=axis(0), date="2020-01-01")
    lunch = record(
        "events",
        "e1",
        "Lunch with Alice",
        entity_refs=("alice",),
        date="2024-03-01",
        source="records/events.jsonl",
    )
    assert await store.upsert_records("t1", [alice, lunch]) == 2
    got = await store.get_records("t1", ["entities:alice", "events:e1", "events:zz"])
    assert set(got) == {"entities:alice", "events:e1"}
    assert got["events:e1"].fields["text"] == "Lunch with Alice"
    assert got["events:e1"].entity_refs == ("alice",)
    assert await store.record_sources("t1") == {
        "api": {"entities:alice"},
        "records/events.jsonl": {"events:e1"},
    }
    assert [r.ref for r in await store.records_about("t1", "alice")] == ["events:e1"]
    assert await store.delete_records("t1", "events", ["e1", "nope"]) == 1
    assert await store.records_about("t1", "alice") == []
    assert await store.get_records("t2", ["entities:alice"]) == {}


async def test_record_channels_respect_collections(store: Store) -> None:
    await store.upsert_records(
        "t1",
        [
            record(
                "beliefs",
                "b1",
                "coffee helps me focus",
                vector=axis(0),
                fields={"status": "active"},
            ),
            record("observations", "o1", "coffee bought daily", vector=axis(0)),
        ],
    )
    only_beliefs = SearchFilter(collections=("beliefs",))
    assert [h.id for h in await store.search_records_keyword("t1", "coffee", 5, only_beliefs)] == [
        "beliefs:b1"
    ]
    assert [h.id for h in await store.search_records_vector("t1", axis(0), 5, only_beliefs)] == [
        "beliefs:b1"
    ]
    assert await store.search_records_keyword("t1", "coffee", 5, SearchFilter()) == []


async def test_query_records_filter_sort_limit(store: Store) -> None:
    await store.upsert_records(
        "t1",
        [
            record("inbox", "i1", "pay rent", fields={"status": "open", "priority": 2}),
            record("inbox", "i2", "call mum", fields={"status": "done", "priority": 1}),
            record("inbox", "i3", "book dentist", fields={"status": "open", "priority": 3}),
            record("events", "x", "other collection", fields={"status": "open"}),
        ],
    )
    rows = await store.query_records(
        "t1", "inbox", [Condition("status", "eq", "open")], Sort("priority", descending=True), 10
    )
    assert [r.id for r in rows] == ["i3", "i1"]
    rows = await store.query_records("t1", "inbox", [Condition("priority", "lte", 2)], None, 1)
    assert [r.id for r in rows] == ["i1"]
    rows = await store.query_records(
        "t1", "inbox", [Condition("text", "contains", "RENT")], None, 10
    )
    assert [r.id for r in rows] == ["i1"]
