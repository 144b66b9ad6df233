"""Writing the history as the indexer and the records API change the live memory.

The indexer and ``Records`` call these *before* they replace or delete a note or a record, so
the version they are about to lose is archived first (see ``versions``'s crash-safety note).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from memex.retrieval.embedder import MODEL_META
from memex.retrieval.history.versions import (
    NOTE_LEDGER,
    RECORD_LEDGER,
    Change,
    Ledger,
    Version,
    archive_text,
    archived_note,
    archived_record,
    day_start,
    history_tenant,
    on_remove,
    on_write,
    record_content,
    stamp,
)
from memex.retrieval.store.base import Record, Store

Embed = Callable[[list[str]], Awaitable[list[list[float]]]]
EPOCH = "0001-01-01T00:00:00Z"
"""When a live record with no date and no ledger entry is taken to have started."""


@dataclass(frozen=True)
class NoteWrite:
    """A note the indexer is about to write: its id and path, its content key, its file's
    modification time, and whether the store has an earlier version of it."""

    note_id: str
    path: str
    content: str
    mtime: float
    replaces: bool
    body: str = ""
    """The new chunks' texts joined by NUL: what tells a live version indexed before versions
    were kept (no ledger entry) from this one."""


class Archive:
    """Keeps one store's history: the ledger and the archived versions (``versions``)."""

    def __init__(
        self,
        store: Store,
        embed: Embed,
        model_id: Callable[[], str],
        clock: Callable[[], str] = stamp,
    ) -> None:
        self._store = store
        self._embed = embed
        self._model_id = model_id
        self._clock = clock

    async def note_ledger(self, tenant: str) -> Ledger:
        """Every note version of the tenant."""
        return await Ledger.load(self._store, tenant, NOTE_LEDGER)

    async def before_notes(self, tenant: str, ledger: Ledger, writes: Sequence[NoteWrite]) -> None:
        """Archives the live versions ``writes`` replace and records the change in the ledger."""
        replaced = [w.note_id for w in writes if w.replaces]
        metas = await self._store.get_notes(tenant, replaced) if replaced else {}
        changes: list[tuple[Change, bool]] = []
        for w in writes:
            meta = metas.get(w.note_id)
            fallback = ""
            if meta is not None and ledger.current(w.note_id) is None:
                # No entry: a ``--full`` or new-model run must not take the same text for a
                # new version, so the live text is compared (once per such note).
                live = await self._store.note_chunks(tenant, w.note_id)
                if "\x00".join(v.text for v in live) != w.body:
                    fallback = day_start(meta.date)
            change = on_write(
                ledger,
                w.note_id,
                w.content,
                stamp(w.mtime),
                now=self._clock(),
                fallback_from=fallback,
                path=w.path,
            )
            changes.append((change, meta is not None))
        closed = [c.closed for c, live in changes if c.closed is not None and live]
        await self._archive_notes(tenant, closed)
        await self._write(
            tenant, NOTE_LEDGER, ledger, [v for c, _ in changes for v in (c.closed, c.opened) if v]
        )

    async def before_note_removal(
        self, tenant: str, ledger: Ledger, notes: Sequence[tuple[str, str]]
    ) -> None:
        """Archives and closes the notes ``(note_id, path)`` a run is about to remove."""
        metas = await self._store.get_notes(tenant, [n for n, _ in notes])
        now = self._clock()
        closed = [
            on_remove(
                ledger, note_id, now=now, fallback_from=day_start(metas[note_id].date), path=path
            )
            for note_id, path in notes
            if note_id in metas
        ]
        await self._archive_notes(tenant, closed)
        await self._write(tenant, NOTE_LEDGER, ledger, closed)

    async def open_unrecorded(
        self, tenant: str, ledger: Ledger, notes: Sequence[NoteWrite]
    ) -> None:
        """Opens a version for each unchanged note the ledger has none for (notes indexed
        before versions were kept), from its file's modification time."""
        now = self._clock()
        opened = [
            Version(
                n.note_id,
                ledger.next_number(n.note_id),
                n.content,
                min(stamp(n.mtime), now),
                None,
                n.path,
            )
            for n in notes
            if ledger.current(n.note_id) is None
        ]
        await self._write(tenant, NOTE_LEDGER, ledger, opened)

    async def before_records(self, tenant: str, records: Sequence[Record]) -> None:
        """Archives the live versions of ``records`` that they change, and records the change."""
        refs = [r.ref for r in records]
        ledger = await Ledger.load(self._store, tenant, RECORD_LEDGER, refs)
        live = await self._store.get_records(tenant, refs)
        now = self._clock()
        changes: list[Change] = []
        archived: list[Record] = []
        for record in records:
            old = live.get(record.ref)
            fallback = (day_start(old.date or "") or EPOCH) if old is not None else ""
            change = on_write(
                ledger, record.ref, record_content(record), now, now=now, fallback_from=fallback
            )
            if change.closed is not None and old is not None:
                archived.append(archived_record(old, change.closed.number))
            changes.append(change)
        await self._archive_records(tenant, archived)
        versions = [v for c in changes for v in (c.closed, c.opened) if v]
        await self._write(tenant, RECORD_LEDGER, ledger, versions)

    async def before_record_removal(self, tenant: str, refs: Sequence[str]) -> None:
        """Archives and closes the live records ``refs`` names that are about to be deleted."""
        live = await self._store.get_records(tenant, refs)
        ledger = await Ledger.load(self._store, tenant, RECORD_LEDGER, list(live))
        closed: list[Version] = []
        archived: list[Record] = []
        now = self._clock()
        for ref, record in live.items():
            fallback = day_start(record.date or "") or EPOCH
            version = on_remove(ledger, ref, now=now, fallback_from=fallback)
            closed.append(version)
            archived.append(archived_record(record, version.number))
        await self._archive_records(tenant, archived)
        await self._write(tenant, RECORD_LEDGER, ledger, closed)

    async def reembed(self, tenant: str) -> None:
        """Embeds every archived version again with the current model (after a model change,
        so an as-of search compares like with like)."""
        history = history_tenant(tenant)
        ledger = await self.note_ledger(tenant)
        for version in ledger.all():
            if version.current:
                continue
            metas = await self._store.get_notes(history, [version.id])
            if version.id not in metas:
                continue
            meta = metas[version.id]
            views = await self._store.note_chunks(history, version.id)
            vectors = await self._embed([archive_text(meta, v) for v in views]) if views else []
            await self._store.upsert_note(history, archived_note(meta, views, vectors, version.id))
        records = await Ledger.load(self._store, tenant, RECORD_LEDGER)
        # A record version's ledger id, collection:id@vN, is its archived copy's ref.
        closed = [v.id for v in records.all() if not v.current]
        stored = await self._store.get_records(history, closed)
        await self._archive_records(tenant, list(stored.values()))
        await self._store.set_meta(history, MODEL_META, self._model_id())

    async def kept_versions(self, tenant: str, note_id: str) -> list[str]:
        """The ids of every version of a note the ledger holds, current included."""
        ledger = await Ledger.load(self._store, tenant, NOTE_LEDGER, [note_id])
        return [v.id for v in ledger.versions(note_id)]

    async def forget_note(self, tenant: str, ids: Sequence[str]) -> None:
        """Removes the versions ``ids`` of a note: archived copies and ledger entries."""
        if ids:
            history = history_tenant(tenant)
            await self._store.delete_notes(history, list(ids))
            await self._store.delete_records(history, NOTE_LEDGER, list(ids))

    async def note_traces(self, tenant: str, note_id: str, ids: Sequence[str]) -> int:
        """What the history holds of a note, read back from the store: its ledger entries plus
        its archived copies among ``ids`` (the version ids it had)."""
        history = history_tenant(tenant)
        ledger = await Ledger.load(self._store, tenant, NOTE_LEDGER, [note_id])
        archived = await self._store.get_notes(history, list(ids)) if ids else {}
        return len(ledger.versions(note_id)) + len(archived)

    async def _archive_notes(self, tenant: str, closed: Sequence[Version]) -> None:
        if not closed:
            return
        history = history_tenant(tenant)
        metas = await self._store.get_notes(tenant, [v.of for v in closed])
        for version in closed:
            meta = metas.get(version.of)
            if meta is None:
                continue
            views = await self._store.note_chunks(tenant, version.of)
            vectors = await self._embed([archive_text(meta, v) for v in views]) if views else []
            await self._store.upsert_note(history, archived_note(meta, views, vectors, version.id))
        await self._store.set_meta(history, MODEL_META, self._model_id())

    async def _archive_records(self, tenant: str, records: Sequence[Record]) -> None:
        if not records:
            return
        history = history_tenant(tenant)
        vectors = await self._embed([r.text for r in records])
        await self._store.upsert_records(
            history,
            [replace(r, vector=v) for r, v in zip(records, vectors, strict=True)],
        )
        await self._store.set_meta(history, MODEL_META, self._model_id())

    async def _write(
        self, tenant: str, collection: str, ledger: Ledger, versions: Sequence[Version]
    ) -> None:
        if not versions:
            return
        await self._store.upsert_records(
            history_tenant(tenant), [v.as_record(collection) for v in versions]
        )
        ledger.record(*versions)
