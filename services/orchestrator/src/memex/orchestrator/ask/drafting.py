"""Writing and weighing an ask's answer (SPEC B1, B8, B10), for ``ask/asker.py``'s ``Asker``: the
model calls that write it, each streamed through a ``ReplyStream`` and read (``answer``; ``read``,
unstreamed; ``answer_parts``, one short call per part of a compound question the answer left out; a
persona's ``revise``), whether a first pass's answer stands and whether the whole briefing confirms
it (``stands``, ``confirms``), and the result settled from the reading: the answer, or an abstention
that names the closest notes (``settle``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncGenerator, Sequence

from memex.orchestrator.answer import conflicts
from memex.orchestrator.answer.abstention import abstain_reason, abstaining_answer
from memex.orchestrator.answer.briefing import part_messages, revise_messages
from memex.orchestrator.answer.claim_check import occurs_in
from memex.orchestrator.answer.grading import figures
from memex.orchestrator.answer.judging import informative, strength, unaddressed_parts
from memex.orchestrator.answer.lexical import squash, terms
from memex.orchestrator.answer.numbers import MARKER
from memex.orchestrator.answer.reading import Reading, read_reply
from memex.orchestrator.answer.sources import Source
from memex.orchestrator.answer.streams import ReplyStream
from memex.orchestrator.ask.events import AskResult, Draft
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.memory.items import ShownItem
from memex.orchestrator.metrics import timed
from memex.orchestrator.ports import ChatMessage, GenerateOptions
from memex.orchestrator.turn.generation import Generator
from memex.orchestrator.turn.persona import Persona

# Greedy: the same question over the same notes gets the same answer, so `memex eval --replay`
# shows what a change did rather than what sampling did.
ANSWER_TEMPERATURE = 0.0
FIRST_WORDS = "ask_first_words"  # the stage timing when an ask's first words reach the reader
MAX_PART_CALLS = 2  # parts of a compound question asked for again, at most, per ask


def _stated(reading: Reading) -> set[str]:
    """The specifics a reading states as fact (figures, code, flags, versions, names), folded."""
    held = {squash(s.text) for s in reading.specifics if s.verdict == "supported"}
    return held | figures(reading.claims)


def _as_cited(reading: Reading, sources: Sequence[Source]) -> str:
    """A part's reply as the whole answer is read again with it: as the model wrote it, or,
    when its source was attributed (it named none shown: "... `--force-with-lease`.
    [[force-with-lease]]"), without its markers and with the numbers of the sources attributed,
    so a marker that named nothing does not count against the whole answer's grounding."""
    if not reading.attributed:
        return reading.raw.strip()
    cited = {c.item_id for c in reading.citations}
    numbers = " ".join(f"[{s.number}]" for s in sources if s.item.item_id in cited)
    return f"{MARKER.sub('', reading.raw).strip()} {numbers}"


class Answerer:
    """Writes an ask's answer over the sources chosen, each call audited (the generator's), and
    weighs it against ask's abstention rules."""

    def __init__(self, generator: Generator, settings: OrchestratorSettings) -> None:
        self._generator = generator
        self._settings = settings

    def stands(self, question: str, reading: Reading, sources: list[Source]) -> bool:
        """Whether a first pass's answer is the answer: it would not abstain, and at least one
        citation holds half its claim or more (not only an inference)."""
        reason = abstain_reason(question, reading, sources, self._settings.abstain_below)
        return not reason and any(c.support != "inference" for c in reading.citations)

    def confirms(
        self, question: str, draft: Reading, whole: Reading, sources: list[Source]
    ) -> bool:
        """Whether the first pass's draft stays the answer after the whole briefing was read:
        that answer stands too, and either says the same (the same notes cited, the same
        figures) or rests on its sources less well than the draft does (inference against a
        paraphrase: "11 pieces survived" against the draft's "7 survived", which the note says
        word for word). A whole-briefing answer that would abstain replaces the draft only when
        the model declined (the notes do not answer: the draft was a guess); one that is only
        broken (uncited, cut by the claim check, off the question) says nothing against it,
        and replacing the draft with its abstention was 3 of the til vault's 64 answers.

        Nor does one that answers less of the question (a part of a compound question the draft
        answers, left out), or one that says nothing the draft does not, citing the draft's
        notes and neighbours beside them: read from the whole briefing, a small model cites
        every note on the topic ("caffeinate -d -i -t 600 ... [1], [2], [3], [4]") and answers
        a neighbour's question in place of one part; both cost citation precision on the til
        vault without adding a fact. One that cites the draft's notes and states all the draft
        states and more, written in their excerpts, replaces it (the `tiktoken` the draft left
        out)."""
        reason = abstain_reason(question, whole, sources, self._settings.abstain_below)
        if reason:
            return reason != "declined"
        if len(unaddressed_parts(question, whole)) > len(unaddressed_parts(question, draft)):
            return True
        drafted = {c.ref for c in draft.citations}
        cited = {c.ref for c in whole.citations}
        if drafted <= cited and _stated(whole) <= _stated(draft):
            return True
        added = _stated(whole) - _stated(draft)
        if cited == drafted and added and _stated(draft) <= _stated(whole):
            # All the draft says and more, from the same notes: the answer, when what it adds
            # is written in their excerpts ("1 May" read from "in May" and the note's date is
            # not; a lone digit is written anywhere).
            excerpts = [s.excerpt for s in sources if s.ref in cited]
            if any(len(x) > 1 and occurs_in(x, text) for x in added for text in excerpts):
                return False
        same = drafted == cited and figures(draft.claims) == figures(whole.claims)
        return same or strength(whole) < strength(draft)

    async def read(
        self,
        question: str,
        messages: list[ChatMessage],
        sources: list[Source],
        persona: Persona,
        withheld: list[ShownItem],
    ) -> Reading:
        """One unstreamed answer to ``messages`` over ``sources``, and what checking makes of
        it."""
        reading: Reading | None = None
        async for piece in self.answer(question, messages, sources, persona, withheld, None):
            if isinstance(piece, Reading):
                reading = piece
        assert reading is not None  # answer always ends with its reading
        return reading

    def settle(
        self, result: AskResult, question: str, reading: Reading, sources: list[Source]
    ) -> None:
        """Abstain unless the answer rests on a source (SPEC B10); name the closest notes."""
        result.grounding = reading.report
        reason = abstain_reason(question, reading, sources, self._settings.abstain_below)
        result.abstained = bool(reason)
        result.abstain_reason = reason
        if result.abstained:
            result.citations = []
            result.answer = abstaining_answer(sources)
        else:
            differ = conflicts.find(reading, sources, question)
            result.citations = conflicts.citations(differ, reading.citations)
            result.answer = (
                reading.answer
                + conflicts.said(differ)
                + "".join(
                    f"\n\nAs your note writes it: `{line}` {ref}" for line, ref in reading.to_type
                )
                + "".join(
                    f"\n\nYour notes don't answer this part: {part}"
                    for part in reading.unanswered_parts
                )
            )

    async def answer(
        self,
        question: str,
        messages: list[ChatMessage],
        sources: list[Source],
        persona: Persona,
        withheld: list[ShownItem],
        started: float | None,
    ) -> AsyncGenerator[Draft | Reading, None]:
        """Generate and filter, then police: streams the model's answer to ``question`` as
        Drafts, then yields what checking makes of it. The first words are timed from
        ``started`` (None: a revision, not timed)."""
        reply = ReplyStream(sources, question)
        generated = self._generator.stream(
            reply,
            purpose="ask_synthesize",
            persona=persona.name,
            messages=messages,
            options=GenerateOptions(
                max_tokens=self._settings.ask_max_tokens, temperature=ANSWER_TEMPERATURE
            ),
            withheld=withheld,
            first_words=FIRST_WORDS,
            started=started,
        )
        async with contextlib.aclosing(generated):
            async for text in generated:
                yield Draft(text)
        with timed("ground_check"):
            reading = reply.read()
        yield reading

    async def answer_parts(
        self,
        question: str,
        parts: list[str],
        reading: Reading,
        sources: list[Source],
        persona: Persona,
        withheld: list[ShownItem],
    ) -> Reading:
        """Asks again for each part of a compound question the answer left out, in one short
        call each over the same sources (the prompt starts as the answer's did, so the model
        reads only the part). An answer to the part that stands is read together with the
        first answer, the claim check and all; a part the model declines, or fills with what no
        source holds, is named as one the notes do not answer, never filled in."""
        unanswered = list(reading.unanswered_parts)
        for part in parts[:MAX_PART_CALLS]:
            extra = await self.read(
                question,
                part_messages(persona, sources, question, reading.answer, part),
                sources,
                persona,
                withheld,
            )
            stands = (
                extra.citations
                and not extra.main_unsupported
                and not abstain_reason(part, extra, sources, self._settings.abstain_below)
                and informative(f"{part}\n{reading.answer}", extra)  # not said again
            )
            if stands:
                whole = read_reply(
                    f"{reading.raw.rstrip()} {_as_cited(extra, sources)}", "", sources, question
                )
                if len(whole.claims) > len(reading.claims) and not abstain_reason(
                    question, whole, sources, self._settings.abstain_below
                ):
                    reading = whole
                    continue
            asked = set(terms(part))
            shares = asked & set(terms(reading.answer))
            if (extra.declined or extra.dropped_claims) and asked and not shares:
                # The notes do not say, or what the model wrote for it is in no source: said
                # plainly. Not when the answer shares a word with the part ("to show what
                # would be synced, add -v"): a sentence may answer it in words that tie it to
                # another part, and a small model declines a part it has just answered. Nor for
                # a part with no word of its own ("Why?"), for the same reason.
                unanswered.append(part)
        return dataclasses.replace(
            reading,
            unanswered_parts=tuple(dict.fromkeys([*reading.unanswered_parts, *unanswered])),
        )

    async def revise(
        self,
        question: str,
        sources: list[Source],
        persona: Persona,
        draft: Reading,
        withheld: list[ShownItem],
    ) -> Reading:
        weak = [c.ref for c in draft.citations if c.support == "inference"]
        problems = (
            f"{draft.report.grounded} of {draft.report.cited} source numbers named a source "
            f"shown; these did not: {', '.join(draft.report.dropped) or 'none'}; weakly "
            f"supported: {', '.join(weak) or 'none'}."
        )
        messages = revise_messages(persona, sources, question, draft.answer, problems)
        return await self.read(question, messages, sources, persona, withheld)
