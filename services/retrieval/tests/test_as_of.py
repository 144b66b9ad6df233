"""Memory as of a date (docs/as-of.md): note versions kept across re-indexing, searched and read
as they stood, forgotten with their note; on both backends, over real gRPC, real embeddings."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest
from google.protobuf import struct_pb2

from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.testing.retrieval import write

from .test_service import index, search

if TYPE_CHECKING:  # the async stub type exists only in the .pyi
    Stub = retrieval_pb2_grpc.RetrievalServiceAsyncStub


def _dated(path: Path, day: str) -> None:
    """Sets a file's modification time to noon UTC of ``day``."""
    when = dt.datetime.fromisoformat(f"{day}T12:00:00+00:00").timestamp()
    os.utime(path, (when, when))


def _boiler(root: Path, price: str, day: str) -> None:
    path = write(
        root,
        "Boiler.md",
        f"""
        # Boiler
        The annual boiler service with Hearth & Co costs {price}, booked every October.
        """,
    )
    _dated(path, day)


@pytest.fixture
async def history(retrieval: Stub, tmp_path: Path) -> Path:
    """A vault indexed twice: the boiler note changed its price in March, a bike note came in
    March, and the garden note was deleted before the second run."""
    root = tmp_path / "history-vault"
    _boiler(root, "£90", "2026-01-10")
    _dated(
        write(root, "Garden.md", "# Garden\nThe shed key hangs behind the blue door."), "2026-01-05"
    )
    first = await index(retrieval, root)
    assert first.added == 2
    _boiler(root, "£120", "2026-03-01")
    _dated(write(root, "Bike.md", "# Bike\nThe bike lock code is 4471."), "2026-03-02")
    (root / "Garden.md").unlink()
    second = await index(retrieval, root)
    assert (second.added, second.updated, second.removed) == (1, 1, 1)
    return root


async def test_a_search_as_of_a_date_reads_the_versions_that_held_then(
    retrieval: Stub, history: Path
) -> None:
    then = await search(retrieval, "boiler service cost", as_of="2026-02-01")
    boiler = [i for i in then if i.citation == "[[Boiler]]"]
    assert boiler and "£90" in boiler[0].text and "£120" not in boiler[0].text
    assert boiler[0].provenance.episode_id.endswith("@v1")
    assert not any(i.citation == "[[Bike]]" for i in then)  # written in March
    shed = await search(retrieval, "where does the shed key hang", as_of="2026-02-01")
    assert shed and shed[0].citation == "[[Garden]]"  # deleted since, held then

    now = await search(retrieval, "boiler service cost")
    assert "£120" in next(i for i in now if i.citation == "[[Boiler]]").text
    assert not any(i.citation == "[[Garden]]" for i in await search(retrieval, "shed key"))
    later = await search(retrieval, "bike lock code", as_of="2026-03-05")
    assert later[0].citation == "[[Bike]]"
    assert "£120" in next(i for i in later if i.citation == "[[Boiler]]").text
    assert not await search(retrieval, "boiler service cost", as_of="2025-12-31")


async def test_get_note_reads_an_earlier_version_and_lists_them_all(
    retrieval: Stub, history: Path
) -> None:
    then = await search(retrieval, "boiler service cost", as_of="2026-02-01")
    old_id = next(i for i in then if i.citation == "[[Boiler]]").provenance.episode_id
    old = await retrieval.GetNote(retrieval_pb2.GetNoteRequest(episode_id=old_id))
    assert "£90" in old.text and old.title == "Boiler" and old.episode_id == old_id
    assert [v.number for v in old.versions] == [1, 2]
    first, current = old.versions
    assert first.episode_id == old_id and first.valid_from.startswith("2026-01-10")
    assert first.valid_to.startswith("2026-03-01") and current.valid_from.startswith("2026-03-01")
    assert current.valid_to == "" and "@" not in current.episode_id
    live = await retrieval.GetNote(retrieval_pb2.GetNoteRequest(episode_id=current.episode_id))
    assert "£120" in live.text and len(live.versions) == 2


async def test_unchanged_and_full_runs_make_no_version(retrieval: Stub, history: Path) -> None:
    await index(retrieval, history)
    await index(retrieval, history, full=True)
    now = await search(retrieval, "boiler service cost")
    note_id = next(i for i in now if i.citation == "[[Boiler]]").provenance.episode_id
    note = await retrieval.GetNote(retrieval_pb2.GetNoteRequest(episode_id=note_id))
    assert [v.number for v in note.versions] == [1, 2]


async def test_forgetting_a_note_forgets_its_versions(retrieval: Stub, history: Path) -> None:
    receipt = await retrieval.DeleteNote(retrieval_pb2.DeleteNoteRequest(note="Boiler"))
    versions = [c for c in receipt.counts if c.what.startswith("kept versions")]
    assert versions and versions[0].removed == 3 and versions[0].remaining == 0
    assert all(c.remaining == 0 for c in receipt.counts)
    then = await search(retrieval, "boiler service cost", as_of="2026-02-01")
    assert not any(i.citation == "[[Boiler]]" for i in then)


@pytest.mark.parametrize(
    ("as_of", "says"),
    [("2026-13-01", "YYYY-MM-DD"), ("yesterday", "YYYY-MM-DD"), ("2999-01-01", "after today")],
)
async def test_a_bad_as_of_is_refused_with_what_to_fix(
    retrieval: Stub, as_of: str, says: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await search(retrieval, "sailing", as_of=as_of)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in (refused.value.details() or "")


async def test_record_reads_as_of_a_day_before_a_record_was_written_do_not_list_it(
    retrieval: Stub,
) -> None:
    fields = struct_pb2.Struct()
    fields.update({"title": "Chase the deposit", "status": "open", "entities": ["graham"]})
    person = struct_pb2.Struct()
    person.update({"name": "Graham Pearce", "kind": "person"})
    await retrieval.UpsertRecords(
        retrieval_pb2.UpsertRecordsRequest(
            records=[
                retrieval_pb2.Record(collection="inbox", id="t1", fields=fields),
                retrieval_pb2.Record(collection="entities", id="graham", fields=person),
            ]
        )
    )
    yesterday = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)).isoformat()
    today = dt.datetime.now(dt.UTC).date().isoformat()
    then = await retrieval.ListInbox(retrieval_pb2.ListInboxRequest(as_of=yesterday))
    now = await retrieval.ListInbox(retrieval_pb2.ListInboxRequest(as_of=today))
    assert [r.id for r in then.items] == [] and [r.id for r in now.items] == ["t1"]
    people = await retrieval.QueryRecords(
        retrieval_pb2.QueryRecordsRequest(collection="entities", as_of=yesterday)
    )
    assert not people.records
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await retrieval.PersonTimeline(
            retrieval_pb2.PersonTimelineRequest(entity_id="graham", as_of=yesterday)
        )
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    timeline = await retrieval.PersonTimeline(
        retrieval_pb2.PersonTimelineRequest(entity_id="graham", as_of=today)
    )
    assert [e.item.id for e in timeline.entries] == ["inbox:t1"]
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await retrieval.QueryRecords(
            retrieval_pb2.QueryRecordsRequest(collection="inbox", as_of="2999-01-01")
        )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "after today" in (refused.value.details() or "")
