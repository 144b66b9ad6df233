"""The evidence bundle of an answer (issue 37): one JSON document a person can keep or share.

It holds the question, the answer, every excerpt the model was shown (with the version of the note
it came from), the citations with their quotes and support grades, the claim check, the model, the
prompt version and the persona. ``build`` makes it when the answer is final (the ``Recorder`` stores
it with the telemetry turn, ``record/evidence_store.py``); ``readable`` is what a reader gets:
sensitive excerpts replaced by placeholders unless the request asked for them. docs/evidence.md
describes every field. No gRPC here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from memex.orchestrator.answer.sources import Source
from memex.orchestrator.memory import as_of
from memex.orchestrator.memory.items import Citation, GroundingReport
from memex.orchestrator.memory.policy import WITHHELD_HISTORY, WITHHELD_READ

FORMAT = "memex-evidence/1"
"""The bundle's format and version; a change that renames or drops a field bumps it."""

LEFT_OUT = "sensitive"
"""What a placeholder says of the excerpt or citation it stands for: only that one was left out,
and why."""


def sha256(text: str) -> str:
    """The SHA-256 of ``text`` as UTF-8, in hex: what anyone can recompute from the bundle."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _number(value: Any) -> int | None:
    """An offset as retrieval sends it (a JSON number, so a float), or None when absent."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def excerpt(source: Source, cited: bool) -> dict[str, Any]:
    """One numbered source as the bundle keeps it: the excerpt the model read, where it is from,
    and the version of the note it is from (retrieval's fingerprint of the note as indexed;
    "" for a record, which has none) beside the SHA-256 of the excerpt itself."""
    item = source.item
    return {
        "number": source.number,
        "ref": item.ref,
        "kind": item.kind,
        "item_id": item.item_id,
        "episode_id": item.episode_id,
        "title": item.title,
        "path": item.path,
        "heading": item.heading,
        "date": item.date,
        "collection": item.collection,
        "sensitive": item.sensitive,
        "cited": cited,
        "text": source.excerpt,
        "excerpt_sha256": sha256(source.excerpt),
        "note_version": str(item.attributes.get("note_version") or ""),
        "chunk_start": _number(item.attributes.get("start")),
        "chunk_end": _number(item.attributes.get("end")),
    }


def build(
    *,
    kind: str,
    question: str,
    answer: str,
    abstained: bool,
    model: str,
    prompt_version: str,
    persona: str,
    sources: Sequence[Source],
    citations: Sequence[Citation],
    report: GroundingReport | None,
    conversation_id: str | None = None,
    message_id: str = "",
) -> dict[str, Any]:
    """The bundle of a final answer (``turn_id`` and ``created_at`` are filled in when it is
    stored). ``kind`` is "ask" or "chat"; a queued turn's answer is an ask until its turn links
    it (``linked``)."""
    numbers = {s.item.item_id: s.number for s in sources}
    cited = {c.item_id for c in citations}
    report = report or GroundingReport(0, 0)
    return {
        "format": FORMAT,
        "turn_id": "",
        "kind": kind,
        "created_at": "",
        "question": question,
        "answer": answer,
        "abstained": abstained,
        "model": model,
        "prompt_version": prompt_version,
        "persona": persona,
        # The day whose memory answered, "" for the memory as it stood when asked (as_of.py).
        "as_of": as_of.wire(),
        "conversation_id": conversation_id or "",
        "message_id": message_id,
        "thread_id": "",
        "reply_turn_id": "",
        "asked_as": "",
        "asked_sensitive": False,
        "excerpts": [excerpt(s, s.item.item_id in cited) for s in sources],
        "citations": [
            {
                "ref": c.ref,
                "item_id": c.item_id,
                "episode_id": c.episode_id,
                "path": c.path,
                "quote": c.quote,
                "support": c.support,
                "source": numbers.get(c.item_id),
            }
            for c in citations
        ],
        "grounding": {
            "cited": report.cited,
            "grounded": report.grounded,
            "score": report.score,
            "dropped": list(report.dropped),
        },
        "claim_check": {
            "specifics": [
                {"text": s.text, "kind": s.kind, "verdict": s.verdict, "ref": s.ref}
                for s in report.specifics
            ],
            "dropped_claims": list(report.dropped_claims),
        },
        "left_out": {"excerpts": 0, "citations": 0, "answer": False},
    }


def linked(
    bundle: Mapping[str, Any],
    *,
    thread_id: str,
    reply_turn_id: str,
    question: str,
    asked_sensitive: bool,
) -> dict[str, Any]:
    """An ask's bundle as the answer to a queued turn: the turn's own question, and what the
    model was asked (the question with the thread's earlier turns) kept as ``asked_as``.
    ``asked_sensitive``: the turn let the model see sensitive notes, so the earlier answers in
    ``asked_as`` may carry them (``readable``)."""
    return {
        **bundle,
        "kind": "queued",
        "question": question,
        "asked_as": bundle["question"],
        "asked_sensitive": asked_sensitive,
        "thread_id": thread_id,
        "reply_turn_id": reply_turn_id,
    }


def readable(bundle: Mapping[str, Any], *, include_sensitive: bool) -> tuple[dict[str, Any], int]:
    """The bundle as a request may read it, and how many excerpts were left out.

    Without ``include_sensitive``, each excerpt of a sensitive item becomes a placeholder that
    keeps only its number and says one was left out, and so does each citation of one (its quote
    is the note's words). An answer that drew on a sensitive excerpt may repeat it, so it is
    left out too, with its claim check (answer text), as conversations are read (issue 11).
    So is ``asked_as`` of a queued turn that let the model see sensitive notes: the thread's
    earlier answers in it may have drawn on them (a bundle from before that was recorded is
    read the safe way)."""
    sensitive = {e["item_id"] for e in bundle["excerpts"] if e.get("sensitive")}
    asked = bundle.get("asked_as", "")
    if (
        not include_sensitive
        and bundle.get("asked_sensitive", True)
        and asked not in ("", bundle.get("question"))
    ):
        bundle = {**bundle, "asked_as": WITHHELD_HISTORY}
    if include_sensitive or not sensitive:
        return dict(bundle), 0
    excerpts = [
        {"number": e["number"], "left_out": LEFT_OUT} if e["item_id"] in sensitive else e
        for e in bundle["excerpts"]
    ]
    citations = [
        {"source": c["source"], "left_out": LEFT_OUT} if c["item_id"] in sensitive else c
        for c in bundle["citations"]
    ]
    left_citations = sum(1 for c in bundle["citations"] if c["item_id"] in sensitive)
    return {
        **bundle,
        "answer": WITHHELD_READ,
        "excerpts": excerpts,
        "citations": citations,
        "grounding": {**bundle["grounding"], "dropped": []},
        "claim_check": {"specifics": [], "dropped_claims": []},
        "left_out": {"excerpts": len(sensitive), "citations": left_citations, "answer": True},
    }, len(sensitive)


def texts(bundle: Mapping[str, Any]) -> Iterator[str]:
    """Every text of a stored bundle that could quote or name a note (for forgetting one)."""
    yield bundle.get("question", "")
    yield bundle.get("answer", "")
    yield bundle.get("asked_as", "")
    for e in bundle.get("excerpts", []):
        yield from (e.get(k, "") for k in ("text", "ref", "title", "path", "episode_id"))
    for c in bundle.get("citations", []):
        yield from (c.get(k, "") for k in ("quote", "ref", "path", "episode_id"))
    yield from bundle.get("claim_check", {}).get("dropped_claims", [])
