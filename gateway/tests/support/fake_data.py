"""The fixed data the fake orchestrator (``fakes``) answers with: its cited answer and chat reply,
its one memory item, its logged asks, its evidence bundle and its personas; and what its parts
share: the servicer context type, how a stream learns it was cancelled, and the day refused as
being after today (``FUTURE``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from memex.common.v1 import common_pb2
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.shared.errors import InvalidArgument

Context = grpc.aio.ServicerContext[Any, Any]
# How a streaming handler learns its call was cancelled: CancelledError while it awaits, but
# GeneratorExit at its `yield` when grpc.aio was cancelled while sending the last message (the
# handler task dies outside the generator, which is then closed).
STREAM_CANCELLED = (asyncio.CancelledError, GeneratorExit)
STAMP = "2026-03-01T10:00:00Z"
CITATION = common_pb2.Citation(
    ref="[[Flat lease]]",
    item_id="chunk-1",
    episode_id="ep-1",
    quote="return £1,030",
    support=common_pb2.SUPPORT_VERBATIM,
    path="home/Flat lease.md",
)
ITEM = pb.MemoryItem(
    id="chunk-1",
    kind=pb.ITEM_KIND_CHUNK,
    text="Graham agreed to return £1,030 of the deposit.",
    citation="[[Flat lease]]",
    provenance=common_pb2.Provenance(episode_id="ep-1", date="2026-02-01", title="Flat lease"),
    channel_scores=[common_pb2.ChannelScore(channel=common_pb2.CHANNEL_VECTOR, rank=1, score=0.9)],
    score=0.5,
)
REPLY = ["Graham returned ", "£1,030 ", "of the deposit."]
ANSWER_DRAFT = ["Graham returned ", "£1,030", "."]
LOGGED_ASKS = [
    pb.LoggedAsk(
        turn_id="turn-ask-2",
        question="How much did Graham return?",
        persona="analyst",
        model="fake",
        prompt_version="v1",
        answer="Graham returned £1,030.",
        cited_refs=["[[Flat lease]]"],
        latency_ms=12.5,
        created_at=STAMP,
    ),
    pb.LoggedAsk(
        turn_id="turn-ask-1",
        question="Where is the spare key?",
        persona="analyst",
        model="fake",
        prompt_version="v1",
        answer="I could not ground an answer to this in your notes, so I won't guess.",
        abstained=True,
        latency_ms=9.0,
        created_at=STAMP,
    ),
]

# The evidence bundle of the fake ask (turn_id "turn-ask"): one plain excerpt, one sensitive.
EVIDENCE: dict[str, Any] = {
    "format": "memex-evidence/1",
    "turn_id": "turn-ask",
    "kind": "ask",
    "created_at": STAMP,
    "question": "How much did Graham return?",
    "answer": "Graham returned £1,030.",
    "abstained": False,
    "model": "fake",
    "prompt_version": "v1",
    "persona": "analyst",
    "as_of": "",
    "conversation_id": "",
    "message_id": "",
    "thread_id": "",
    "reply_turn_id": "",
    "asked_as": "",
    "excerpts": [
        {
            "number": n, "ref": ref, "kind": "chunk", "item_id": f"chunk-{n}",
            "episode_id": f"ep-{n}", "title": ref[2:-2], "path": f"home/{ref[2:-2]}.md",
            "heading": "", "date": "2026-02-01", "collection": "", "sensitive": n == 2,
            "cited": n == 1, "text": text, "excerpt_sha256": "0" * 64, "note_version": "f" * 64,
            "chunk_start": 0, "chunk_end": len(text),
        }
        for n, ref, text in [
            (1, "[[Flat lease]]", "Graham agreed to return £1,030 of the deposit."),
            (2, "[[Therapy notes]]", "Talked about the flat."),
        ]
    ],
    "citations": [
        {
            "ref": "[[Flat lease]]", "item_id": "chunk-1", "episode_id": "ep-1",
            "path": "home/Flat lease.md", "quote": "return £1,030", "support": "verbatim",
            "source": 1,
        }
    ],
    "grounding": {"cited": 1, "grounded": 1, "score": 1.0, "dropped": []},
    "claim_check": {
        "specifics": [{"text": "£1,030", "kind": "figure", "verdict": "supported",
                       "ref": "[[Flat lease]]"}],
        "dropped_claims": [],
    },
    "left_out": {"excerpts": 0, "citations": 0, "answer": False},
}  # fmt: skip


PERSONAS = pb.ListPersonasResponse(
    personas=[
        pb.Persona(
            name="analyst",
            description="Cited, careful answers.",
            default_for_ask=True,
            chunks=10,
            channels=[common_pb2.CHANNEL_VECTOR, common_pb2.CHANNEL_KEYWORD],
            stages=["plan", "retrieve", "synthesize", "ground_check"],
            model_calls=2,
            system_prompt="Answer from the notes.",
        ),
        pb.Persona(
            name="friend",
            description="Warm and brief.",
            default_for_chat=True,
            chunks=12,
            channels=[common_pb2.CHANNEL_VECTOR],
            stages=["retrieve", "synthesize"],
            model_calls=1,
            system_prompt="Be kind.",
        ),
        pb.Persona(
            name="historian",
            description="A user's own persona: dates first.",
            chunks=15,
            channels=[common_pb2.CHANNEL_VECTOR, common_pb2.CHANNEL_OBSERVATIONS],
            time_window_days=365,
            stages=["retrieve", "synthesize"],
            model_calls=1,
            system_prompt="Dates first.",
        ),
    ],
    default_ask="analyst",
    default_chat="friend",
)


# A day the fakes refuse as the orchestrator refuses a day after today (docs/as-of.md).
FUTURE = "2999-01-01"


def check_as_of(as_of: str) -> None:
    if as_of == FUTURE:
        raise InvalidArgument(
            f"as_of {as_of} is after today (2026-12-07): memory has no future; "
            "leave as_of out to read it as it stands now"
        )
