"""The learning loop (issue 37) on the orchestrator's real engine and servicer, over real
in-process gRPC on port 0, with a scripted reasoner and an in-memory belief store standing in for
retrieval (the real retrieval and model are in tests/e2e/test_reflect.py)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import grpc
import pytest

from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.learning.beliefs import Evidence, earlier, from_record, graded
from memex.orchestrator.memory.items import Note, Record, ShownItem
from memex.orchestrator.ports import ChatMessage, GenerateOptions, NoteSummary, ReasonerInfo, Usage
from memex.orchestrator.queue.worker import seconds_until
from memex.orchestrator.service import Orchestrator, build_orchestrator
from memex.orchestrator.state.store import OrchestratorStore
from memex.orchestrator.turn.persona import load_personas
from memex.orchestrator.turn.pipeline import briefed_belief
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.shared.errors import FailedPrecondition, NotFound

from .fakes import Call, FakeMemory, ScriptedReasoner, serving

KEY = "own notes"  # a phrase of the reflect instructions: the scripted reply for that call

NOTES = [
    Note("ep-run1", "Long run", "journal/Long run.md", "2026-08-23", (), False,
         "Ran 18 km with Hannah. Morning runs feel easier than evening ones.\nSlept well."),
    Note("ep-run2", "Race day", "journal/Race day.md", "2026-10-11", (), False,
         "Race day. I ran the half in 1:58 and felt strong from the start."),
    Note("ep-late", "Evening run", "journal/Evening run.md", "2026-11-20", (), False,
         "Actually the evening run today felt easier than any morning run this year."),
    Note("ep-therapy", "Therapy", "health/Therapy.md", "2026-10-01", ("health",), True,
         "Talked through the panic attacks before races."),
]  # fmt: skip


@dataclass
class BeliefStore(FakeMemory):
    """Notes to list and read, and a beliefs collection to write, kept in memory."""

    notes: list[Note] = field(default_factory=lambda: list(NOTES))
    saved: dict[str, Record] = field(default_factory=dict)

    async def list_notes(
        self, tenant: str, since: str, until: str, limit: int
    ) -> list[NoteSummary]:
        kept = [n for n in self.notes if (not since or n.date >= since)]
        kept.sort(key=lambda n: n.date, reverse=True)
        return [
            NoteSummary(n.episode_id, n.title, n.path, n.date, n.tags, n.sensitive)
            for n in kept[:limit]
        ]

    async def note(self, tenant: str, episode_id: str) -> Note:
        for n in self.notes:
            if n.episode_id == episode_id:
                return n
        raise NotFound(episode_id)

    async def records(
        self, tenant: str, collection: str, filters: Any, sort: str, limit: int
    ) -> list[Record]:
        found = [r for r in self.saved.values() if r.collection == collection]
        for name, _, value in filters:
            found = [r for r in found if (r.id if name == "id" else r.fields.get(name)) == value]
        return found[:limit]

    async def upsert_records(self, tenant: str, records: Any) -> int:
        for r in records:
            self.saved[r.id] = r
        return len(records)

    async def delete_records(self, tenant: str, collection: str, ids: Any) -> int:
        return sum(self.saved.pop(i, None) is not None for i in ids)


def reply(*beliefs: dict[str, Any]) -> list[str]:
    text = json.dumps({"beliefs": list(beliefs)})
    return [text[:40], text[40:]]  # streamed in pieces, as the model does


MORNING_QUOTE = {"note": 1, "quote": "Morning runs feel easier than evening ones."}
MORNINGS = {
    "statement": "She finds morning runs easier than evening runs.",
    "confidence": 0.8,
    "evidence": [MORNING_QUOTE],
    "contradicted_by": [],
}
INVENTED = {
    "statement": "She hates running.",
    "confidence": 0.9,
    "evidence": [{"note": 2, "quote": "I never want to run again"}, {"note": 9, "quote": "x"}],
    "contradicted_by": [],
}


def build(
    tmp_path: Path, reasoner: ScriptedReasoner, memory: BeliefStore, **settings: Any
) -> Orchestrator:
    config = OrchestratorSettings(
        data_dir=tmp_path / "orchestrator",
        personas_dir=tmp_path / "personas",
        reflect_days=0,
        **settings,
    )
    info = ReasonerInfo("stub", "scripted", 8192, reasoner.local)
    return build_orchestrator(
        config,
        OrchestratorStore(config.state_location),
        memory,
        reasoner,
        info,
        load_personas(config.personas_dir),
        beliefs=memory,
    )


async def test_reflect_keeps_beliefs_whose_quotes_hold_and_audits_the_call(
    tmp_path: Path,
) -> None:
    memory = BeliefStore(items=[])
    reasoner = ScriptedReasoner({KEY: reply(MORNINGS, INVENTED)}, local=False)
    o = build(tmp_path, reasoner, memory)
    async with serving(o) as stub:
        r = await stub.Reflect(pb.ReflectRequest())
        rows = o.store.query("SELECT purpose, prompt FROM llm_log")
    # Sensitive notes never reach a remote reasoner (SPEC B3), nor the log.
    assert r.episodes_read == 3 and r.episodes_withheld == 1
    assert not any("panic" in c.messages[1].content for c in reasoner.calls)
    assert [row["purpose"] for row in rows] == ["reflect"] * r.model_calls  # SPEC B4
    assert r.proposed == 2 and r.dropped_unquoted == 1  # the invented quote and note 9 dropped
    [belief] = r.beliefs
    assert belief.statement == MORNINGS["statement"] and belief.status == "active"
    assert [(e.episode_id, e.support) for e in belief.evidence] == [("ep-run1", 1)]
    assert r.quotes == r.quotes_verbatim == 1
    stored = memory.saved[belief.id]
    assert stored.collection == "beliefs" and stored.fields["derived_by"] == "reflect"
    assert stored.fields["evidence"][0]["quote"] == "Morning runs feel easier than evening ones."


async def test_a_statement_with_a_specific_its_notes_do_not_hold_is_dropped(
    tmp_path: Path,
) -> None:
    """The claim check of an answer, on a belief: the quote holds, the 21 km does not."""
    stretched = {**MORNINGS, "statement": "She finds morning runs easier after 21 km with Hannah."}
    memory = BeliefStore(items=[])
    o = build(tmp_path, ScriptedReasoner({KEY: reply(stretched, MORNINGS)}), memory)
    async with serving(o) as stub:
        r = await stub.Reflect(pb.ReflectRequest())
    assert (r.proposed, r.dropped_unsupported, r.dropped_unquoted) == (2, 1, 0)
    assert [x.statement for x in r.beliefs] == [MORNINGS["statement"]]


async def test_a_newer_note_that_disagrees_makes_a_belief_contested(tmp_path: Path) -> None:
    against = {**MORNINGS, "contradicted_by": [{"note": 3, "quote": "the evening run today "
               "felt easier than any morning run this year"}]}  # fmt: skip
    older = {**MORNINGS, "statement": "Races go well for her.",
             "evidence": [{"note": 2, "quote": "felt strong from the start"}],
             "contradicted_by": [{"note": 1, "quote": "Ran 18 km with Hannah."}]}  # fmt: skip
    o = build(tmp_path, ScriptedReasoner({KEY: reply(against, older)}), BeliefStore(items=[]))
    async with serving(o) as stub:
        r = await stub.Reflect(pb.ReflectRequest())
        statuses = {b.statement: b.status for b in r.beliefs}
        assert statuses == {MORNINGS["statement"]: "contested", "Races go well for her.": "active"}
        # The skeptic lists contested beliefs; everyone else sees active ones only (SPEC B6).
        listed = await stub.ListBeliefs(pb.ListBeliefsRequest())
        assert {b.status for b in listed.beliefs} == {"active", "contested"}


async def test_a_rejected_belief_is_not_made_again_from_the_same_evidence(
    tmp_path: Path,
) -> None:
    memory = BeliefStore(items=[])
    reasoner = ScriptedReasoner({KEY: reply(MORNINGS)})
    o = build(tmp_path, reasoner, memory)
    async with serving(o) as stub:
        [made] = (await stub.Reflect(pb.ReflectRequest())).beliefs
        confirmed = await stub.ReviewBelief(
            pb.ReviewBeliefRequest(id=made.id, verdict=pb.BELIEF_VERDICT_CONFIRM)
        )
        assert confirmed.belief.confirmed and confirmed.belief.status == "active"
        await stub.ReviewBelief(
            pb.ReviewBeliefRequest(id=made.id, verdict=pb.BELIEF_VERDICT_REJECT)
        )
        again = await stub.Reflect(pb.ReflectRequest())
        assert again.dropped_rejected == 1 and not again.beliefs
        assert memory.saved[made.id].fields["status"] == "rejected"
        assert not (await stub.ListBeliefs(pb.ListBeliefsRequest())).beliefs
        shown = await stub.ListBeliefs(pb.ListBeliefsRequest(include_rejected=True))
        assert [b.status for b in shown.beliefs] == ["rejected"]
        # New evidence lets it back.
        more = {**MORNINGS, "evidence": [MORNING_QUOTE,
                {"note": 3, "quote": "felt easier than any morning run"}]}  # fmt: skip
        reasoner.replies[KEY] = reply(more)
        back = await stub.Reflect(pb.ReflectRequest())
        assert [b.status for b in back.beliefs] == ["active"]
        assert (await stub.ForgetBelief(pb.ForgetBeliefRequest(id=made.id))).deleted == 1
        assert made.id not in memory.saved


async def test_bad_requests_say_what_to_fix(tmp_path: Path) -> None:
    memory = BeliefStore(items=[])
    memory.saved["vault-1"] = Record("beliefs", "vault-1", {"statement": "x"}, "beliefs:vault-1")
    o = build(tmp_path, ScriptedReasoner({KEY: ["not json at all"]}), memory)
    async with serving(o) as stub:
        cases = [
            (stub.Reflect(pb.ReflectRequest(since="2026-13-01")), grpc.StatusCode.INVALID_ARGUMENT),
            (stub.Reflect(pb.ReflectRequest(max_episodes=500)), grpc.StatusCode.INVALID_ARGUMENT),
            (stub.ReviewBelief(pb.ReviewBeliefRequest(id="nope", verdict=pb.BELIEF_VERDICT_CONFIRM)),
             grpc.StatusCode.NOT_FOUND),
            (stub.ReviewBelief(pb.ReviewBeliefRequest(id="vault-1", verdict=pb.BELIEF_VERDICT_REJECT)),
             grpc.StatusCode.FAILED_PRECONDITION),
            (stub.ReviewBelief(pb.ReviewBeliefRequest(id="", verdict=pb.BELIEF_VERDICT_CONFIRM)),
             grpc.StatusCode.INVALID_ARGUMENT),
            (stub.ReviewBelief(pb.ReviewBeliefRequest(id="vault-1")),
             grpc.StatusCode.INVALID_ARGUMENT),
            (stub.ForgetBelief(pb.ForgetBeliefRequest(id="vault-1")),
             grpc.StatusCode.FAILED_PRECONDITION),
        ]  # fmt: skip
        for call, code in cases:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call
            assert caught.value.code() == code, caught.value.details()
        unreadable = await stub.Reflect(pb.ReflectRequest())
        assert unreadable.unreadable == unreadable.model_calls == 1 and not unreadable.beliefs


def test_a_quote_is_evidence_when_verbatim_or_close() -> None:
    text = "Ran 18 km with Hannah. Morning runs feel easier than evening ones.\nSlept well."
    assert graded("morning  runs feel EASIER than evening ones", text) == "verbatim"
    assert graded("Morning runs felt easier than the evening ones", text) == "paraphrase"
    assert graded("She prefers cycling to running", text) is None
    assert graded("Slept", text) is None


def test_plan_lookups_brief_beliefs_as_the_persona_allows() -> None:
    personas = load_personas(Path("/nonexistent"))
    item = ShownItem(item_id="beliefs:b", text="x", ref="beliefs:b", kind="belief")
    analyst, skeptic = personas.get("analyst", "ask"), personas.get("skeptic", "ask")
    for status, seen_by in [("active", {"analyst", "skeptic"}), ("contested", {"skeptic"}),
                            ("rejected", set())]:  # fmt: skip
        b = replace(item, attributes={"status": status})
        assert {p.name for p in (analyst, skeptic) if briefed_belief(b, p)} == seen_by


def test_the_nightly_run_waits_for_its_time() -> None:
    now = dt.datetime(2026, 5, 1, 3, 0, tzinfo=dt.UTC)
    assert seconds_until("03:30", now) == 1800
    assert seconds_until("03:00", now) == 24 * 3600  # the run that just ended does not repeat
    assert seconds_until("02:00", now) == 23 * 3600


async def test_a_later_run_contests_an_earlier_belief_a_newer_note_disagrees_with(
    tmp_path: Path,
) -> None:
    """Night one makes a belief from the August note; night two reads November's note, is
    shown the belief, and quotes the note against it: contested, confirmation kept."""
    memory = BeliefStore(items=[], notes=NOTES[:2])
    reasoner = ScriptedReasoner({KEY: reply(MORNINGS)})
    o = build(tmp_path, reasoner, memory)
    async with serving(o) as stub:
        first = await stub.Reflect(pb.ReflectRequest())
        [made] = first.beliefs
        assert first.model_calls == len(reasoner.calls) == 1  # nothing earlier to ask about
        await stub.ReviewBelief(
            pb.ReviewBeliefRequest(id=made.id, verdict=pb.BELIEF_VERDICT_CONFIRM)
        )
        memory.notes = list(NOTES)
        late = "the evening run today felt easier than any morning run this year"
        reasoner.replies[KEY] = [json.dumps({
            "beliefs": [],
            "contradicts": [
                {"belief": 1, "note": 3, "quote": late},  # November's note (notes oldest first)
                {"belief": 1, "note": 1, "quote": "Morning runs feel easier than evening ones."},
                {"belief": 1, "note": 3, "quote": "I stopped running in the evenings"},  # not in it
                {"belief": 7, "note": 3, "quote": late},  # a belief it was not shown
            ],
        })]  # fmt: skip
        r = await stub.Reflect(pb.ReflectRequest())
        # Asked after the call's reply, in the same conversation: the first prompt is not shown
        # them (a small model proposes them again as its own).
        notes_call, asked = reasoner.calls[-2:]
        assert [m.role for m in asked.messages] == ["system", "user", "assistant", "user"]
        assert asked.messages[:2] == notes_call.messages
        assert f"B1. {MORNINGS['statement']}" in asked.messages[3].content
        assert "B1." not in notes_call.messages[1].content
        assert r.model_calls == 2 and r.contested_earlier == 1
        [contested] = r.beliefs
        assert (contested.id, contested.status, contested.confirmed) == (made.id, "contested", True)
        assert contested.confidence <= 0.5
        assert [(e.episode_id, e.quote) for e in contested.contradicted_by] == [
            ("ep-late", late)
        ]  # the older note and the invented quote say nothing against it
        assert memory.saved[made.id].fields["status"] == "contested"
        # Contested, it is not asked about again.
        reasoner.replies[KEY] = reply()
        again = await stub.Reflect(pb.ReflectRequest())
        assert again.contested_earlier == 0 and again.model_calls == 1


def test_a_belief_is_asked_about_only_by_newer_notes_sharing_its_words() -> None:
    morning = replace(
        from_record(Record("beliefs", "x", {"derived_by": "reflect"}, "beliefs:x")),
        statement=str(MORNINGS["statement"]),
        evidence=(Evidence("ep-run1", "Long run", "2026-08-23", "Morning runs feel", "verbatim"),),
    )
    secret = replace(morning, id="y", sensitive=True)
    assert earlier([morning, secret], NOTES[2:3], 600) == [morning]  # never a sensitive one
    assert earlier([morning], NOTES[:1], 600) == []  # its own note is not newer
    assert earlier([morning], NOTES[1:2], 600) == []  # newer, but about a race, not mornings


@dataclass
class SchemaCheckingReasoner(ScriptedReasoner):
    """Refuses a reply outside the schema of the earlier beliefs' question, as an engine that
    checks JSON output does (the scripted reply holds no ``contradicts``)."""

    async def generate(
        self, messages: Sequence[ChatMessage], options: GenerateOptions, usage: list[Usage]
    ) -> AsyncGenerator[str, None]:
        if len(messages) == 4:  # the question after a reply
            self.calls.append(Call(list(messages), options))
            raise FailedPrecondition("the model's output does not match the schema")
        async for piece in super().generate(messages, options, usage):
            yield piece


async def test_an_unreadable_answer_about_earlier_beliefs_costs_only_that_answer(
    tmp_path: Path,
) -> None:
    memory = BeliefStore(items=[], notes=NOTES[:2])
    reasoner = SchemaCheckingReasoner({KEY: reply(MORNINGS)})
    o = build(tmp_path, reasoner, memory)
    async with serving(o) as stub:
        await stub.Reflect(pb.ReflectRequest())
        memory.notes = list(NOTES)
        r = await stub.Reflect(pb.ReflectRequest())
    assert (r.model_calls, r.unreadable, r.contested_earlier) == (2, 1, 0)
    assert [b.statement for b in r.beliefs] == [MORNINGS["statement"]]  # made again, kept
