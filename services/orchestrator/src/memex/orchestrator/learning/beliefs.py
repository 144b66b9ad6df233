"""Beliefs as the learning loop makes and keeps them (issue 37, docs/reflect.md); no I/O.

A belief is a record of the ``beliefs`` collection, so search's beliefs channel finds it and the
briefing shows it in its own labelled block (SPEC B5-B7). The learning loop's beliefs carry
``derived_by: "reflect"``; the vault's own (``records/beliefs.jsonl``) are read the same way but
only the vault changes them. A belief's fields: ``statement``, ``status`` (active, contested,
rejected), ``confidence``, ``evidence`` and ``contradicted_by`` (quotes with their note and grade),
``confirmed``, ``created`` (the day it was last derived), ``model`` and ``evidence_key``.

Quotes are graded by citation policing's own rule (SPEC B10, ``citations.grade``); a paraphrase
is kept as evidence only when it is close: most of its content words stand in one sentence of
the note. A rejected belief stays as a record whose status keeps it out of every briefing, and
a conclusion like it resting on no evidence beyond its evidence is not made again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from memex.orchestrator.answer.citations import grade
from memex.orchestrator.answer.lexical import coverage, segments, squash, terms
from memex.orchestrator.memory.items import Note, Record, Support

COLLECTION = "beliefs"
DERIVED_BY = "reflect"
Status = Literal["active", "contested", "rejected"]
STATUSES: tuple[Status, ...] = ("active", "contested", "rejected")
CLOSE = 0.75  # share of a paraphrase's content words that one sentence of its note must hold
MIN_TERMS = 3  # content words a quote needs to show anything
SAME_STATEMENT = 0.8  # Jaccard of content terms above which two statements say the same
MAX_EARLIER = 5  # earlier beliefs one reflect call is shown, to say which its notes disagree with
MIN_SHARED = 2  # content words an earlier belief shares with a call's notes to be shown to it


@dataclass(frozen=True)
class Evidence:
    """One quote of one note, graded against the note's text."""

    episode_id: str
    title: str
    date: str
    quote: str
    support: Support

    def fields(self) -> dict[str, Any]:
        """As stored in the record."""
        return {
            "episode_id": self.episode_id,
            "title": self.title,
            "date": self.date,
            "quote": self.quote,
            "support": self.support,
        }


@dataclass(frozen=True)
class Belief:
    """A conclusion about the person, with what it rests on."""

    id: str
    statement: str
    status: Status
    confidence: float
    evidence: tuple[Evidence, ...]
    contradicted_by: tuple[Evidence, ...] = ()
    confirmed: bool = False
    date: str = ""
    model: str = ""
    sensitive: bool = False
    derived: bool = True

    @property
    def episodes(self) -> frozenset[str]:
        """The notes it rests on."""
        return frozenset(e.episode_id for e in self.evidence)

    def record(self) -> Record:
        """The belief as a record of the beliefs collection."""
        fields: dict[str, Any] = {
            "id": self.id,
            "statement": self.statement,
            "status": self.status,
            "confidence": round(self.confidence, 2),
            "evidence": [e.fields() for e in self.evidence],
            "contradicted_by": [e.fields() for e in self.contradicted_by],
            "confirmed": self.confirmed,
            "created": self.date,
            "model": self.model,
            "derived_by": DERIVED_BY,
            "evidence_key": evidence_key(self.statement, self.episodes),
        }
        if self.sensitive:
            fields["sensitive"] = True
        return Record(COLLECTION, self.id, fields, f"{COLLECTION}:{self.id}", self.sensitive)


def _evidence(raw: Any) -> tuple[Evidence, ...]:
    out = []
    for entry in raw if isinstance(raw, list) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get("quote"), str):
            support = str(entry.get("support") or "paraphrase")
            out.append(
                Evidence(
                    str(entry.get("episode_id") or ""),
                    str(entry.get("title") or ""),
                    str(entry.get("date") or ""),
                    str(entry["quote"]),
                    support if support in ("verbatim", "paraphrase") else "paraphrase",  # type: ignore[arg-type]
                )
            )
    return tuple(out)


def from_record(record: Record) -> Belief:
    """A beliefs record as a belief (a vault belief without the loop's fields reads as active,
    undated evidence and all)."""
    f = record.fields
    status = str(f.get("status") or "active").casefold()
    confidence = f.get("confidence")
    return Belief(
        id=record.id,
        statement=str(f.get("statement") or f.get("text") or f.get("title") or ""),
        status=status if status in STATUSES else "active",
        confidence=float(confidence) if isinstance(confidence, int | float) else 0.5,
        evidence=_evidence(f.get("evidence")),
        contradicted_by=_evidence(f.get("contradicted_by")),
        confirmed=f.get("confirmed") is True,
        date=record.date,
        model=str(f.get("model") or ""),
        sensitive=record.sensitive,
        derived=f.get("derived_by") == DERIVED_BY,
    )


def statement_terms(statement: str) -> frozenset[str]:
    """A statement's content terms, for telling two wordings of one conclusion apart."""
    return frozenset(terms(statement))


def belief_id(statement: str) -> str:
    """The id a statement's belief gets: the same wording (case and spacing aside) keeps it."""
    digest = hashlib.sha256(squash(statement).encode("utf-8")).hexdigest()
    return f"reflect-{digest[:16]}"


def evidence_key(statement: str, episodes: Iterable[str]) -> str:
    """A stable digest of a statement and the notes it rests on (kept for audits and tools)."""
    text = squash(statement) + "\n" + "\n".join(sorted(set(episodes)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def same_statement(a: str, b: str) -> bool:
    """Whether two statements say the same: equal when squashed, or nearly the same content
    terms (a small model rewords "sleeps badly" as "sleeps poorly" between runs rarely, but
    reorders and re-punctuates often)."""
    if squash(a) == squash(b):
        return True
    ta, tb = statement_terms(a), statement_terms(b)
    return bool(ta and tb) and len(ta & tb) / len(ta | tb) >= SAME_STATEMENT


def blocked(candidate: Belief, rejected: Sequence[Belief]) -> bool:
    """Whether the person already rejected this conclusion on this evidence: a rejected belief
    says the same and rests on every note the candidate rests on. New evidence lets it back."""
    return any(
        same_statement(candidate.statement, r.statement) and candidate.episodes <= r.episodes
        for r in rejected
    )


def graded(quote: str, note_text: str) -> Support | None:
    """The quote's grade against its note (SPEC B10, as the model claims verbatim), or None when
    it is no evidence: a paraphrase that is not close, or a quote of under ``MIN_TERMS`` content
    words."""
    wanted = terms(quote)
    if len(set(wanted)) < MIN_TERMS:
        return None  # "Slept" is in the note, and shows nothing
    support = grade("verbatim", quote, note_text)
    if support == "verbatim":
        return support
    best = max((coverage(wanted, terms(s.text)) for s in segments(note_text)), default=0.0)
    return "paraphrase" if best >= CLOSE else None


def contested(evidence: Sequence[Evidence], against: Sequence[Evidence]) -> bool:
    """A newer note disagrees: a contradicting note dated after every supporting one."""
    newest = max((e.date for e in evidence), default="")
    return any(a.date > newest for a in against)


def merged(old: Belief, new: Belief) -> Belief:
    """A belief derived again: the evidence of both runs, the person's confirmation kept, and
    the status recomputed (a confirmed belief a newer note disagrees with is contested)."""

    def union(a: Sequence[Evidence], b: Sequence[Evidence]) -> tuple[Evidence, ...]:
        seen: dict[tuple[str, str], Evidence] = {}
        for e in (*a, *b):
            seen.setdefault((e.episode_id, squash(e.quote)), e)
        return tuple(seen.values())

    evidence = union(old.evidence, new.evidence)
    against = union(old.contradicted_by, new.contradicted_by)
    status: Status = "contested" if contested(evidence, against) else "active"
    return replace(
        new,
        evidence=evidence,
        contradicted_by=against,
        status=status,
        confirmed=old.confirmed,
        confidence=max(old.confidence, new.confidence) if status == "active" else new.confidence,
        sensitive=old.sensitive or new.sensitive,
    )


def quotes(raw: object, notes: Sequence[Note]) -> tuple[Evidence, ...]:
    """The model's quotes (``{"note": N, "quote": ...}``, N counting ``notes`` from 1) that name
    a note it was shown and hold up against it (``graded``), as evidence."""
    kept: dict[tuple[str, str], Evidence] = {}
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, dict):
            continue
        number, quote = entry.get("note"), entry.get("quote")
        if not isinstance(number, int) or not isinstance(quote, str):
            continue
        if not 1 <= number <= len(notes):
            continue  # a note it was not shown: dropped, as an ungrounded citation is
        note = notes[number - 1]
        support = graded(quote, note.text)
        if support is not None:
            quote = " ".join(quote.split())
            kept.setdefault(
                (note.episode_id, quote.casefold()),
                Evidence(note.episode_id, note.title, note.date, quote, support),
            )
    return tuple(kept.values())


def _newest(evidence: Sequence[Evidence]) -> str:
    return max((e.date for e in evidence), default="")


def earlier(beliefs: Sequence[Belief], notes: Sequence[Note], note_chars: int) -> list[Belief]:
    """The beliefs a call over ``notes`` is asked about: derived, active, not sensitive (a call
    may go to a remote reasoner), resting only on notes older than the newest of them, and
    sharing at least ``MIN_SHARED`` content words with their text; the ``MAX_EARLIER`` sharing
    most. A note a belief rests on says nothing against it, and an older one cannot contest it
    (``beliefs.contested``)."""
    newest = max((n.date for n in notes), default="")
    words = set(terms(" ".join(n.text[:note_chars] for n in notes)))
    candidates = {
        x.id: x
        for x in beliefs
        if x.derived
        and x.status == "active"
        and not x.sensitive
        and x.evidence
        and _newest(x.evidence) < newest
    }.values()
    shared = [(len(statement_terms(x.statement) & words), x) for x in candidates]
    ranked = sorted(shared, key=lambda pair: pair[0], reverse=True)  # stable: ties keep order
    return [x for n, x in ranked if n >= MIN_SHARED][:MAX_EARLIER]


def against(
    text: str, notes: Sequence[Note], shown: Sequence[Belief]
) -> list[tuple[Belief, Evidence]]:
    """The quotes of a reply's ``contradicts`` that hold against their note (graded as any
    quote, ``beliefs.graded``) and come from a note newer than every one the earlier belief
    they name rests on: each with that belief."""
    try:
        value = json.loads(text, strict=False)
    except ValueError:
        return []
    entries = value.get("contradicts") if isinstance(value, dict) else None
    found = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("belief"), int):
            continue
        if not 1 <= entry["belief"] <= len(shown):
            continue  # a conclusion it was not shown
        belief = shown[entry["belief"] - 1]
        for quote in quotes([entry], notes):
            if quote.date > _newest(belief.evidence):
                found.append((belief, quote))
    return found


def contest(belief: Belief, quotes: Sequence[Evidence]) -> Belief:
    """``belief`` with newer notes' ``quotes`` against it: contested, its confidence capped as
    a contested conclusion's, the person's confirmation kept."""
    updated = merged(belief, replace(belief, contradicted_by=tuple(quotes)))
    if updated.status == "contested":
        updated = replace(updated, confidence=min(updated.confidence, 0.5))
    return updated
