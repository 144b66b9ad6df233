"""Forgetting a note everywhere memex keeps it, with a receipt that proves it (no gRPC here).

Order: ask retrieval for the note (a dry run: its episode id, chunk ids and text, nothing
deleted); find and remove the orchestrator's own traces of it (telemetry turns that quote or
cite it, retrieval rows of its chunks, the text of LLM log calls that quote it, the evidence
bundles that show or quote it); then have
retrieval forget it and check itself; then search the orchestrator's state again. Telemetry goes
first because the note's text is needed to recognise quotes of it: if retrieval then fails, the
note is still there and the forget can simply be repeated.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from memex.orchestrator.memory.traces import NoteTraces, NoteTraceStore
from memex.orchestrator.ports import ForgetCheck, ForgetCount, NoteEraser
from memex.orchestrator.record.redaction import redact

MIN_PASSAGE = 24
"""Characters a passage of the note needs before a text containing it counts as quoting the
note; shorter lines ("# Food", "Thanks!") occur in other notes too."""
_PIECES = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKUP = re.compile(r"^[\s#>*+\-]+|\[\[|\]\]")


def squash(text: str) -> str:
    """Whitespace collapsed and case folded, as quotes are compared (SPEC B10)."""
    return " ".join(text.split()).casefold()


class NoteQuotes:
    """Whether a text references or quotes a note: its episode id, its ``[[Title]]`` ref, or any
    sentence or line of its text of at least ``MIN_PASSAGE`` characters, also as the LLM log
    stores it after redaction (``redaction.redact``)."""

    def __init__(self, episode_id: str, title: str, text: str) -> None:
        needles = {episode_id.casefold(), f"[[{squash(title)}]]"}
        for piece in _PIECES.split(text):
            piece = _MARKUP.sub("", piece)
            for variant in (piece, redact(piece)):
                # without its closing punctuation, which a quote often drops
                passage = squash(variant).rstrip(".!?;:, ")
                if len(passage) >= MIN_PASSAGE:
                    needles.add(passage)
        self.needles = sorted(n for n in needles if n.strip("[] "))
        self.passages = len(self.needles) - 2

    def __call__(self, text: str) -> bool:
        """True when ``text`` contains any of the note's needles."""
        if not text:
            return False
        haystack = squash(text)
        return any(needle in haystack for needle in self.needles)


@dataclass
class NoteReceipt:
    """What a note forget removed where, what remains, and the searches that show it."""

    episode_id: str
    title: str
    path: str
    dry_run: bool
    counts: list[ForgetCount] = field(default_factory=list)
    checks: list[ForgetCheck] = field(default_factory=list)
    file_present: bool = False
    tombstoned: bool = False
    conversations_citing: list[str] = field(default_factory=list)
    threads_citing: list[str] = field(default_factory=list)
    scrubbed: bool = False
    """Every store's files were scrubbed of the deleted bytes (not a condition of ``complete``:
    Weaviate cannot promise it)."""

    @property
    def complete(self) -> bool:
        """Nothing of the note remains in any store (always False for a dry run)."""
        if self.dry_run:
            return False
        return not any(c.remaining for c in self.counts) and not any(
            c.found_after for c in self.checks
        )


def _counts(before: NoteTraces, after: NoteTraces) -> list[ForgetCount]:
    def line(store: str, what: str, was: Iterable[object], now: Iterable[object]) -> ForgetCount:
        was_n, now_n = len(set(was)), len(set(now))
        return ForgetCount(store, what, max(0, was_n - now_n), now_n)

    return [
        line("telemetry", "turns quoting or citing it", before.turns, after.turns),
        line("telemetry", "retrieval rows of its chunks", before.retrievals, after.retrievals),
        line("llm_log", "model calls quoting it (text erased)", before.calls, after.calls),
        line("evidence", "answer bundles showing or quoting it", before.evidence, after.evidence),
    ]


class NoteForgetter:
    """Forgets notes through the retrieval stage and the orchestrator's store."""

    def __init__(self, eraser: NoteEraser, store: NoteTraceStore) -> None:
        self._eraser = eraser
        self._store = store

    async def forget(self, tenant: str, note: str, *, dry_run: bool = False) -> NoteReceipt:
        """Forgets ``note`` (episode id, vault path or title); see the module doc. A dry run
        counts what would go and changes nothing."""
        found = await self._eraser.forget_note(tenant, note, True)
        quotes = NoteQuotes(found.episode_id, found.title, found.text)
        chunk_ids = list(found.chunk_ids)

        def traces() -> NoteTraces:
            return self._store.note_traces(tenant, found.episode_id, chunk_ids, quotes)

        before = await asyncio.to_thread(traces)
        receipt = NoteReceipt(
            found.episode_id,
            found.title,
            found.path,
            dry_run,
            file_present=found.file_present,
            conversations_citing=before.conversations,
            threads_citing=before.threads,
        )
        if dry_run:
            nothing = NoteTraces([], [], [], [], [])
            receipt.counts = [  # what would go; all of it still there
                ForgetCount(c.store, c.what, c.removed, c.removed)
                for c in [*found.counts, *_counts(before, nothing)]
            ]
            receipt.checks = list(found.checks)
            return receipt
        await asyncio.to_thread(self._store.purge_note_traces, before)
        done = await self._eraser.forget_note(tenant, found.episode_id, False)
        after = await asyncio.to_thread(traces)
        receipt.counts = list(done.counts) + _counts(before, after)
        receipt.checks = [
            *done.checks,
            ForgetCheck(
                "orchestrator",
                "telemetry, LLM log and evidence bundles searched for its episode id, [[title]], "
                f"chunk ids and {quotes.passages} passages of its text",
                len(before.turns)
                + len(before.retrievals)
                + len(before.calls)
                + len(before.evidence),
                len(after.turns) + len(after.retrievals) + len(after.calls) + len(after.evidence),
            ),
        ]
        receipt.tombstoned = done.tombstoned
        ours = await asyncio.to_thread(self._store.scrub)
        receipt.scrubbed = done.scrubbed and ours
        return receipt
