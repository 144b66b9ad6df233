"""A model's reply on its way to the reader (SPEC B9), for ask and chat alike: ``ReplyStream``
drops ``<think>``, keeps a ``@@CITATIONS@@`` tail apart and cuts the reply at its first repeated
sentence; ``ClaimGate`` holds a sentence with a specific in it back until the claim check passes
it; ``RefStream`` shows source numbers as refs as they arrive. What the reader saw streamed is
what is stored: the whole reply is then read as one (``reading.read_reply``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memex.orchestrator.answer.claim_check import (
    NUMBER_WORD as _NUMBER_WORD,
)
from memex.orchestrator.answer.claim_check import unsupported, verdicts
from memex.orchestrator.answer.numbers import MARKER, marker_refs, named_by, sub_markers, tidy
from memex.orchestrator.answer.reading import Reading, read_reply
from memex.orchestrator.answer.sources import Source
from memex.orchestrator.answer.stream_filter import RepeatGuard, StreamFilter


class RefStream:
    """Rewrites source numbers as refs in streamed text, holding back what could still become a
    marker ("[", "[1,", "[[Flat De") so no raw number fragment reaches the reader."""

    _OPEN = re.compile(r"\[\[[^\[\]]{0,120}\]?$|\[[^\[\]]{0,24}$")

    def __init__(self, sources: Sequence[Source]) -> None:
        self._sources = list(sources)
        self._held = ""

    def feed(self, text: str) -> str:
        """What can be shown now of ``text`` (after what was held back). Trailing spaces are
        held too: the next piece may open with a marker that names nothing, or with a full
        stop, and the space then goes, as it does in the stored answer (``rewrite``)."""
        buffer = self._held + text
        open_marker = self._OPEN.search(buffer)
        cut = open_marker.start() if open_marker else len(buffer)
        done = self._rewrite(buffer[:cut])
        shown = done.rstrip(" \t")
        self._held = done[len(shown) :] + buffer[cut:]
        return shown

    def finish(self) -> str:
        """Whatever was still held back, rewritten."""
        rest, self._held = self._held, ""
        return self._rewrite(rest)

    def _rewrite(self, text: str) -> str:
        return tidy(sub_markers(text, lambda match: marker_refs(match, self._sources)))


class ClaimGate:
    """Holds a streamed sentence back from its first word that could be a specific (a figure, a
    code span, a flag, a name: anything but a plain word) until the sentence and the numbers
    after it are complete, then lets it through only if the claim check finds every specific
    in a source the answer has cited so far (all shown sources while it has cited none). So no
    unchecked specific reaches the reader; plain words still stream as they come. The stored
    answer is checked again as a whole (``read``)."""

    # A sentence is done at its end mark, with the numbers that close it ("fact. [2]"), once
    # the next sentence has begun; or at a line break.
    _END = re.compile(rf"[.!?](?:\s*(?:{MARKER.pattern}))*(?=\s+[^\s\[])|\n", re.IGNORECASE)
    _PLAIN = re.compile(r"[a-z]+(?:['\u2019-][a-z]+)*[,;:.!?]?|[A-Z][a-z]*(?:'[a-z]+)?[,;:]?")

    def __init__(self, sources: Sequence[Source], question: str = "", said: str = "") -> None:
        self._sources = list(sources)
        self._context = f"{question}\n{said}" if said else question
        self._cited: list[Source] = []
        self._shown_part = ""  # the current sentence's words already let through
        self._held = ""  # the rest of the current sentence, and what came after

    def feed(self, text: str) -> str:
        """What may be shown now of ``text``."""
        self._held += text
        out = []
        while (end := self._END.search(self._held)) is not None:
            sentence, self._held = self._held[: end.end()], self._held[end.end() :]
            out.append(self._settle(sentence))
        out.append(self._plain_lead())
        return "".join(out)

    def finish(self) -> str:
        """The last sentence, if it passes the check."""
        rest, self._held = self._held, ""
        return self._settle(rest) if rest else ""

    def _plain_lead(self) -> str:
        """The plain words at the start of what is held, while nothing specific came before
        them in the sentence; the last word is kept back (it may still grow)."""
        lead = 0
        for word in re.finditer(r"\S+\s+", self._held):
            text = word.group().strip()
            opening = not self._shown_part.strip() and word.start() == 0
            if (
                not self._PLAIN.fullmatch(text)
                or (text[0].isupper() and not opening)
                or _NUMBER_WORD.fullmatch(text.strip(",;:.!?"))
            ):
                break  # from here on the sentence waits for its check
            lead = word.end()
        released, self._held = self._held[:lead], self._held[lead:]
        self._shown_part += released
        return released

    def _settle(self, held: str) -> str:
        """The held rest of a finished sentence, or "" when a specific in it is unsupported."""
        sentence = self._shown_part + held
        self._shown_part = ""
        for match in MARKER.finditer(sentence):
            self._cited += named_by(match, self._sources)[0]
        cited = [s.checkable for s in dict.fromkeys(self._cited or self._sources)]
        claim = MARKER.sub(" ", sentence)
        return "" if unsupported(verdicts(claim, cited, self._context)) else held


class ReplyStream:
    """A model's reply on its way to the reader, for ask and chat alike: ``<think>`` dropped and a
    ``@@CITATIONS@@`` tail kept apart (SPEC B9), cut at the first repeated sentence, source
    numbers shown as refs as they arrive; then read as a whole (``read``)."""

    def __init__(self, sources: Sequence[Source], question: str = "", said: str = "") -> None:
        self._sources = list(sources)
        self._question = question
        self._said = said  # a chat's earlier messages: what they write is not a new claim
        self._filter = StreamFilter()
        self._guard = RepeatGuard()
        self._gate = ClaimGate(sources, question, said)
        self._refs = RefStream(sources)
        self.looping = False
        """The model started repeating itself: stop it (close its stream), feed no more."""

    @property
    def sources(self) -> list[Source]:
        """The numbered sources the reply may cite."""
        return self._sources

    def feed(self, piece: str) -> str:
        """What the reader may see now of ``piece``."""
        visible = self._filter.feed(piece)
        if not visible or self.looping:
            return ""
        if self._guard.feed(visible):
            self.looping = True
            return ""
        return self._refs.feed(self._gate.feed(visible))

    def finish(self) -> str:
        """Whatever was still held back, once the model has stopped."""
        rest = "" if self.looping else self._filter.finish()
        if rest and self._guard.feed(rest):
            rest = ""
        return self._refs.feed(self._gate.feed(rest) + self._gate.finish()) + self._refs.finish()

    def read(self) -> Reading:
        """The whole reply, grounded and graded (``read_reply``)."""
        return read_reply(
            self._guard.kept,
            self._filter.citations_text,
            self._sources,
            self._question,
            self._said,
        )
