"""The MCP tools: typed inputs (the JSON schema a client sees) and cited, structured results.

Every read goes through the orchestrator, which applies the read policy (issue 11); an ask's
answer is a read too. The MCP client is typically a cloud model, so it gets sensitive items (or an
answer drawn from them) only where the user allowed it (``MEMEX_MCP_ALLOW_SENSITIVE``) and the
call asks.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field, JsonValue

from memex.gateway import reads
from memex.gateway.mcp.backend import Stack
from memex.gateway.mcp.models import (
    AskResult,
    InboxResult,
    Note,
    RecordsResult,
    SearchResult,
    Timeline,
)
from memex.gateway.present import ChannelName, Record, SearchHit
from memex.gateway.present_beliefs import Belief, BeliefForgotten, BeliefsResponse
from memex.orchestrator.v1 import orchestrator_pb2

Date = Annotated[str, Field(pattern=r"^(\d{4}-\d{2}-\d{2})?$", description="YYYY-MM-DD")]
Sensitive = Annotated[
    bool,
    Field(description="include items marked sensitive (only if the user allowed it)"),
]
AsOf = Annotated[
    str,
    Field(
        pattern=r"^(\d{4}-\d{2}-\d{2})?$",
        description="YYYY-MM-DD: read the memory as it stood at the end of that day (the notes "
        "as they were then, before later edits); empty = now. Not a day after today.",
    ),
]
NOT_ALLOWED = (
    "sensitive items are not shared with MCP clients here; the user can allow it by setting "
    "MEMEX_MCP_ALLOW_SENSITIVE=true in the MCP server's environment. Without include_sensitive "
    "the call returns everything else."
)


class RecordFilter(BaseModel):
    """One condition, ``field op value``: {"field": "date", "op": "gte", "value": "2026-01-01"}."""

    field: str = Field(
        min_length=1, description='"id", "date" or a dotted path into the fields, e.g. "kind"'
    )
    op: Literal["eq", "ne", "lt", "lte", "gt", "gte", "contains", "in"]
    value: JsonValue


class Tools:
    """The tool functions, bound to one stack."""

    def __init__(
        self, stack: Stack, progress_every_s: float = 5.0, allow_sensitive: bool = False
    ) -> None:
        self.stack = stack
        self.progress_every_s = progress_every_s
        self.allow_sensitive = allow_sensitive

    def _sensitive(self, asked: bool) -> bool:
        """Whether a call gets sensitive items; a tool error saying how to allow it when it asks
        and the user has not allowed it."""
        if asked and not self.allow_sensitive:
            raise ToolError(NOT_ALLOWED)
        return asked

    async def ask(
        self,
        ctx: Context,
        question: Annotated[str, Field(min_length=1, max_length=4000)],
        persona: Annotated[
            str, Field(description="analyst (default), coach, friend, skeptic, ...")
        ] = "",
        limit: Annotated[
            int, Field(ge=0, le=50, description="items the answer may draw on; 0 = default (8)")
        ] = 0,
        include_sensitive: Sensitive = False,
        as_of: AsOf = "",
    ) -> AskResult:
        """Answer a question from the user's personal memory (notes, records, beliefs), with
        citations. Each citation says how the source supports the claim: verbatim, paraphrase, or
        inference ("reading between the lines"). `abstained` is true when memory holds no answer.
        Notes marked sensitive are withheld from the answer (counted in `withheld`) unless
        include_sensitive is set and the user allowed it. With as_of, the answer is what memory
        held at the end of that day ("what did I know then?"), with that day as today."""
        # The answer's text and quotes come back to this client, typically a cloud model: the
        # read rule applies, so the orchestrator withholds sensitive notes unless allowed.
        request = orchestrator_pb2.AskRequest(
            question=question,
            persona=persona,
            limit=limit,
            include_sensitive=self._sensitive(include_sensitive),
            as_of=as_of,
        )
        call = asyncio.ensure_future(self.stack.orchestrator(lambda stub: stub.Ask(request)))
        # An ask on a local CPU model takes a while: progress keeps a client that asked for it
        # informed (and, for many clients, keeps its request timeout from firing).
        start = time.monotonic()
        try:
            while True:
                done, _ = await asyncio.wait({call}, timeout=self.progress_every_s)
                if done:
                    break
                elapsed = time.monotonic() - start
                await ctx.report_progress(elapsed, message=f"thinking ({elapsed:.0f}s)")
        finally:
            call.cancel()  # a no-op once done; stops the RPC if the client cancelled
        return AskResult.from_proto(call.result())

    async def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=2000)],
        k: Annotated[int, Field(ge=0, le=100, description="results; 0 = default (10)")] = 0,
        channels: Annotated[
            list[ChannelName], Field(description="empty = vector, keyword and graph")
        ] = [],  # noqa: B006 - the SDK reads the default into the schema; never mutated
        since: Date = "",
        until: Date = "",
        tags: Annotated[list[str], Field(description="only items with all these tags")] = [],  # noqa: B006
        collections: Annotated[
            list[str], Field(description="only records of these collections (notes kept)")
        ] = [],  # noqa: B006
        include_sensitive: Sensitive = False,
        as_of: AsOf = "",
    ) -> SearchResult:
        """Hybrid search (semantic, keyword and entity graph) over the user's memory. Each hit
        carries the citation to use for it, its provenance (note title, path, heading, date) and
        the text found, with how each channel ranked it. With as_of, the memory as it stood at
        the end of that day: a note's earlier version is a hit whose episode_id is
        "NOTE_ID@vN" (get_note reads it)."""
        request = reads.search(
            query,
            k=k,
            channels=channels,
            where=reads.filters(
                since=since,
                until=until,
                tags=tags,
                collections=collections,
                include_sensitive=self._sensitive(include_sensitive),
                as_of=as_of,
            ),
        )
        reply = await self.stack.orchestrator(lambda stub: stub.Search(request))
        return SearchResult(query=query, hits=[SearchHit.from_proto(i) for i in reply.items])

    async def query_records(
        self,
        collection: Annotated[
            str, Field(min_length=1, description="entities, events, inbox, beliefs, ...")
        ],
        filters: Annotated[list[RecordFilter], Field(description="all must hold")] = [],  # noqa: B006
        sort: Annotated[str, Field(description='a field; "-date" sorts descending')] = "",
        limit: Annotated[int, Field(ge=0, le=1000, description="0 = default (50)")] = 0,
        since: Date = "",
        until: Date = "",
        include_sensitive: Sensitive = False,
        as_of: AsOf = "",
    ) -> RecordsResult:
        """Structured read of one record collection with field filters, e.g. events in a date
        range or entities of kind person. Each record carries its citation. With as_of, the
        records as they stood at the end of that day."""
        request = reads.records(
            collection,
            [(f.field, f.op, f.value) for f in filters],
            sort=sort,
            limit=limit,
            where=reads.filters(
                since=since,
                until=until,
                include_sensitive=self._sensitive(include_sensitive),
                as_of=as_of,
            ),
        )
        reply = await self.stack.orchestrator(lambda stub: stub.QueryRecords(request))
        return RecordsResult(
            collection=collection, records=[Record.from_proto(r) for r in reply.records]
        )

    async def person_timeline(
        self,
        person: Annotated[
            str, Field(min_length=1, description='entity id ("graham-pearce") or name ("Graham")')
        ],
        limit: Annotated[int, Field(ge=0, le=1000, description="0 = every entry")] = 0,
        since: Date = "",
        until: Date = "",
        include_sensitive: Sensitive = False,
        as_of: AsOf = "",
    ) -> Timeline:
        """Everything memory holds about one person (or place, project, ...) in date order:
        the entity record and the dated notes and records that mention it, each cited. With
        as_of, as they stood at the end of that day."""
        request = orchestrator_pb2.PersonTimelineRequest(
            person=person,
            limit=limit,
            filters=reads.filters(
                since=since,
                until=until,
                include_sensitive=self._sensitive(include_sensitive),
                as_of=as_of,
            ),
        )
        reply = await self.stack.orchestrator(lambda stub: stub.PersonTimeline(request))
        return Timeline.from_proto(reply)

    async def list_inbox(
        self,
        limit: Annotated[int, Field(ge=0, le=1000, description="0 = default")] = 0,
        include_done: bool = False,
        include_sensitive: Sensitive = False,
        as_of: AsOf = "",
    ) -> InboxResult:
        """Open inbox items (tasks, follow-ups), soonest date first, each with its citation.
        With as_of, the inbox as it stood at the end of that day."""
        request = orchestrator_pb2.ListInboxRequest(
            limit=limit,
            include_done=include_done,
            include_sensitive=self._sensitive(include_sensitive),
            as_of=as_of,
        )
        reply = await self.stack.orchestrator(lambda stub: stub.ListInbox(request))
        return InboxResult(items=[Record.from_proto(r) for r in reply.items])

    async def get_note(
        self,
        episode_id: Annotated[
            str,
            Field(
                min_length=1,
                description="a citation's or a search hit's episode_id; \"NOTE_ID@vN\" for an "
                "earlier version",
            ),
        ],
        include_sensitive: Sensitive = False,
    ) -> Note:
        """The whole note a citation points to: title, path, date, tags and its text, to read
        the cited passage in context, and its versions (oldest first, the current one last),
        each with when it held and the episode_id that reads it."""
        request = orchestrator_pb2.GetNoteRequest(
            episode_id=episode_id, include_sensitive=self._sensitive(include_sensitive)
        )
        reply = await self.stack.orchestrator(lambda stub: stub.GetNote(request))
        return Note.from_proto(reply)

    # -- beliefs, the learning loop's conclusions (issue 37, docs/reflect.md) --------------------

    async def list_beliefs(
        self,
        include_rejected: Annotated[
            bool, Field(description="also those the user rejected")
        ] = False,
        limit: Annotated[int, Field(ge=0, le=1000, description="0 = default (100)")] = 0,
        include_sensitive: Sensitive = False,
    ) -> BeliefsResponse:
        """Conclusions drawn from the user's notes (derived overnight by `memex reflect`, or
        written in the vault), newest first, each with its status (active, contested, rejected),
        confidence and the graded quotes it rests on. They are conclusions, not the user's
        words: cite the quotes' notes, not the belief, for what the user said."""
        request = orchestrator_pb2.ListBeliefsRequest(
            include_rejected=include_rejected,
            limit=limit,
            include_sensitive=self._sensitive(include_sensitive),
        )
        reply = await self.stack.orchestrator(lambda stub: stub.ListBeliefs(request))
        return BeliefsResponse(beliefs=[Belief.from_proto(b) for b in reply.beliefs])

    async def review_belief(
        self,
        belief_id: Annotated[str, Field(min_length=1, description="an id list_beliefs gave")],
        verdict: Literal["confirm", "reject"],
    ) -> Belief:
        """Records the user's verdict on a derived belief: confirm keeps it active and marks it
        confirmed; reject keeps it out of every answer and it is not derived again from the same
        evidence. Only when the user says so."""
        request = orchestrator_pb2.ReviewBeliefRequest(
            id=belief_id,
            verdict=orchestrator_pb2.BELIEF_VERDICT_CONFIRM
            if verdict == "confirm"
            else orchestrator_pb2.BELIEF_VERDICT_REJECT,
        )
        reply = await self.stack.orchestrator(lambda stub: stub.ReviewBelief(request))
        return Belief.from_proto(reply.belief)

    async def forget_belief(
        self,
        belief_id: Annotated[str, Field(min_length=1, description="an id list_beliefs gave")],
    ) -> BeliefForgotten:
        """Deletes a derived belief (a rejected one may then be derived again). Only when the
        user says so."""
        request = orchestrator_pb2.ForgetBeliefRequest(id=belief_id)
        reply = await self.stack.orchestrator(lambda stub: stub.ForgetBelief(request))
        return BeliefForgotten(deleted=reply.deleted)
