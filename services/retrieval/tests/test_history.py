"""The version ledger and the memory as of a day, below the service (docs/as-of.md): records and
beliefs as they were, crash resumption, and what makes a version; a real embedded store, a
fixed clock and a fixed embedder (the service-level tests are in test_as_of.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memex.retrieval.history.archive import Archive
from memex.retrieval.history.as_of import MemoryAsOf
from memex.retrieval.history.versions import (
    RECORD_LEDGER,
    Ledger,
    Version,
    on_remove,
    on_write,
)
from memex.retrieval.store.base import SearchFilter, Sort
from memex.retrieval.store.embedded.store import EmbeddedStore
from memex.testing.retrieval import DIM, record, vec

T = "me"


class Clock:
    """The archive's "now", moved by the test."""

    def __init__(self) -> None:
        self.now = "2026-01-01T10:00:00Z"

    def __call__(self) -> str:
        return self.now


async def _embed(texts: list[str]) -> list[list[float]]:
    return [vec(1.0, 0.5)] * len(texts)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EmbeddedStore]:
    opened = await EmbeddedStore.open(tmp_path / "store", DIM)
    yield opened
    await opened.close()


def _belief(statement: str, status: str = "active") -> object:
    return record(
        "beliefs",
        "b1",
        statement,
        fields={"statement": statement, "status": status},
        vector=vec(1.0, 0.5),
    )


async def _write(store: EmbeddedStore, archive: Archive, *records: object) -> None:
    await archive.before_records(T, records)  # type: ignore[arg-type]
    await store.upsert_records(T, records)  # type: ignore[arg-type]


async def _as_of(store: EmbeddedStore, day: str) -> MemoryAsOf:
    return await MemoryAsOf.open(store, T, dt.date.fromisoformat(day))


async def test_records_and_beliefs_read_as_they_were_on_each_day(store: EmbeddedStore) -> None:
    clock = Clock()
    archive = Archive(store, _embed, lambda: "fixed", clock)
    await _write(store, archive, _belief("I prefer the morning swim"))
    clock.now = "2026-03-01T09:00:00Z"
    await _write(store, archive, _belief("I prefer the evening swim", "contested"))
    clock.now = "2026-04-01T09:00:00Z"
    await archive.before_record_removal(T, ["beliefs:b1"])
    await store.delete_records(T, "beliefs", ["b1"])

    flt = SearchFilter(collections=("beliefs",))
    for day, expected in [
        ("2025-12-31", None),
        ("2026-02-01", "I prefer the morning swim"),
        ("2026-03-15", "I prefer the evening swim"),
        ("2026-04-02", None),
    ]:
        view = await _as_of(store, day)
        hits = await view.search_records_keyword(T, "swim", 10, flt)
        found = await view.get_records(T, [h.id for h in hits])
        statements = [r.fields["statement"] for r in found.values()]
        assert statements == ([expected] if expected else []), day
    # An earlier version keeps its own fields: the belief was contested only from March.
    view = await _as_of(store, "2026-03-15")
    [hit] = await view.search_records_vector(T, vec(1.0, 0.5), 10, flt)
    assert (await view.get_records(T, [hit.id]))[hit.id].fields["status"] == "contested"
    ledger = await Ledger.load(store, T, RECORD_LEDGER)
    assert [(v.number, v.valid_from, v.valid_to) for v in ledger.versions("beliefs:b1")] == [
        (1, "2026-01-01T10:00:00Z", "2026-03-01T09:00:00Z"),
        (2, "2026-03-01T09:00:00Z", "2026-04-01T09:00:00Z"),
    ]


async def test_writing_the_same_record_again_makes_no_version(store: EmbeddedStore) -> None:
    clock = Clock()
    archive = Archive(store, _embed, lambda: "fixed", clock)
    await _write(store, archive, _belief("I prefer the morning swim"))
    clock.now = "2026-02-01T00:00:00Z"
    await _write(store, archive, _belief("I prefer the morning swim"))
    ledger = await Ledger.load(store, T, RECORD_LEDGER)
    assert [v.number for v in ledger.versions("beliefs:b1")] == [1]


def test_a_write_closes_the_open_version_and_opens_the_next() -> None:
    ledger = Ledger([Version("n1", 1, "aaa", "2026-01-10T12:00:00Z")])
    now = "2026-03-05T00:00:00Z"
    same = on_write(ledger, "n1", "aaa", "2026-03-01T12:00:00Z", now=now)
    assert same.closed is None and same.opened is None
    change = on_write(ledger, "n1", "bbb", "2026-03-01T12:00:00Z", now=now)
    assert change.closed == Version("n1", 1, "aaa", "2026-01-10T12:00:00Z", "2026-03-01T12:00:00Z")
    assert change.opened == Version("n1", 2, "bbb", "2026-03-01T12:00:00Z")
    # A run killed after the ledger write but before the note's: the next run finds the new
    # version open with this content, so nothing is archived twice.
    ledger.record(*(v for v in (change.closed, change.opened) if v))
    again = on_write(ledger, "n1", "bbb", "2026-03-01T12:00:00Z", now=now)
    assert again.closed is None and again.opened is None


def test_times_never_run_backwards_or_into_the_future() -> None:
    ledger = Ledger([Version("n1", 1, "aaa", "2026-01-10T12:00:00Z")])
    # A file restored with an older modification time than the version it replaces.
    change = on_write(ledger, "n1", "bbb", "2025-06-01T00:00:00Z", now="2026-03-05T00:00:00Z")
    assert change.closed is not None and change.opened is not None
    assert change.closed.valid_to == change.opened.valid_from == "2026-01-10T12:00:00Z"
    # A modification time in the future is clamped to the run.
    later = on_write(Ledger([]), "n2", "ccc", "2030-01-01T00:00:00Z", now="2026-03-05T00:00:00Z")
    assert later.opened is not None and later.opened.valid_from == "2026-03-05T00:00:00Z"
    # A live version with no entry (indexed before versions were kept) is closed as version 1.
    gone = on_remove(
        Ledger([]), "n3", now="2026-03-05T00:00:00Z", fallback_from="2024-02-02T00:00:00Z"
    )
    assert (gone.number, gone.valid_from, gone.valid_to) == (
        1,
        "2024-02-02T00:00:00Z",
        "2026-03-05T00:00:00Z",
    )


def _task(rid: str, title: str, day: str, status: str = "open") -> object:
    return record(
        "inbox",
        rid,
        title,
        fields={"title": title, "status": status, "date": day},
        date=day,
        entity_refs=("graham",),
        vector=vec(1.0, 0.5),
    )


async def test_record_reads_as_of_a_day_list_each_record_as_it_stood(
    store: EmbeddedStore,
) -> None:
    """QueryRecords, ListInbox and PersonTimeline as of a day (records.py) read through these:
    each record is the version that held then, under its own id, sorted and capped as one list."""
    clock = Clock()
    archive = Archive(store, _embed, lambda: "fixed", clock)
    entity = record("entities", "graham", "Graham", fields={"name": "Graham"}, vector=vec(1.0))
    await _write(store, archive, entity, _task("t1", "Call Graham", "2026-02-10"))
    await _write(store, archive, _task("t2", "Chase the deposit", "2026-02-01"))
    clock.now = "2026-03-01T09:00:00Z"
    await _write(store, archive, _task("t1", "Call Graham", "2026-02-10", status="done"))
    await _write(store, archive, _task("t3", "Send meter readings", "2026-01-20"))
    await _write(store, archive, record("entities", "graham", "G", fields={"name": "G. Pearce"}))

    view = await _as_of(store, "2026-02-15")
    listed = await view.query_records(T, "inbox", (), Sort("date"), 10)
    assert [(r.id, r.fields["status"]) for r in listed] == [("t2", "open"), ("t1", "open")]
    assert [r.id for r in await view.query_records(T, "inbox", (), Sort("date"), 1)] == ["t2"]
    about = await view.records_about(T, "graham")
    assert sorted((r.id, r.fields["status"]) for r in about) == [("t1", "open"), ("t2", "open")]
    then = await view.get_records(T, ["entities:graham"])
    assert then["entities:graham"].id == "graham"
    assert then["entities:graham"].fields["name"] == "Graham"

    now = await store.query_records(T, "inbox", (), Sort("date"), 10)
    assert [(r.id, r.fields["status"]) for r in now] == [
        ("t3", "open"),
        ("t2", "open"),
        ("t1", "done"),
    ]
