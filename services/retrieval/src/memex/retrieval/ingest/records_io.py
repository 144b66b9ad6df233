"""Records on disk and their derived search fields (no I/O beyond reading one file).

On-disk format: ``<vault>/records/<collection>.jsonl``, one JSON object per line, each with a
string ``id`` unique in its collection. The file name is the collection and must be allowlisted.
Recognised fields (all optional except ``id``):

* text: ``name``, ``title``, ``statement``, ``text``, ``summary``, ``description``, ``notes``,
  ``aliases`` (entities are found in notes by ``name`` and ``aliases``);
* date: ``date``, ``observed_at``, ``start``, ``due``, ``created`` (ISO 8601; the day is kept);
* about: ``entity``, ``entity_id``, ``entities``, ``people``, ``person``, ``participants``,
  ``subject``, ``about`` (ids of entity records; they feed PersonTimeline);
* ``tags``; ``sensitive: true``; beliefs: ``status`` (active | contested) and ``confidence``;
  observations: ``source`` (the connector) and ``observed_at``; inbox: ``status`` (open | done).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from typing import Any

from memex.retrieval.names import NameMatcher
from memex.retrieval.store.base import MemoryReader, Record
from memex.shared.errors import InvalidArgument

TEXT_FIELDS = ("name", "title", "statement", "text", "summary", "description", "notes", "aliases")
DATE_FIELDS = ("date", "observed_at", "start", "due", "created")
ABOUT_FIELDS = (
    "entity",
    "entity_id",
    "entities",
    "people",
    "person",
    "participants",
    "subject",
    "about",
)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list | tuple):
        return [str(v) for v in value if isinstance(v, str | int) and str(v).strip()]
    return []


def record_text(fields: Mapping[str, Any]) -> str:
    """The searchable text of a record: its recognised text fields, in a fixed order."""
    parts: list[str] = []
    for name in TEXT_FIELDS:
        parts += _strings(fields.get(name))
    return "\n".join(parts)


def record_date(fields: Mapping[str, Any]) -> str | None:
    """The record's day (YYYY-MM-DD) from its first parseable date field."""
    for name in DATE_FIELDS:
        value = fields.get(name)
        if isinstance(value, str) and len(value) >= 10:
            try:
                return dt.date.fromisoformat(value[:10]).isoformat()
            except ValueError:
                continue
    return None


def entity_names(record: Record) -> list[str]:
    """How an entity is named in notes: its name, title and aliases."""
    names: list[str] = []
    for name in ("name", "title", "aliases"):
        names += _strings(record.fields.get(name))
    return [n for n in dict.fromkeys(n.strip() for n in names) if len(n) >= 2]


async def entity_matcher(store: MemoryReader, tenant: str) -> NameMatcher:
    """A matcher over every entity record's names (what the indexer records as mentions and
    the graph channel looks up in a query)."""
    entities = await store.query_records(tenant, "entities", [], None, 1_000_000)
    return NameMatcher({e.id: entity_names(e) for e in entities})


def build_record(
    collection: str,
    fields: Mapping[str, Any],
    *,
    source: str,
    sensitive_collections: Iterable[str] = (),
) -> Record:
    """A store Record from raw fields; InvalidArgument without a usable ``id``."""
    rid = fields.get("id")
    if not isinstance(rid, str | int) or isinstance(rid, bool) or not str(rid).strip():
        raise InvalidArgument(f"a {collection} record needs a non-empty string id")
    refs: list[str] = []
    for name in ABOUT_FIELDS:
        refs += _strings(fields.get(name))
    tags = [t.lstrip("#").casefold() for t in _strings(fields.get("tags"))]
    return Record(
        collection=collection,
        id=str(rid).strip(),
        fields=dict(fields),
        text=record_text(fields),
        date=record_date(fields),
        tags=tuple(sorted(set(tags))),
        sensitive=fields.get("sensitive") is True or collection in set(sensitive_collections),
        entity_refs=tuple(dict.fromkeys(refs)),
        source=source,
    )


def parse_jsonl(
    text: str, collection: str, source: str, sensitive_collections: Iterable[str]
) -> tuple[list[Record], list[str]]:
    """(records, warnings): bad lines are reported by line number and skipped."""
    records: dict[str, Record] = {}
    warnings: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            fields = json.loads(line)
            if not isinstance(fields, dict):
                raise InvalidArgument("a line must be a JSON object")
            record = build_record(
                collection, fields, source=source, sensitive_collections=sensitive_collections
            )
        except (ValueError, InvalidArgument) as exc:
            message = exc.message if isinstance(exc, InvalidArgument) else "invalid JSON"
            warnings.append(f"{source}:{number}: {message}; line skipped")
            continue
        if record.id in records:
            warnings.append(f"{source}:{number}: duplicate id {record.id!r}; the last one wins")
        records[record.id] = record
    return list(records.values()), warnings
