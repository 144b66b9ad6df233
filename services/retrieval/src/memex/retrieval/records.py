"""Records API logic: QueryRecords, PersonTimeline, ListInbox, Upsert/Delete (no gRPC).

The three reads take ``as_of`` (YYYY-MM-DD): they read the memory as it stood at the end of
that day (``history.as_of.MemoryAsOf``, docs/as-of.md), each record as the version that held
then, under its own id."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memex.retrieval.fusion import ChannelHit
from memex.retrieval.history.as_of import MemoryAsOf
from memex.retrieval.ingest.indexer import Indexer
from memex.retrieval.ingest.records_io import build_record, entity_matcher
from memex.retrieval.items import Item, chunk_item, fill_chunk, record_item
from memex.retrieval.store.base import (
    Condition,
    MemoryReader,
    Record,
    SearchFilter,
    Sort,
    Store,
)
from memex.retrieval.store.filters import check_condition, check_field
from memex.shared.dates import parse_as_of
from memex.shared.errors import InvalidArgument, NotFound, PermissionDenied

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
INBOX_DONE = ("done", "archived", "dismissed")


@dataclass
class ResolvedRecord:
    """A record with its citation resolved (``[[Note]]`` when a note stands for it)."""

    record: Record
    citation: str


@dataclass
class Timeline:
    """Everything about one entity, oldest first (undated last)."""

    entity: ResolvedRecord
    entries: list[tuple[str, Item]]


class Records:
    """Structured reads and writes over allowlisted collections."""

    def __init__(
        self,
        store: Store,
        indexer: Indexer,
        collections: Sequence[str],
        sensitive_collections: Sequence[str],
        today: Callable[[], dt.date] = lambda: dt.datetime.now(dt.UTC).date(),
    ) -> None:
        self._store = store
        self._indexer = indexer
        self._collections = tuple(collections)
        self._sensitive = tuple(sensitive_collections)
        self._today = today

    async def _reader(self, tenant: str, as_of: str) -> MemoryReader:
        """The store, or the memory as it stood at the end of ``as_of`` when one is given."""
        if not as_of:
            return self._store
        return await MemoryAsOf.open(self._store, tenant, parse_as_of(as_of, self._today()))

    def check_collection(self, collection: str) -> str:
        """The collection if allowlisted, else PermissionDenied naming the allowed ones."""
        if collection not in self._collections:
            raise PermissionDenied(
                f"collection {collection!r} is not allowlisted: use one of "
                f"{', '.join(self._collections)}"
            )
        return collection

    async def resolve(
        self, tenant: str, records: Sequence[Record], reader: MemoryReader | None = None
    ) -> list[ResolvedRecord]:
        """Attaches citations (the notes ``reader`` holds; the store's by default)."""
        reader = reader or self._store
        notes = await reader.notes_for_records(tenant, [r.ref for r in records])
        return [
            ResolvedRecord(r, f"[[{notes[r.ref].title}]]" if r.ref in notes else r.ref)
            for r in records
        ]

    async def query(
        self,
        tenant: str,
        collection: str,
        conditions: Sequence[Condition],
        sort: str,
        limit: int,
        as_of: str = "",
    ) -> list[ResolvedRecord]:
        """QueryRecords: conditions all hold; ``sort`` is a field, ``-field`` for descending;
        ``as_of``: as the records stood at the end of that day."""
        self.check_collection(collection)
        for condition in conditions:
            check_condition(condition)
        order = None
        if sort:
            descending = sort.startswith("-")
            order = Sort(check_field(sort.lstrip("-")), descending)
        if limit < 0 or limit > MAX_LIMIT:
            raise InvalidArgument(f"limit must be between 0 and {MAX_LIMIT}, got {limit}")
        reader = await self._reader(tenant, as_of)
        rows = await reader.query_records(
            tenant, collection, list(conditions), order, limit or DEFAULT_LIMIT
        )
        return await self.resolve(tenant, rows, reader)

    async def inbox(
        self, tenant: str, limit: int, include_done: bool, as_of: str = ""
    ) -> list[ResolvedRecord]:
        """Inbox items not done, soonest date first (undated last); ``as_of`` as ``query``."""
        conditions = [] if include_done else [Condition("status", "ne", s) for s in INBOX_DONE]
        return await self.query(tenant, "inbox", conditions, "date", limit, as_of)

    async def timeline(self, tenant: str, entity_id: str, limit: int, as_of: str = "") -> Timeline:
        """PersonTimeline: the entity's records and the note chunks mentioning it, by date;
        ``as_of`` as ``query`` (the entity, its records and the notes as they stood then)."""
        if not entity_id:
            raise InvalidArgument("entity_id is empty: give the id of an entities record")
        reader = await self._reader(tenant, as_of)
        ref = f"entities:{entity_id}"
        entity = (await reader.get_records(tenant, [ref])).get(ref)
        if entity is None:
            raise NotFound(f"no entity {entity_id!r}: list them with QueryRecords on entities")
        about = await reader.records_about(tenant, entity_id)
        notes = await reader.notes_for_records(tenant, [r.ref for r in about])
        items = [record_item(r, notes.get(r.ref), [], 0.0) for r in about]
        limit = min(limit or DEFAULT_LIMIT * 4, MAX_LIMIT)
        hits = await reader.chunks_mentioning(tenant, [entity_id], limit, SearchFilter())
        views = await reader.get_chunks(tenant, [h.id for h in hits])
        for view in views.values():
            item = chunk_item(view.id, view.note, [ChannelHit("graph", 0, 1.0)], 0.0)
            fill_chunk(item, view.text, view.heading)
            items.append(item)
        items.sort(key=lambda i: (i.date == "", i.date, i.id))
        resolved = (await self.resolve(tenant, [entity], reader))[0]
        return Timeline(resolved, [(i.date, i) for i in items[:limit]])

    async def upsert(self, tenant: str, raw: Sequence[tuple[str, Mapping[str, Any], bool]]) -> int:
        """UpsertRecords: ``(collection, fields, sensitive)`` each; ``fields`` holds the id."""
        records = []
        for index, (collection, fields, sensitive) in enumerate(raw):
            self.check_collection(collection)
            try:
                record = build_record(
                    collection, fields, source="api", sensitive_collections=self._sensitive
                )
            except InvalidArgument as exc:
                raise InvalidArgument(f"records[{index}]: {exc.message}") from None
            if sensitive and not record.sensitive:
                record = dataclasses.replace(record, sensitive=True)
            records.append(record)
        written = await self._indexer.upsert_records(tenant, records)
        if any(r.collection == "entities" for r in records):
            await self._indexer.refresh_mentions(tenant, await entity_matcher(self._store, tenant))
        return written

    async def delete(self, tenant: str, collection: str, ids: Sequence[str]) -> int:
        """DeleteRecords: unknown ids are ignored."""
        self.check_collection(collection)
        await self._indexer.archive.before_record_removal(
            tenant, [f"{collection}:{i}" for i in ids]
        )
        deleted = await self._store.delete_records(tenant, collection, list(ids))
        if collection == "entities" and deleted:
            await self._indexer.refresh_mentions(tenant, await entity_matcher(self._store, tenant))
        return deleted
