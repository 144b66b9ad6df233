"""Memory reads for the surfaces (issue 11): search, records, timeline, inbox and note.

Each read takes a ``policy.Scope`` (the tenant and the request's filters, validated) and returns
only what the scope admits. Retrieval is asked for more than the page (and to filter itself where
it can), so dropping sensitive or out-of-window items still leaves a full page when memory has one.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from memex.orchestrator.memory import as_of as as_of_day
from memex.orchestrator.memory.entities import match_entity
from memex.orchestrator.memory.items import Note, Record, ShownItem, Timeline
from memex.orchestrator.memory.policy import MAX_K, MAX_LIMIT, Scope, check_count
from memex.orchestrator.metrics import timed
from memex.orchestrator.ports import Memory, NoteFileHead
from memex.orchestrator.turn.persona import Personas
from memex.orchestrator.turn.pipeline import Recorder, Retriever
from memex.shared.channels import CHANNELS
from memex.shared.errors import InvalidArgument

DEFAULT_RECORDS = 50


class Reads:
    """The surfaces' reads, each under the read policy."""

    def __init__(self, memory: Memory, personas: Personas, recorder: Recorder) -> None:
        self._memory = memory
        self._personas = personas
        self._recorder = recorder

    async def search(
        self,
        scope: Scope,
        query: str,
        *,
        persona_name: str = "",
        channels: Sequence[str] = (),
        k: int = 0,
        include_contested: bool = False,
        as_of: str = "",
    ) -> tuple[list[ShownItem], str]:
        """Hybrid search shaped by a persona, filtered by ``scope``, with telemetry (SPEC B12).
        Explicit channels and window override the persona's. ``as_of`` (YYYY-MM-DD): the memory
        as it stood at the end of that day (docs/as-of.md)."""
        if not query.strip():
            raise InvalidArgument("query is empty: say what to search for")
        as_of_day.as_of_var.set(as_of_day.parse(as_of))
        check_count(k, "k", MAX_K)
        unknown = [c for c in channels if c not in CHANNELS]
        if unknown:
            raise InvalidArgument(f"unknown channel {unknown[0]!r}: use {', '.join(CHANNELS)}")
        started = time.perf_counter()
        persona = self._personas.get(persona_name, "ask")
        spec = replace(
            Retriever.spec(persona, query, k or None),
            include_sensitive=scope.include_sensitive,
            since=scope.since,
            until=scope.until,
            tags=scope.tags,
            collections=scope.collections,
        )
        if channels:
            spec = replace(spec, channels=tuple(dict.fromkeys(channels)))
        if include_contested:
            spec = replace(spec, include_contested=True)
        with timed("search"):
            found = await self._memory.search(scope.tenant, spec)
        items = scope.items(found, spec.k)
        turn_id = await self._recorder.record(
            tenant=scope.tenant,
            kind="search",
            query=query,
            persona=persona.name,
            items=items,
            latency_ms=(time.perf_counter() - started) * 1000,
        )
        return items, turn_id

    async def records(
        self,
        scope: Scope,
        collection: str,
        filters: Sequence[tuple[str, str, object]],
        sort: str,
        limit: int,
        as_of: str = "",
    ) -> list[Record]:
        """Records of one collection matching every filter, within ``scope``; ``as_of``
        (YYYY-MM-DD): as they stood at the end of that day (docs/as-of.md)."""
        as_of_day.as_of_var.set(as_of_day.parse(as_of))
        check_count(limit, "limit", MAX_LIMIT)
        if not collection.strip():
            raise InvalidArgument("say which collection: entities, events, inbox, beliefs, ...")
        found = await self._memory.records(scope.tenant, collection, filters, sort, MAX_LIMIT)
        return scope.records(found, limit or DEFAULT_RECORDS)

    async def timeline(self, scope: Scope, person: str, limit: int, as_of: str = "") -> Timeline:
        """The timeline of the entity ``person`` names (an id, a name or an alias); ``as_of``
        as ``records``: the entity, its names and its entries as they stood then."""
        as_of_day.as_of_var.set(as_of_day.parse(as_of))
        check_count(limit, "limit", MAX_LIMIT)
        memory = self._memory
        entities = await memory.records(scope.tenant, "entities", (), "", MAX_LIMIT)
        entity = scope.check_record(match_entity(entities, person), "entity")
        timeline = await memory.timeline(scope.tenant, entity.id, 0)
        return Timeline(entity, tuple(scope.entries(timeline.entries, limit)))

    async def inbox(
        self, scope: Scope, limit: int, include_done: bool, as_of: str = ""
    ) -> list[Record]:
        """Inbox items, soonest first, within ``scope``; ``as_of`` as ``records``."""
        as_of_day.as_of_var.set(as_of_day.parse(as_of))
        check_count(limit, "limit", MAX_LIMIT)
        found = await self._memory.inbox(scope.tenant, MAX_LIMIT, include_done)
        return scope.records(found, limit or DEFAULT_RECORDS)

    async def note(self, scope: Scope, episode_id: str) -> Note:
        """One note; PermissionDenied for a sensitive one unless ``scope`` asked for it."""
        if not episode_id.strip():
            raise InvalidArgument("say which note: a citation's episode_id")
        return scope.check_note(await self._memory.note(scope.tenant, episode_id))

    async def note_file(self, scope: Scope, episode_id: str) -> AsyncIterator[NoteFileHead | bytes]:
        """A cited voice memo's or PDF's own file, head first, under the same policy as its
        text (``note``): checked before a byte is read."""
        await self.note(scope, episode_id)
        async for piece in self._memory.note_file(scope.tenant, episode_id):
            yield piece
