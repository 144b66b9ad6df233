"""The retrieval service end to end: real embedding service, real store, in-process gRPC."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from google.protobuf import struct_pb2

from memex.common.v1 import common_pb2
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.testing.retrieval import write

if TYPE_CHECKING:  # the async stub type exists only in the .pyi
    Stub = retrieval_pb2_grpc.RetrievalServiceAsyncStub


async def index(stub: Stub, vault: Path, full: bool = False) -> retrieval_pb2.IndexSummary:
    """Runs IndexVault to the end and returns its summary."""
    last = None
    async for message in stub.IndexVault(
        retrieval_pb2.IndexVaultRequest(vault_path=str(vault), full=full)
    ):
        last = message
    assert last is not None
    assert last.HasField("summary")
    return last.summary


async def search(stub: Stub, text: str, **kw: object) -> list[retrieval_pb2.RetrievedItem]:
    """Search and return the items."""
    reply = await stub.Search(retrieval_pb2.SearchRequest(query=text, **kw))  # type: ignore[arg-type]
    return list(reply.items)


async def test_index_summary_and_skips(retrieval: Stub, vault: Path) -> None:
    summary = await index(retrieval, vault)
    assert summary.added == 6
    skipped = {s.path: s.reason for s in summary.skipped}
    assert skipped["bin.md"] == "binary file"
    assert "latin1.md" not in skipped  # read as Windows-1252, with a warning
    assert "latin1.md: invalid UTF-8 at byte 3; read as Windows-1252" in summary.warnings
    assert skipped["loop"] == "symlink loop"
    assert "not in the allowlist" in skipped["records/secrets.jsonl"]
    assert any("Broken.md" in w and "YAML" in w for w in summary.warnings)
    assert summary.records_upserted == 7
    again = await index(retrieval, vault)
    assert (again.added, again.updated, again.unchanged, again.chunks_embedded) == (0, 0, 6, 0)


async def test_indexing_another_vault_takes_its_place_and_says_so(
    retrieval: Stub, tmp_path: Path
) -> None:
    notes, work = tmp_path / "notes", tmp_path / "work"
    write(notes, "Boat.md", "The canal boat is called Marigold.\n")
    write(work, "Kiln.md", "The kiln fires at 1,240 C.\n")
    assert (await index(retrieval, notes)).added == 1

    replaced = await index(retrieval, work)

    assert (replaced.added, replaced.removed) == (1, 1)
    assert replaced.warnings == [
        f"this memory held the vault {notes}; its 1 notes that {work} does "
        "not have were removed. To keep two vaults, index each as its own tenant (--tenant NAME)"
    ]
    assert [i.citation for i in await search(retrieval, "canal boat kiln")] == ["[[Kiln]]"]


async def test_a_moved_vault_is_indexed_from_its_new_place(retrieval: Stub, tmp_path: Path) -> None:
    write(tmp_path / "notes", "Boat.md", "The canal boat is called Marigold.\n")
    await index(retrieval, tmp_path / "notes")
    (tmp_path / "notes").rename(tmp_path / "moved")

    moved = await index(retrieval, tmp_path / "moved")

    assert (moved.added, moved.removed, moved.unchanged) == (0, 0, 1)
    assert moved.warnings == []


async def test_a_contact_card_of_properties_alone_is_found_and_read(
    retrieval: Stub, tmp_path: Path
) -> None:
    card = "---\ntags: [people]\nphone: 0113 496 0000\nemployer: Fernhill Software\n---\n"
    write(tmp_path / "notes", "Chi Okafor.md", card)
    write(tmp_path / "notes", "Boat.md", "The canal boat is called Marigold.\n")
    await index(retrieval, tmp_path / "notes")

    found = await search(retrieval, "Chi's phone number")

    assert found[0].citation == "[[Chi Okafor]]"
    assert "phone: 0113 496 0000" in found[0].text


async def test_a_note_that_cannot_be_read_is_skipped_and_the_rest_indexed(
    retrieval: Stub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memex.retrieval.ingest import indexer, notes

    root = tmp_path / "odd-vault"
    write(root, "Leap.md", "---\ntitle: Leap\ndate: 2026-02-30\n---\nThe kiln fires at 1,240 C.\n")
    write(root, "Trips.md", "The canal boat is called Marigold.\n")
    write(root, "Cursed.md", "Something memex has a bug reading.\n")
    real_prepare = notes.prepare

    def prepare(rel: str, *args: Any) -> Any:
        if rel == "Cursed.md":
            raise RuntimeError("a bug in the parser")
        return real_prepare(rel, *args)

    monkeypatch.setattr(indexer, "prepare", prepare)
    summary = await index(retrieval, root)
    assert summary.added == 2
    skipped = {s.path: s.reason for s in summary.skipped}
    assert skipped == {"Cursed.md": "could not be read as a note: a bug in the parser"}
    assert any("Leap.md" in w and "2026-02-30" in w for w in summary.warnings)
    found = await search(retrieval, "what is the canal boat called")
    assert any(i.citation == "[[Trips]]" for i in found)


async def test_search_channels_citations_and_sensitivity(retrieval: Stub, vault: Path) -> None:
    await index(retrieval, vault)
    items = await search(retrieval, "sailing with my sister")
    assert items[0].citation in ("[[2024-03-02]]", "[[Alice Smith]]")
    first = items[0]
    assert first.provenance.episode_id
    assert first.provenance.date
    assert {c.channel for c in first.channel_scores} >= {common_pb2.CHANNEL_VECTOR}
    assert first.score > 0
    assert first.fused_score > 0
    assert all(not i.sensitive for i in items)
    health = await search(retrieval, "blood pressure doctor")
    assert all("Health" not in i.provenance.path for i in health)
    health = await search(
        retrieval,
        "blood pressure doctor",
        filters=retrieval_pb2.SearchFilters(include_sensitive=True),
    )
    assert health[0].provenance.path == "private/Health.md"
    assert health[0].sensitive


async def test_graph_channel_finds_mentions(retrieval: Stub, vault: Path) -> None:
    await index(retrieval, vault)
    items = await search(retrieval, "What about Ali?", channels=[common_pb2.CHANNEL_GRAPH])
    paths = {i.provenance.path for i in items}
    assert "journal/2024-03-02.md" in paths
    assert all(c.channel == common_pb2.CHANNEL_GRAPH for i in items for c in i.channel_scores)


async def test_a_note_named_by_an_alias_leads_the_graph_channel(
    retrieval: Stub, tmp_path: Path
) -> None:
    # A vault with no entity records: the people are notes. Naming one by an alias brings its
    # chunks into the graph channel, ahead of notes that merely share the question's words.
    root = tmp_path / "notes"
    write(root, "Siobhan Delorme.md", "---\naliases: [Shiv]\n---\nFriend from pharmacy school.\n")
    write(root, "Gifts.md", "Birthday gifts: a scarf for Irene, a book for Tom.\n")
    await index(retrieval, root)

    graph = await search(retrieval, "When's Shiv's birthday?", channels=[common_pb2.CHANNEL_GRAPH])

    assert [i.citation for i in graph] == ["[[Siobhan Delorme]]"]
    both = await search(retrieval, "When's Shiv's birthday?")
    assert both[0].citation == "[[Siobhan Delorme]]"

    write(root, "Kiln.md", "---\naliases: [the big kiln]\n---\nFires at 1,240 C.\n")
    await index(retrieval, root)
    graph = await search(retrieval, "how hot is the big kiln", channels=[common_pb2.CHANNEL_GRAPH])
    assert graph[0].citation == "[[Kiln]]"


async def test_a_note_is_found_by_its_aliases_and_names_them(retrieval: Stub, vault: Path) -> None:
    # "Alice Smith" has `aliases: [Ali]`, a word its text never uses: the alias is part of what
    # is searched, and comes back for the briefing to say that Ali is Alice.
    await index(retrieval, vault)
    items = await search(retrieval, "Ali", channels=[common_pb2.CHANNEL_KEYWORD])
    alice = [i for i in items if i.provenance.path == "Alice Smith.md"]
    assert alice, [i.provenance.path for i in items]
    assert alice[0].attributes["aliases"] == ["Ali"]


async def test_beliefs_and_filters(retrieval: Stub, vault: Path) -> None:
    await index(retrieval, vault)
    beliefs = await search(retrieval, "sailing", channels=[common_pb2.CHANNEL_BELIEFS])
    assert [i.id for i in beliefs] == ["beliefs:b1"]
    assert beliefs[0].kind == retrieval_pb2.ITEM_KIND_BELIEF
    assert beliefs[0].attributes["status"] == "active"
    both = await search(
        retrieval,
        "sailing",
        channels=[common_pb2.CHANNEL_BELIEFS],
        filters=retrieval_pb2.SearchFilters(include_contested=True),
    )
    assert {i.id for i in both} == {"beliefs:b1", "beliefs:b2"}
    window = retrieval_pb2.SearchFilters(window=common_pb2.TimeWindow(start="2024-03-01"))
    items = await search(retrieval, "tomatoes sailing", filters=window)
    assert items
    assert all(i.provenance.date >= "2024-03-01" for i in items)
    tagged = await search(
        retrieval, "tomatoes", filters=retrieval_pb2.SearchFilters(tags=["gardening"])
    )
    assert {i.provenance.path for i in tagged} == {"projects/Garden.md"}


async def test_edits_deletes_and_renames_leave_nothing_stale(retrieval: Stub, vault: Path) -> None:
    await index(retrieval, vault)
    (vault / "projects" / "Garden.md").rename(vault / "projects" / "Allotment.md")
    write(vault, "journal/2024-03-02.md", "# Saturday\nStayed home and read about volcanoes.\n")
    (vault / "Broken.md").unlink()
    summary = await index(retrieval, vault)
    assert (summary.added, summary.updated, summary.removed) == (1, 1, 2)
    assert all(
        i.provenance.path != "projects/Garden.md" for i in await search(retrieval, "tomatoes")
    )
    sailing = await search(retrieval, "sardines harbour", channels=[common_pb2.CHANNEL_KEYWORD])
    assert sailing == []
    assert (await search(retrieval, "volcanoes"))[0].provenance.path == "journal/2024-03-02.md"


async def test_records_query_timeline_inbox(retrieval: Stub, vault: Path) -> None:
    await index(retrieval, vault)
    inbox = await retrieval.ListInbox(retrieval_pb2.ListInboxRequest())
    assert [r.id for r in inbox.items] == ["i1"]
    people = await retrieval.QueryRecords(
        retrieval_pb2.QueryRecordsRequest(
            collection="entities",
            filter=[
                retrieval_pb2.FieldFilter(
                    field="kind", op="eq", value=struct_pb2.Value(string_value="person")
                )
            ],
            sort="-name",
        )
    )
    assert [r.id for r in people.records] == ["bob", "alice"]
    assert people.records[1].citation == "[[Alice Smith]]"
    assert people.records[0].citation == "entities:bob"
    timeline = await retrieval.PersonTimeline(
        retrieval_pb2.PersonTimelineRequest(entity_id="alice")
    )
    assert timeline.entity.id == "alice"
    ids = [e.item.id for e in timeline.entries]
    assert "events:e1" in ids
    assert any(e.item.provenance.path == "journal/2024-03-02.md" for e in timeline.entries)
    dates = [e.date for e in timeline.entries if e.date]
    assert dates == sorted(dates)


async def test_upsert_and_delete_records_rpc(retrieval: Stub, vault: Path) -> None:
    await index(retrieval, vault)
    fields = struct_pb2.Struct()
    fields.update({"name": "Carol Diaz", "kind": "person"})
    reply = await retrieval.UpsertRecords(
        retrieval_pb2.UpsertRecordsRequest(
            records=[retrieval_pb2.Record(collection="entities", id="carol", fields=fields)]
        )
    )
    assert reply.upserted == 1
    write(vault, "Notes/Meeting.md", "Lunch with Carol Diaz about the garden.\n")
    await index(retrieval, vault)  # the API record survives a re-index of the vault
    timeline = await retrieval.PersonTimeline(
        retrieval_pb2.PersonTimelineRequest(entity_id="carol")
    )
    assert [e.item.provenance.path for e in timeline.entries] == ["Notes/Meeting.md"]
    deleted = await retrieval.DeleteRecords(
        retrieval_pb2.DeleteRecordsRequest(collection="entities", ids=["carol", "nobody"])
    )
    assert deleted.deleted == 1


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (
            retrieval_pb2.QueryRecordsRequest(collection="passwords"),
            grpc.StatusCode.PERMISSION_DENIED,
        ),
        (
            retrieval_pb2.QueryRecordsRequest(
                collection="inbox", filter=[retrieval_pb2.FieldFilter(field="a;drop", op="eq")]
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            retrieval_pb2.QueryRecordsRequest(
                collection="inbox", filter=[retrieval_pb2.FieldFilter(field="status", op="like")]
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
    ],
)
async def test_bad_record_queries(
    retrieval: Stub, request_: retrieval_pb2.QueryRecordsRequest, code: grpc.StatusCode
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await retrieval.QueryRecords(request_)
    assert caught.value.code() == code
    assert caught.value.details()


async def test_bad_input_is_a_clear_error(retrieval: Stub, tmp_path: Path) -> None:
    cases: list[tuple[Any, str]] = [
        (retrieval.Search(retrieval_pb2.SearchRequest(query="  ")), "empty"),
        (retrieval.Search(retrieval_pb2.SearchRequest(query="x", tenant="../etc")), "tenant"),
        (
            retrieval.Search(
                retrieval_pb2.SearchRequest(
                    query="x",
                    filters=retrieval_pb2.SearchFilters(
                        window=common_pb2.TimeWindow(start="yesterday")
                    ),
                )
            ),
            "YYYY-MM-DD",
        ),
        (
            retrieval.PersonTimeline(retrieval_pb2.PersonTimelineRequest(entity_id="zed")),
            "no entity",
        ),
    ]
    for call, words in cases:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call
        assert words in str(caught.value.details())
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await index(retrieval, tmp_path / "missing")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not exist" in str(caught.value.details())


async def test_broken_frontmatter_keeps_its_date_and_sensitivity(
    retrieval: Stub, tmp_path: Path
) -> None:
    vault = tmp_path / "notes"
    # ": " in the title makes the block invalid YAML; its other lines still count.
    write(
        vault,
        "journal/2025-07-19 — Open day.md",
        "---\ntitle: Open day: bring jam\nsensitive: true\n---\nSold rhubarb jam for the pipe fund.\n",
    )
    write(vault, "journal/2025-08-02.md", "Picked the first runner beans of the year.\n")
    summary = await index(retrieval, vault)
    assert any("Open day" in w and "read line by line" in w for w in summary.warnings)
    assert not [i for i in await search(retrieval, "rhubarb jam") if "jam" in i.text]
    [jam] = [
        i
        for i in await search(
            retrieval,
            "rhubarb jam",
            filters=retrieval_pb2.SearchFilters(include_sensitive=True),
        )
        if "jam" in i.text
    ]
    assert jam.sensitive and jam.citation == "[[Open day: bring jam]]"
    assert jam.provenance.date == "2025-07-19"  # the file name's date: the block has none
    [beans] = [i for i in await search(retrieval, "runner beans") if "beans" in i.text]
    assert beans.provenance.date == "2025-08-02"
    assert beans.citation == "[[2025-08-02]]"


async def test_a_title_that_would_break_its_citation_gives_way_to_the_file_name(
    retrieval: Stub, vault: Path
) -> None:
    await index(retrieval, vault)
    [tomatoes] = [i for i in await search(retrieval, "quantum tomatoes") if "quantum" in i.text]
    assert tomatoes.citation == "[[Broken]]"  # its title reads "[unclosed"
