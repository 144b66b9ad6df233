"""An in-memory catalogue of a tenant's chunks: which note each chunk belongs to, and each
note's metadata.

Derived from SQLite like the ANN and keyword indexes: built on first use, updated after every
committed write on the store's thread, dropped when an update fails (the next use rebuilds it).
A search's filter ("no sensitive notes", dates, tags, a set of notes) and its ranking on note
metadata then cost array lookups instead of a SQL lookup per candidate, which was most of a
search at 200k chunks (docs/retrieval.md, "Speed at scale"); so did looking up chunk ids by
rowid and notes by chunk id, which it answers too. Memory: ~45 bytes per chunk (rowid, chunk id,
note slot, and the id order) plus one ``NoteMeta`` per note.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from memex.retrieval.store.base import Hit, NoteMeta, SearchFilter


def passes(note: NoteMeta, flt: SearchFilter) -> bool:
    """Whether a note passes a chunk filter's note conditions (``schema.note_filter`` in SQL)."""
    # Compared as SQL compares them: strings in order, and a NULL date fails any bound.
    if flt.date_from and not (note.date is not None and note.date >= flt.date_from):
        return False
    if flt.date_to and not (note.date is not None and note.date <= flt.date_to):
        return False
    if not flt.include_sensitive and note.sensitive:
        return False
    if flt.note_ids is not None and note.id not in flt.note_ids:
        return False
    return all(tag in note.tags for tag in flt.tags)


def _encoded(ids: Sequence[str]) -> NDArray[np.bytes_]:
    # Fixed-width UTF-8 bytes: ~27 bytes a chunk, where a dict of str would take ~120.
    return np.array([i.encode() for i in ids], dtype=np.bytes_)


def _only_sensitivity(flt: SearchFilter) -> bool:
    return not (flt.date_from or flt.date_to or flt.tags or flt.note_ids is not None)


class ChunkCatalog:
    """Chunk rowids (sorted) with their chunk id and their note's slot; notes by slot and by id."""

    def __init__(self, notes: Iterable[NoteMeta], chunks: Iterable[tuple[int, str, str]]) -> None:
        self._notes: list[NoteMeta | None] = []
        self._slots: dict[str, int] = {}
        self._masks: dict[bool, NDArray[np.bool_]] = {}
        self._shares: dict[bool, float] = {}
        for note in notes:
            self._put(note)
        rows = sorted(
            (rowid, cid, self._slots[nid]) for rowid, cid, nid in chunks if nid in self._slots
        )
        self._rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self._ids = _encoded([r[1] for r in rows])
        self._slot_of = np.fromiter((r[2] for r in rows), dtype=np.int32, count=len(rows))
        self._by_id: NDArray[np.intp] | None = None  # positions in id order, made when asked

    def __len__(self) -> int:
        return len(self._rowids)

    def note(self, note_id: str) -> NoteMeta | None:
        """A note's metadata, or None for an unknown note."""
        slot = self._slots.get(note_id)
        return None if slot is None else self._notes[slot]

    # -- updates (after the SQLite transaction committed) ---------------------------------------
    def replace_note(
        self, note: NoteMeta, old: Sequence[int], new: Sequence[int], chunk_ids: Sequence[str]
    ) -> None:
        """A note was written: its old chunk rowids are gone, ``new`` (the chunks ``chunk_ids``)
        belong to it."""
        self._changed()
        self._drop(old)
        slot = self._put(note)
        keys = np.asarray(new, dtype=np.int64)
        if not len(keys):
            return
        rowids = np.concatenate([self._rowids, keys])
        ids = np.concatenate([self._ids, _encoded(chunk_ids)])
        slots = np.concatenate([self._slot_of, np.full(len(keys), slot, dtype=np.int32)])
        # New rowids normally come after every existing one; SQLite reuses a deleted maximum.
        after = not len(self._rowids) or keys[0] > self._rowids[-1]
        if not (after and np.all(keys[1:] > keys[:-1])):
            order = np.argsort(rowids, kind="stable")
            rowids, ids, slots = rowids[order], ids[order], slots[order]
        self._rowids, self._ids, self._slot_of = rowids, ids, slots

    def delete_notes(self, note_ids: Iterable[str], old: Sequence[int]) -> None:
        """Notes were deleted along with the chunk rowids ``old``."""
        self._changed()
        self._drop(old)
        for note_id in note_ids:
            slot = self._slots.pop(note_id, None)
            if slot is not None:
                self._notes[slot] = None  # the slot is not reused until the next rebuild

    def _changed(self) -> None:
        """Forgets what is cached from the arrays and notes, before they change."""
        self._masks.clear()
        self._shares.clear()
        self._by_id = None

    def _put(self, note: NoteMeta) -> int:
        slot = self._slots.get(note.id)
        if slot is None:
            slot = len(self._notes)
            self._notes.append(note)
            self._slots[note.id] = slot
        else:
            self._notes[slot] = note
        return slot

    def _drop(self, old: Sequence[int]) -> None:
        if len(old):
            keep = ~np.isin(self._rowids, np.asarray(old, dtype=np.int64))
            self._rowids, self._ids = self._rowids[keep], self._ids[keep]
            self._slot_of = self._slot_of[keep]

    # -- reads ---------------------------------------------------------------------------------
    def _positions(self, keys: Sequence[int]) -> tuple[NDArray[np.int64], NDArray[np.intp]]:
        """Those of ``keys`` that are this tenant's chunks, and their positions."""
        wanted = np.asarray(keys, dtype=np.int64)
        if not len(wanted) or not len(self._rowids):
            return wanted[:0], np.zeros(0, dtype=np.intp)
        at = np.minimum(np.searchsorted(self._rowids, wanted), len(self._rowids) - 1)
        found = self._rowids[at] == wanted
        return wanted[found], at[found]

    def passing(self, keys: Sequence[int], flt: SearchFilter) -> set[int]:
        """Those of ``keys`` that are chunks of this tenant passing the filter."""
        wanted, at = self._positions(keys)
        return set(wanted[self._mask(flt)[self._slot_of[at]]].tolist())

    def share(self, flt: SearchFilter) -> float:
        """The fraction of this tenant's chunks that pass the filter (0 when it has none); kept
        for the common filters, like their masks."""
        common = _only_sensitivity(flt)
        if common and flt.include_sensitive in self._shares:
            return self._shares[flt.include_sensitive]
        passed = np.count_nonzero(self._mask(flt)[self._slot_of]) if len(self._rowids) else 0
        share = float(passed) / max(len(self._rowids), 1)
        if common:
            self._shares[flt.include_sensitive] = share
        return share

    def ids(self, keys: Sequence[int]) -> dict[int, str]:
        """Chunk ids by rowid, for those of ``keys`` that are this tenant's chunks."""
        wanted, at = self._positions(keys)
        return {int(k): i.decode() for k, i in zip(wanted.tolist(), self._ids[at], strict=True)}

    def notes_of(self, chunk_ids: Sequence[str]) -> dict[str, NoteMeta]:
        """Each known chunk's note metadata, by chunk id."""
        if not len(self._ids) or not chunk_ids:
            return {}
        if self._by_id is None:
            self._by_id = np.argsort(self._ids, kind="stable")
        wanted = _encoded(chunk_ids)
        at = np.searchsorted(self._ids, wanted, sorter=self._by_id)
        at = self._by_id[np.minimum(at, len(self._ids) - 1)]
        out: dict[str, NoteMeta] = {}
        for cid, found, pos in zip(chunk_ids, self._ids[at] == wanted, at.tolist(), strict=True):
            note = self._notes[self._slot_of[pos]] if found else None
            if note is not None:
                out[cid] = note
        return out

    def ranked(
        self, rank: Callable[[int], list[tuple[int, float]]], k: int, flt: SearchFilter
    ) -> list[Hit]:
        """The k best chunks passing the filter, best first, ties by chunk id, from ``rank(n)``:
        the n best (rowid, score) of the whole tenant. The filter is applied to the k + 1 best
        rows, which is enough for broad filters such as "no sensitive notes" when few notes are
        sensitive; when too few pass, or rows tied with the k-th fall beyond what was read, it
        reads 4 times more, until it has read them all."""
        if k <= 0:
            return []
        limit = k + 1
        while True:
            scored = rank(limit)
            ok = self.passing([key for key, _ in scored], flt)
            kept = [(key, s) for key, s in scored if key in ok]
            if len(scored) < limit or (len(kept) >= k and kept[k - 1][1] > scored[-1][1]):
                break
            limit *= 4
        ids = self.ids([key for key, _ in kept])
        hits = [Hit(id=ids[key], score=s) for key, s in kept if key in ids]
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits[:k]

    def candidates(self, flt: SearchFilter) -> list[int]:
        """Every chunk rowid of this tenant passing the filter, ascending."""
        return self._rowids[self._mask(flt)[self._slot_of]].tolist()  # type: ignore[no-any-return]

    def _mask(self, flt: SearchFilter) -> NDArray[np.bool_]:
        """Which note slots pass the filter. The common filters (none, and "no sensitive notes")
        are kept until the next write; a filter naming notes looks at those notes only."""
        if _only_sensitivity(flt):
            cached = self._masks.get(flt.include_sensitive)
            if cached is None:
                cached = np.fromiter(
                    (n is not None and passes(n, flt) for n in self._notes),
                    dtype=np.bool_,
                    count=len(self._notes),
                )
                self._masks[flt.include_sensitive] = cached
            return cached
        mask = np.zeros(len(self._notes), dtype=np.bool_)
        slots: Iterable[int] = (
            range(len(self._notes))
            if flt.note_ids is None
            else [self._slots[i] for i in flt.note_ids if i in self._slots]
        )
        for slot in slots:
            note = self._notes[slot]
            mask[slot] = note is not None and passes(note, flt)
        return mask
