"""Finding a person (or any entity) by id, name or alias, for the CLI and the MCP server."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from memex.retrieval.v1 import retrieval_pb2
from memex.shared.errors import InvalidArgument, NotFound

MAX_ENTITIES = 1000


def match_entity(records: list[retrieval_pb2.Record], person: str) -> str:
    """The id of the one entity whose id, name or an alias is ``person`` (case-insensitive),
    else of the one whose name contains it. NotFound when none matches, InvalidArgument (naming
    the candidates) when several do."""
    wanted = person.strip().casefold()
    if not wanted:
        raise InvalidArgument("say whose timeline: an entity id or a name")
    exact, partial = [], []
    for record in records:
        fields = json_format.MessageToDict(record.fields)
        name = str(fields.get("name") or "")
        raw = fields.get("aliases")
        aliases = [str(a) for a in raw] if isinstance(raw, list) else []
        if any(n.casefold() == wanted for n in (record.id, name, *aliases)):
            exact.append(record.id)
        elif wanted in name.casefold():
            partial.append(record.id)
    matches = exact or partial
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NotFound(f"no person or entity matches {person!r} (ids, names and aliases tried)")
    raise InvalidArgument(f"{person!r} matches several entities: {', '.join(matches)}; use an id")


async def resolve_entity(stub: Any, person: str, tenant: str = "") -> str:
    """``match_entity`` over the tenant's entities, read with ``stub`` (a retrieval stub)."""
    reply = await stub.QueryRecords(
        retrieval_pb2.QueryRecordsRequest(tenant=tenant, collection="entities", limit=MAX_ENTITIES)
    )
    return match_entity(list(reply.records), person)
