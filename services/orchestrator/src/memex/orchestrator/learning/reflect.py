"""The learning loop (issue 37, docs/reflect.md): beliefs derived from the person's own notes.

``Reflector.reflect`` lists the notes of a window (newest first, at most ``max_episodes``), holds
back the sensitive ones the reasoner may not see (SPEC B3, the same rule as ask), and sends the
rest, a few at a time, to the reasoner through the audited path (SPEC B4, purpose ``reflect``),
asking for a small JSON list of conclusions, each with quotes of the notes it rests on and of any
note that disagrees. Each quote is graded against its note (``beliefs.graded``, SPEC B10); a
conclusion without one verbatim or close quote is dropped, and so is one that states a specific
none of the notes it quotes holds (the claim check of an answer, ``unheld``), or one the person
rejected on the same evidence; the rest are written as beliefs records through retrieval,
contested when a newer note disagrees. After each call's reply the model is asked, in the same
conversation, which of the earlier beliefs its notes may speak to (``beliefs.earlier``: those
resting on older notes that share most words with them) a note says otherwise than; a quote of a
newer note against one, graded as any quote is, makes it contested (``beliefs.against``).
What a call says and how its reply is read are ``learning/reflect_prompt.py``'s.
Only notes feed it: the assistant's replies are never memory (SPEC B11), and the beliefs
collection itself is not read back as evidence.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.learning import beliefs as b
from memex.orchestrator.learning.reflect_prompt import (
    CONTRADICTS_SCHEMA,
    INSTRUCTIONS,
    MAX_AGAINST_TOKENS,
    SCHEMA,
    batches,
    earlier_question,
    prompt,
    read_reply,
    unheld,
)
from memex.orchestrator.memory.items import Note
from memex.orchestrator.memory.policy import check_count, scope
from memex.orchestrator.ports import BeliefMemory, ChatMessage, GenerateOptions
from memex.orchestrator.record.audit import AuditedReasoner, tenant_var
from memex.orchestrator.record.redaction import Sensitive, marker
from memex.orchestrator.turn.pipeline import Sensitivity
from memex.shared.errors import FailedPrecondition, InvalidArgument, NotFound

log = logging.getLogger(__name__)

PURPOSE = "reflect"
MAX_EPISODES = 200


@dataclass
class ReflectReport:
    """What one run did."""

    episodes_read: int = 0
    episodes_withheld: int = 0
    model_calls: int = 0
    proposed: int = 0
    dropped_unquoted: int = 0
    dropped_unsupported: int = 0
    dropped_rejected: int = 0
    contested_earlier: int = 0
    unreadable: int = 0
    beliefs: list[b.Belief] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def quotes(self) -> int:
        """Supporting quotes of the beliefs made."""
        return sum(len(x.evidence) for x in self.beliefs)

    @property
    def quotes_verbatim(self) -> int:
        """Those graded verbatim."""
        return sum(1 for x in self.beliefs for e in x.evidence if e.support == "verbatim")


class Reflector:
    """Makes beliefs (reflect) and lets the person review them (list, confirm, reject, forget)."""

    def __init__(
        self,
        memory: BeliefMemory,
        reasoner: AuditedReasoner,
        sensitivity: Sensitivity,
        settings: OrchestratorSettings,
    ) -> None:
        self._memory = memory
        self._reasoner = reasoner
        self._sensitivity = sensitivity
        self._settings = settings
        self._running: set[str] = set()

    async def _all(self, tenant: str) -> list[b.Belief]:
        records = await self._memory.records(tenant, b.COLLECTION, [], "", 1000)
        return [b.from_record(r) for r in records]

    async def reflect(
        self,
        tenant: str,
        *,
        since: str = "",
        until: str = "",
        max_episodes: int = 0,
        include_sensitive: bool = False,
    ) -> ReflectReport:
        """One run over the notes of ``since``..``until`` (default: the last ``reflect_days``).
        FailedPrecondition while another run for the tenant is going."""
        s = self._settings
        check_count(max_episodes, "max_episodes", MAX_EPISODES)
        if not since and s.reflect_days:
            since = (dt.date.today() - dt.timedelta(days=s.reflect_days)).isoformat()
        window = scope(tenant, since=since, until=until)  # checks the dates
        if tenant in self._running:
            raise FailedPrecondition("a reflect run for this tenant is going; wait for it")
        self._running.add(tenant)
        tenant_var.set(tenant)
        started = time.perf_counter()
        try:
            report = await self._reflect(
                tenant,
                window.since,
                window.until,
                max_episodes or s.reflect_max_episodes,
                include_sensitive,
            )
        finally:
            self._running.discard(tenant)
        report.seconds = time.perf_counter() - started
        return report

    async def _reflect(
        self, tenant: str, since: str, until: str, limit: int, include_sensitive: bool
    ) -> ReflectReport:
        s, report = self._settings, ReflectReport()
        listed = await self._memory.list_notes(tenant, since, until, limit)
        hides = self._sensitivity.hides_sensitive or not include_sensitive
        shown = [n for n in listed if not (n.sensitive and hides)]
        report.episodes_withheld = len(listed) - len(shown)
        notes = await asyncio.gather(*(self._memory.note(tenant, n.episode_id) for n in shown))
        # Oldest first, so that "newer" reads down the prompt as it does in time.
        notes = sorted((n for n in notes if n.text.strip()), key=lambda n: (n.date, n.path))
        report.episodes_read = len(notes)
        known = {x.id: x for x in await self._all(tenant)}
        rejected = [x for x in known.values() if x.status == "rejected"]
        today = dt.date.today().isoformat()
        made: dict[str, b.Belief] = {}
        for group in batches(notes, s.reflect_batch_chars, s.reflect_note_chars):
            asked_about = b.earlier([*known.values(), *made.values()], group, s.reflect_note_chars)
            reply = await self._ask(group)
            report.model_calls += 1
            found = read_reply(reply, group, self._reasoner.model, today)
            if found is None:
                report.unreadable += 1
                log.warning("reflect: a reply was not JSON; its %d notes gave nothing", len(group))
                continue
            report.proposed += len(found)
            write = []
            for belief in found:
                if not belief.evidence:
                    report.dropped_unquoted += 1
                elif unheld(belief, group):
                    report.dropped_unsupported += 1
                elif b.blocked(belief, rejected):
                    report.dropped_rejected += 1
                else:
                    old = made.get(belief.id) or known.get(belief.id)
                    belief = b.merged(old, belief) if old is not None and old.derived else belief
                    made[belief.id] = belief
                    write.append(belief)
            quoted: dict[str, list[b.Evidence]] = {}
            disagreeing = ""
            if asked_about:
                report.model_calls += 1
                try:
                    disagreeing = await self._ask_against(group, reply, asked_about)
                except FailedPrecondition as exc:
                    # A reply outside the schema (an engine that checks it says so): that call's
                    # question gave nothing; the beliefs the call made stand.
                    report.unreadable += 1
                    log.warning("reflect: the earlier beliefs' question gave nothing: %s", exc)
            for belief, quote in b.against(disagreeing, group, asked_about):
                quoted.setdefault(belief.id, []).append(quote)
            for belief in asked_about:
                if belief.id in quoted:
                    current = made.get(belief.id) or belief
                    contested = b.contest(current, quoted[belief.id])
                    if contested.status == "contested" and current.status != "contested":
                        report.contested_earlier += 1
                    made[belief.id] = contested
                    write.append(contested)
            if write:  # written as each call ends: a run cut short keeps what it made
                await self._memory.upsert_records(tenant, [x.record() for x in write])
        report.beliefs = list(made.values())
        log.info(
            "reflect: %d notes read (%d withheld), %d calls, %d proposed, %d beliefs written",
            report.episodes_read,
            report.episodes_withheld,
            report.model_calls,
            report.proposed,
            len(report.beliefs),
        )
        return report

    def _messages(self, notes: Sequence[Note]) -> list[ChatMessage]:
        return [
            ChatMessage("system", INSTRUCTIONS),
            ChatMessage("user", prompt(notes, self._settings.reflect_note_chars)),
        ]

    async def _complete(
        self,
        notes: Sequence[Note],
        messages: list[ChatMessage],
        schema: Mapping[str, object],
        max_tokens: int,
    ) -> str:
        secret = [Sensitive(marker(n.episode_id, ""), (n.text,)) for n in notes if n.sensitive]
        return await self._reasoner.complete(
            purpose=PURPOSE,
            persona=PURPOSE,
            messages=messages,
            options=GenerateOptions(
                max_tokens=max_tokens,
                temperature=0.0,
                json_schema=json.dumps(schema),
            ),
            sensitive_texts=secret,
        )

    async def _ask(self, notes: Sequence[Note]) -> str:
        return await self._complete(
            notes, self._messages(notes), SCHEMA, self._settings.reflect_max_tokens
        )

    async def _ask_against(
        self, notes: Sequence[Note], reply: str, shown: Sequence[b.Belief]
    ) -> str:
        """Which of ``shown`` a note of the call says otherwise than: asked after its reply in
        the same conversation, so the model reads only the question (the rest is the prompt
        the engine just read, kept in its cache)."""
        messages = [
            *self._messages(notes),
            ChatMessage("assistant", reply),
            ChatMessage("user", earlier_question(shown)),
        ]
        limit = min(self._settings.reflect_max_tokens, MAX_AGAINST_TOKENS)
        return await self._complete(notes, messages, CONTRADICTS_SCHEMA, limit)

    async def list(
        self,
        tenant: str,
        *,
        include_sensitive: bool = False,
        include_rejected: bool = False,
        limit: int = 0,
    ) -> list[b.Belief]:
        """The beliefs, newest first; sensitive and rejected ones only when asked."""
        check_count(limit, "limit", 1000)
        kept = [
            x
            for x in await self._all(tenant)
            if (include_sensitive or not x.sensitive)
            and (include_rejected or x.status != "rejected")
        ]
        kept.sort(key=lambda x: (x.date, x.id), reverse=True)
        return kept[: limit or 100]

    async def _derived(self, tenant: str, belief_id: str) -> b.Belief:
        if not belief_id.strip():
            raise InvalidArgument("id is empty: give a belief id (`memex beliefs list` shows them)")
        found = await self._memory.records(tenant, b.COLLECTION, [("id", "eq", belief_id)], "", 1)
        if not found:
            raise NotFound(f"no belief with id {belief_id!r} (`memex beliefs list` shows them)")
        belief = b.from_record(found[0])
        if not belief.derived:
            raise FailedPrecondition(
                f"belief {belief_id!r} comes from the vault's records/beliefs.jsonl: edit it there"
            )
        return belief

    async def review(self, tenant: str, belief_id: str, verdict: str) -> b.Belief:
        """Confirms (active, confirmed) or rejects (kept as rejected, never briefed, not made
        again from the same evidence) a derived belief."""
        if verdict not in ("confirm", "reject"):
            raise InvalidArgument("verdict must be confirm or reject")
        belief = await self._derived(tenant, belief_id)
        if verdict == "confirm":
            belief = replace(belief, status="active", confirmed=True)
        else:
            belief = replace(belief, status="rejected", confirmed=False)
        await self._memory.upsert_records(tenant, [belief.record()])
        return belief

    async def forget(self, tenant: str, belief_id: str) -> int:
        """Deletes a derived belief (a rejected one may then be made again)."""
        await self._derived(tenant, belief_id)
        return await self._memory.delete_records(tenant, b.COLLECTION, [belief_id])
