"""Contract: notes, chunks, fingerprints, the link graph, mentions and tenancy."""

from __future__ import annotations

from memex.retrieval.store.base import SearchFilter, Store
from memex.testing.retrieval import axis, note, vec

ALL = SearchFilter()


async def test_upsert_then_read_back(store: Store) -> None:
    n = note("Alpha", [("first chunk about apples", axis(0)), ("second about pears", axis(1))])
    await store.upsert_note("t1", n)
    fingerprints = await store.note_fingerprints("t1")
    assert fingerprints == {"Alpha.md": (n.id, n.fingerprint)}
    chunks = await store.get_chunks("t1", [c.id for c in n.chunks] + ["nope"])
    assert set(chunks) == {c.id for c in n.chunks}
    view = chunks[n.chunks[0].id]
    assert view.text == "first chunk about apples"
    assert view.note.title == "Alpha"
    assert view.note.date == "2024-01-01"
    owners = await store.chunk_notes("t1", [c.id for c in n.chunks] + ["nope"])
    assert set(owners) == {c.id for c in n.chunks}
    assert owners[n.chunks[1].id] == view.note
    metas = await store.get_notes("t1", [n.id])
    assert metas[n.id].path == "Alpha.md"
    stats = await store.stats("t1")
    assert (stats.notes, stats.chunks) == (1, 2)


async def test_replacing_a_note_drops_its_old_chunks(store: Store) -> None:
    old = note("Alpha", [("one apples", axis(0)), ("two apples", axis(1)), ("three", axis(2))])
    await store.upsert_note("t1", old)
    new = note("Alpha", [("only bananas now", axis(3))], version="2")
    await store.upsert_note("t1", new)
    assert (await store.stats("t1")).chunks == 1
    assert await store.search_chunks_keyword("t1", "apples", 10, ALL) == []
    hits = await store.search_chunks_vector("t1", axis(1), 10, ALL)
    assert [h.id for h in hits] == [new.chunks[0].id]
    assert (await store.note_fingerprints("t1"))["Alpha.md"][1] == new.fingerprint


async def test_delete_removes_everything(store: Store) -> None:
    a = note("Alpha", [("apples", axis(0))], links=("Beta",), mentions=("ent1",))
    b = note("Beta", [("bananas", axis(1))])
    await store.upsert_note("t1", a)
    await store.upsert_note("t1", b)
    assert await store.delete_notes("t1", [a.id, "unknown"]) == 1
    assert await store.search_chunks_keyword("t1", "apples", 10, ALL) == []
    assert [h.id for h in await store.search_chunks_vector("t1", axis(0), 10, ALL)] == [
        b.chunks[0].id
    ]
    assert await store.chunks_mentioning("t1", ["ent1"], 10, ALL) == []
    assert (await store.linked_notes("t1", [b.id])).get(b.id, set()) == set()
    stats = await store.stats("t1")
    assert (stats.notes, stats.chunks, stats.links, stats.mentions) == (1, 1, 0, 0)


async def test_tenants_are_apart(store: Store) -> None:
    await store.upsert_note("t1", note("Alpha", [("apples", axis(0))]))
    await store.upsert_note("t2", note("Alpha", [("apricots", axis(0))], version="x"))
    assert [h.id for h in await store.search_chunks_keyword("t2", "apples", 10, ALL)] == []
    assert len(await store.search_chunks_vector("t1", axis(0), 10, ALL)) == 1
    assert (await store.note_fingerprints("t2"))["Alpha.md"][1] == "Alpha.md:x"
    await store.delete_tenant("t1")
    assert await store.note_fingerprints("t1") == {}
    assert len(await store.note_fingerprints("t2")) == 1
    assert await store.note_fingerprints("never-seen") == {}


async def test_links_both_directions_and_keys(store: Store) -> None:
    a = note("Alpha", [("a", axis(0))], links=("Beta", "Missing"))
    b = note("Beta", [("b", axis(1))], links=("Gamma",))
    c = note("Gamma", [("c", axis(2))])
    for n in (a, b, c):
        await store.upsert_note("t1", n)
    neighbours = await store.linked_notes("t1", [b.id, a.id])
    assert neighbours[b.id] == {a.id, c.id}
    assert neighbours[a.id] == {b.id}
    by_key = await store.notes_by_key("t1", ["gamma", "nobody"])
    assert [m.id for m in by_key["gamma"]] == [c.id]
    assert "nobody" not in by_key


async def test_mentions_and_record_notes(store: Store) -> None:
    a = note("Alice", [("Alice likes tea", axis(0))], record_keys=("entities:alice",))
    b = note("Diary", [("met Alice and Bob", axis(1))], mentions=("alice", "bob"))
    await store.upsert_note("t1", a)
    await store.upsert_note("t1", b)
    hits = await store.chunks_mentioning("t1", ["alice", "bob"], 10, ALL)
    assert [h.id for h in hits] == [b.chunks[0].id]
    assert hits[0].score == 2
    await store.set_entity_mentions("t1", "alice", [a.chunks[0].id, b.chunks[0].id])
    hits = await store.chunks_mentioning("t1", ["alice"], 10, ALL)
    assert {h.id for h in hits} == {a.chunks[0].id, b.chunks[0].id}
    found = await store.notes_for_records("t1", ["entities:alice", "entities:zed"])
    assert found["entities:alice"].title == "Alice"
    assert "entities:zed" not in found


async def test_meta_roundtrip(store: Store) -> None:
    assert await store.get_meta("t1", "model") is None
    await store.set_meta("t1", "model", "minilm")
    await store.set_meta("t1", "model", "minilm-2")
    assert await store.get_meta("t1", "model") == "minilm-2"
    assert await store.get_meta("t2", "model") is None


async def test_vector_nearest_first(store: Store) -> None:
    n = note("Alpha", [("x", vec(1, 0.1)), ("y", vec(0.1, 1)), ("z", vec(-1, 0))])
    await store.upsert_note("t1", n)
    hits = await store.search_chunks_vector("t1", vec(1, 0), 2, ALL)
    assert [h.id for h in hits] == [n.chunks[0].id, n.chunks[1].id]
    assert 0.99 < hits[0].score <= 1.0001


async def test_note_chunks_in_order(store: Store) -> None:
    texts = [(f"chunk number {i}", axis(i % 4)) for i in range(5)]
    n = note("Alpha", texts)
    await store.upsert_note("t1", note("Beta", [("other", axis(1))]))
    await store.upsert_note("t1", n)
    chunks = await store.note_chunks("t1", n.id)
    assert [c.ordinal for c in chunks] == [0, 1, 2, 3, 4]
    assert [c.text for c in chunks] == [t for t, _ in texts]
    assert all(c.note.id == n.id and c.note.title == "Alpha" for c in chunks)
    assert await store.note_chunks("t1", "unknown") == []
    assert await store.note_chunks("t2", n.id) == []
    await store.delete_notes("t1", [n.id])
    assert await store.note_chunks("t1", n.id) == []
