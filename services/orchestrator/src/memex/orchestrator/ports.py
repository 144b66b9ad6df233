"""What the orchestrator needs from the other stages, as small protocols (no gRPC here).

`wire/clients.py` implements them over gRPC; unit tests use fakes.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from memex.orchestrator.memory.items import Note, Record, ShownItem, Timeline

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str


@dataclass(frozen=True)
class ReasonerInfo:
    engine: str
    model: str
    context_length: int
    local: bool
    prefill_tokens_per_second: float = 0.0  # 0: unknown


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class GenerateOptions:
    max_tokens: int = 512
    temperature: float | None = None
    json_schema: str = ""
    stop: tuple[str, ...] = ()


class Reasoner(Protocol):
    """The reasoner stage."""

    async def info(self) -> ReasonerInfo:
        """Engine, model, and whether it is local (SPEC B3)."""
        ...

    def generate(
        self, messages: Sequence[ChatMessage], options: GenerateOptions, usage: list[Usage]
    ) -> AsyncGenerator[str, None]:
        """Streams text deltas; appends the final usage to ``usage`` when the stream ends."""
        ...


@dataclass(frozen=True)
class SearchSpec:
    query: str
    channels: tuple[str, ...] = ("vector", "keyword", "graph")
    k: int = 10
    window_days: int = 0
    include_contested: bool = False
    observation_weight: float = 1.0
    # True for the model's own retrieval: what the model may see is split off later (SPEC B3).
    # A surface's search sets it from its request (issue 11).
    include_sensitive: bool = True
    collections: tuple[str, ...] = field(default_factory=tuple)
    # An explicit window (YYYY-MM-DD) overrides window_days.
    since: str = ""
    until: str = ""
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class NoteSummary:
    """A note's metadata without its text, as the learning loop lists notes."""

    episode_id: str
    title: str
    path: str
    date: str
    tags: tuple[str, ...] = ()
    sensitive: bool = False


@dataclass(frozen=True)
class ForgetCount:
    """One receipt line: things of one kind a store removed, and how many remain."""

    store: str
    what: str
    removed: int
    remaining: int


@dataclass(frozen=True)
class ForgetCheck:
    """A lookup or search for a forgotten note, before and after."""

    store: str
    description: str
    found_before: int
    found_after: int


@dataclass(frozen=True)
class ForgottenNote:
    """What the retrieval stage did (or, on a dry run, would do) to forget one note."""

    episode_id: str
    title: str
    path: str
    chunk_ids: tuple[str, ...]
    text: str
    """The note's text as indexed; only on a dry run (to find quotes of it elsewhere)."""
    counts: tuple[ForgetCount, ...] = ()
    checks: tuple[ForgetCheck, ...] = ()
    file_present: bool = False
    tombstoned: bool = False
    scrubbed: bool = False


class NoteEraser(Protocol):
    """The retrieval stage's forget (its DeleteNote RPC)."""

    async def forget_note(self, tenant: str, note: str, dry_run: bool) -> ForgottenNote:
        """Forgets the note an episode id, vault path or title names, and checks it is gone."""
        ...


@dataclass(frozen=True)
class NoteFileHead:
    """What a voice memo's or a PDF's own file is, before its bytes: for the reader to play or
    show it."""

    content_type: str
    size: int
    name: str


class Memory(NoteEraser, Protocol):
    """The retrieval stage, as the four tools of the plan hop (SPEC B1) and forget see it."""

    async def search(self, tenant: str, spec: SearchSpec) -> list[ShownItem]:
        """Hybrid search, best first."""
        ...

    async def query_records(
        self,
        tenant: str,
        collection: str,
        filters: Sequence[tuple[str, str, object]],
        sort: str,
        limit: int,
    ) -> list[ShownItem]:
        """Structured read over an allowlisted collection."""
        ...

    async def person_timeline(self, tenant: str, entity_id: str, limit: int) -> list[ShownItem]:
        """Everything about one entity, in date order."""
        ...

    async def list_inbox(self, tenant: str, limit: int) -> list[ShownItem]:
        """Pending inbox items."""
        ...

    # The reads a surface asks for (issue 11): whole records and notes, nothing flattened.

    async def records(
        self,
        tenant: str,
        collection: str,
        filters: Sequence[tuple[str, str, object]],
        sort: str,
        limit: int,
    ) -> list[Record]:
        """Records of one allowlisted collection matching every ``(field, op, value)``."""
        ...

    async def timeline(self, tenant: str, entity_id: str, limit: int) -> Timeline:
        """The entity and its dated items; NotFound for an unknown entity."""
        ...

    async def inbox(self, tenant: str, limit: int, include_done: bool) -> list[Record]:
        """Inbox items, soonest first."""
        ...

    async def note(self, tenant: str, episode_id: str) -> Note:
        """One note by id; NotFound for an unknown one."""
        ...

    def note_file(self, tenant: str, episode_id: str) -> AsyncIterator[NoteFileHead | bytes]:
        """A voice memo's or a PDF's own file: its head, then its bytes in pieces; NotFound
        for an unknown note or a file gone from the vault, FailedPrecondition for a note with
        no such file."""
        ...


class BeliefMemory(Protocol):
    """What the learning loop needs of the retrieval stage (issue 37): the notes of a window,
    a note's text, and the beliefs collection to read and write."""

    async def list_notes(
        self, tenant: str, since: str, until: str, limit: int
    ) -> list[NoteSummary]:
        """Notes dated ``since``..``until``, newest first, at most ``limit``."""
        ...

    async def note(self, tenant: str, episode_id: str) -> Note:
        """One note by id; NotFound for an unknown one."""
        ...

    async def records(
        self,
        tenant: str,
        collection: str,
        filters: Sequence[tuple[str, str, object]],
        sort: str,
        limit: int,
    ) -> list[Record]:
        """Records of one allowlisted collection."""
        ...

    async def upsert_records(self, tenant: str, records: Sequence[Record]) -> int:
        """Creates or replaces records by id."""
        ...

    async def delete_records(self, tenant: str, collection: str, ids: Sequence[str]) -> int:
        """Deletes records by id; unknown ids are ignored."""
        ...
