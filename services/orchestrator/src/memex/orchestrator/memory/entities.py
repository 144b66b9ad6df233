"""Finding a person (or any entity) by id, name or alias, for every surface's timeline."""

from __future__ import annotations

from collections.abc import Sequence

from memex.orchestrator.memory.items import Record
from memex.shared.errors import InvalidArgument, NotFound


def match_entity(records: Sequence[Record], person: str) -> Record:
    """The one entity whose id, name or an alias is ``person`` (case-insensitive), else the one
    whose name contains it. NotFound when none matches, InvalidArgument (naming the candidates)
    when several do."""
    wanted = person.strip().casefold()
    if not wanted:
        raise InvalidArgument("say whose timeline: an entity id or a name")
    exact, partial = [], []
    for record in records:
        name = str(record.fields.get("name") or "")
        raw = record.fields.get("aliases")
        aliases = [str(a) for a in raw] if isinstance(raw, list) else []
        if any(n.casefold() == wanted for n in (record.id, name, *aliases)):
            exact.append(record)
        elif wanted in name.casefold():
            partial.append(record)
    matches = exact or partial
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NotFound(
            f"no person or entity matches {person!r} (ids, names and aliases tried); "
            "query_records on the entities collection lists them"
        )
    ids = ", ".join(r.id for r in matches)
    raise InvalidArgument(f"{person!r} matches several entities: {ids}; use an id")
