"""The orchestrator's read requests, built the same way by every surface (issue 11).

Surfaces read memory only through these orchestrator RPCs; the orchestrator applies the read
policy. What a surface decides is whether its caller may ask for sensitive items at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from google.protobuf import json_format

from memex.gateway.present import channel_enums
from memex.orchestrator.v1 import orchestrator_pb2 as opb


def filters(
    *,
    since: str = "",
    until: str = "",
    tags: Sequence[str] = (),
    collections: Sequence[str] = (),
    include_sensitive: bool = False,
    include_contested: bool = False,
    as_of: str = "",
) -> opb.MemoryFilters:
    """The filters of a read; ``as_of`` (YYYY-MM-DD) reads the memory as it stood at the end of
    that day (docs/as-of.md)."""
    return opb.MemoryFilters(
        since=since,
        until=until,
        tags=list(tags),
        collections=list(collections),
        include_sensitive=include_sensitive,
        include_contested=include_contested,
        as_of=as_of,
    )


def search(
    query: str,
    *,
    tenant: str = "",
    persona: str = "",
    k: int = 0,
    channels: Sequence[str] = (),
    where: opb.MemoryFilters | None = None,
) -> opb.SearchRequest:
    """A search request; ValueError for an unknown channel name."""
    return opb.SearchRequest(
        tenant=tenant,
        query=query,
        persona=persona,
        k=k,
        channels=channel_enums(list(channels)),
        filters=where or opb.MemoryFilters(),
    )


def condition(field: str, op: str, value: object) -> opb.RecordCondition:
    """One record condition with a JSON value."""
    out = opb.RecordCondition(field=field, op=op)
    json_format.ParseDict(value, out.value)  # type: ignore[arg-type]  # a Value takes any JSON
    return out


def records(
    collection: str,
    conditions: Iterable[tuple[str, str, object]] = (),
    *,
    tenant: str = "",
    sort: str = "",
    limit: int = 0,
    where: opb.MemoryFilters | None = None,
) -> opb.QueryRecordsRequest:
    """A records query."""
    return opb.QueryRecordsRequest(
        tenant=tenant,
        collection=collection,
        filter=[condition(f, o, v) for f, o, v in conditions],
        sort=sort,
        limit=limit,
        filters=where or opb.MemoryFilters(),
    )
