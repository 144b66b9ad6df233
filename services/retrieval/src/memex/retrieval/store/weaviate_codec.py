"""Translation between the store's dataclasses and Weaviate objects and filters (no I/O)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter
from weaviate.collections.classes.filters import _Filters

from memex.retrieval.store.base import (
    Chunk,
    ChunkView,
    Hit,
    Note,
    NoteMeta,
    Record,
    SearchFilter,
    Vector,
)
from memex.retrieval.store.keyword_terms import indexed_text
from memex.retrieval.store.links import Link, shown_aliases
from memex.retrieval.store.weaviate_schema import VECTOR, day_number, uuid_of
from memex.shared.errors import InvalidArgument

Props = Mapping[str, Any]

NOTE_PROPS = [
    "note_id",
    "path",
    "title",
    "date",
    "fingerprint",
    "tags",
    "sensitive",
    "salience",
    "record_keys",
    "frontmatter_json",
]
CHUNK_PROPS = ["chunk_id", "note_id", "ordinal", "text", "heading", "start_offset", "end_offset"]
RECORD_PROPS = [
    "collection",
    "record_id",
    "fields_json",
    "text",
    "date",
    "tags",
    "sensitive",
    "entity_refs",
    "source",
]


def check_vector(vector: Vector, dimension: int, what: str) -> list[float]:
    """The vector as a list of floats, or InvalidArgument when its dimension is wrong."""
    values = [float(v) for v in vector]
    if len(values) != dimension:
        raise InvalidArgument(
            f"{what} has {len(values)} dimensions; this store holds {dimension}-dimensional "
            "vectors (was the embedding model changed? re-index with the new model)"
        )
    return values


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def note_object(note: Note, fingerprint: str) -> DataObject[Props, None]:
    """The note's metadata object; ``fingerprint`` is empty while the note is being written."""
    links = [asdict(link) for link in note.links]
    return DataObject(
        uuid=uuid_of("note", note.id),
        properties={
            "note_id": note.id,
            "path": note.path,
            "title": note.title,
            "date": note.date,
            "fingerprint": fingerprint,
            "tags": list(note.tags),
            "keys": list(note.keys),
            "record_keys": list(note.record_keys),
            "link_keys": sorted({link.target_key for link in note.links}),
            "links_json": _json(links),
            "frontmatter_json": _json(dict(note.frontmatter)),
            "sensitive": note.sensitive,
            "salience": float(note.salience),
            "link_count": len(note.links),
        },
    )


def chunk_object(note: Note, chunk: Chunk, dimension: int) -> DataObject[Props, None]:
    """A chunk with its vector and the note fields search filters on."""
    return DataObject(
        uuid=uuid_of("chunk", chunk.id),
        properties={
            "chunk_id": chunk.id,
            "note_id": note.id,
            "ordinal": chunk.ordinal,
            "text": chunk.text,
            "heading": chunk.heading,
            "start_offset": chunk.start,
            "end_offset": chunk.end,
            "search_text": indexed_text(chunk.search_text),  # stemmed: Weaviate does not stem
            "mentions": sorted(set(chunk.mentions)),
            "mention_count": len(set(chunk.mentions)),
            "day": day_number(note.date),
            "tags": list(note.tags),
            "sensitive": note.sensitive,
        },
        vector={VECTOR: check_vector(chunk.vector, dimension, f"chunk {chunk.id!r}")},
    )


def record_object(record: Record, dimension: int) -> DataObject[Props, None]:
    """A record; its vector is optional (a record without one is found by keyword only)."""
    vector = None
    if record.vector is not None:
        vector = {VECTOR: check_vector(record.vector, dimension, f"record {record.ref!r}")}
    return DataObject(
        uuid=uuid_of("record", record.ref),
        properties={
            "collection": record.collection,
            "record_id": record.id,
            "ref": record.ref,
            "fields_json": _json(dict(record.fields)),
            "text": record.text,
            "date": record.date or "",
            "day": day_number(record.date),
            "tags": list(record.tags),
            "sensitive": record.sensitive,
            "entity_refs": sorted(set(record.entity_refs)),
            "source": record.source,
        },
        vector=vector,
    )


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in (value or ()))


def note_meta(props: Props) -> NoteMeta:
    """A NoteMeta from a note object's properties."""
    title = str(props.get("title") or "")
    return NoteMeta(
        id=str(props["note_id"]),
        path=str(props["path"]),
        title=title,
        date=str(props.get("date") or ""),
        fingerprint=str(props.get("fingerprint") or ""),
        tags=_strings(props.get("tags")),
        sensitive=bool(props.get("sensitive")),
        salience=float(props.get("salience") or 0.0),
        record_keys=_strings(props.get("record_keys")),
        aliases=shown_aliases(title, json.loads(props.get("frontmatter_json") or "{}")),
    )


def chunk_view(props: Props, note: NoteMeta) -> ChunkView:
    """A ChunkView from a chunk object's properties and its note."""
    return ChunkView(
        id=str(props["chunk_id"]),
        note=note,
        ordinal=int(props.get("ordinal") or 0),
        text=str(props.get("text") or ""),
        heading=str(props.get("heading") or ""),
        start=int(props.get("start_offset") or 0),
        end=int(props.get("end_offset") or 0),
        mentions=_strings(props.get("mentions")),
    )


def record_from(props: Props) -> Record:
    """A Record (without vector) from a record object's properties."""
    return Record(
        collection=str(props["collection"]),
        id=str(props["record_id"]),
        fields=json.loads(str(props.get("fields_json") or "{}")),
        text=str(props.get("text") or ""),
        date=str(props["date"]) if props.get("date") else None,
        tags=_strings(props.get("tags")),
        sensitive=bool(props.get("sensitive")),
        entity_refs=_strings(props.get("entity_refs")),
        source=str(props.get("source") or "api"),
    )


def links_of(props: Props) -> list[Link]:
    """The outgoing links stored with a note."""
    return [Link(**item) for item in json.loads(str(props.get("links_json") or "[]"))]


def search_filter(flt: SearchFilter, *, records: bool) -> _Filters | None:
    """The pre-filter of a search, or None when nothing is filtered. The caller has already
    answered the searches that cannot match anything (no collections, no note ids)."""
    parts: list[_Filters] = []
    low, high = day_number(flt.date_from), day_number(flt.date_to)
    if low is not None:
        parts.append(Filter.by_property("day").greater_or_equal(low))
    if high is not None:
        parts.append(Filter.by_property("day").less_or_equal(high))
    if flt.tags:
        parts.append(Filter.by_property("tags").contains_all(list(flt.tags)))
    if not flt.include_sensitive:
        parts.append(Filter.by_property("sensitive").equal(False))
    if records:
        parts.append(Filter.by_property("collection").contains_any(sorted(flt.collections)))
    elif flt.note_ids is not None:
        parts.append(Filter.by_property("note_id").contains_any(sorted(flt.note_ids)))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Filter.all_of(parts)


def any_of(prop: str, values: Sequence[str]) -> _Filters:
    """``prop`` equals (or, for arrays, contains) any of ``values``."""
    return Filter.by_property(prop).contains_any(list(values))


def meta_object(key: str, value: str) -> DataObject[Props, None]:
    """A per-tenant key/value pair."""
    return DataObject(uuid=uuid_of("meta", key), properties={"key": key, "value": value})


def metric_sum(metric: Any) -> int:
    """The ``sum_`` of an aggregate integer metric (0 when absent)."""
    return int(getattr(metric, "sum_", 0) or 0)


def matches_nothing(flt: SearchFilter, *, records: bool) -> bool:
    """Searches that cannot match: no collections for records, an empty note set for chunks."""
    if records:
        return not flt.collections
    return flt.note_ids is not None and not flt.note_ids


def top_hits(hits: list[Hit], k: int) -> list[Hit]:
    """Descending score, ties by ascending id, one hit per id, at most k."""
    best: dict[str, Hit] = {}
    for hit in hits:
        if hit.id not in best or hit.score > best[hit.id].score:
            best[hit.id] = hit
    return sorted(best.values(), key=lambda h: (-h.score, h.id))[:k]
