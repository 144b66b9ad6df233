"""The stream filter between the model and the client (SPEC B9).

It drops everything inside ``<think>…</think>`` (an unclosed tag drops the rest of the reply),
diverts everything from ``@@CITATIONS@@`` on into a buffer, and holds back any suffix that could
still become either marker, so no fragment of a marker reaches the client whatever the chunk
boundaries. Leading whitespace of the visible reply (what models leave after ``</think>``) is
dropped too.
"""

from __future__ import annotations

import re
from enum import Enum

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
CITATIONS_MARKER = "@@CITATIONS@@"


class _Mode(Enum):
    VISIBLE = "visible"
    THINKING = "thinking"
    CITATIONS = "citations"


def _held_suffix(text: str, *markers: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of one of ``markers``."""
    longest = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text)), longest, -1):
            if text.endswith(marker[:size]):
                longest = size
                break
    return longest


class StreamFilter:
    """Feed model chunks in; get back only the text the client may see, as soon as it is safe."""

    def __init__(self) -> None:
        self._mode = _Mode.VISIBLE
        self._pending = ""
        self._started = False  # whether visible text other than whitespace was emitted
        self.citations_text = ""

    @property
    def in_citations(self) -> bool:
        """True once the citations marker was seen."""
        return self._mode is _Mode.CITATIONS

    def feed(self, chunk: str) -> str:
        """Takes the next piece of model output; returns the visible text now safe to send."""
        self._pending += chunk
        out: list[str] = []
        while self._pending:
            if self._mode is _Mode.CITATIONS:
                self.citations_text += self._pending
                self._pending = ""
            elif self._mode is _Mode.THINKING:
                end = self._pending.find(THINK_CLOSE)
                if end < 0:
                    keep = _held_suffix(self._pending, THINK_CLOSE)
                    self._pending = self._pending[len(self._pending) - keep :]
                    break
                self._pending = self._pending[end + len(THINK_CLOSE) :]
                self._mode = _Mode.VISIBLE
            else:
                think = self._pending.find(THINK_OPEN)
                marker = self._pending.find(CITATIONS_MARKER)
                hits = [
                    (i, tag)
                    for i, tag in ((think, THINK_OPEN), (marker, CITATIONS_MARKER))
                    if i >= 0
                ]
                if not hits:
                    keep = _held_suffix(self._pending, THINK_OPEN, CITATIONS_MARKER)
                    out.append(self._pending[: len(self._pending) - keep])
                    self._pending = self._pending[len(self._pending) - keep :]
                    break
                index, tag = min(hits)
                out.append(self._pending[:index])
                self._pending = self._pending[index + len(tag) :]
                self._mode = _Mode.THINKING if tag == THINK_OPEN else _Mode.CITATIONS
        return self._visible("".join(out))

    def finish(self) -> str:
        """Ends the stream: held-back text that never became a marker is released (unless it was
        inside an unclosed think block, which is dropped)."""
        rest = self._pending if self._mode is _Mode.VISIBLE else ""
        if self._mode is _Mode.CITATIONS:
            self.citations_text += self._pending
        self._pending = ""
        return self._visible(rest)

    def _visible(self, text: str) -> str:
        if not self._started:
            text = text.lstrip()
            self._started = bool(text)
        return text


class RepeatGuard:
    """Notices a small model looping: the same sentence written again.

    Tiny models fall into cycles of one or two sentences until their token budget runs out
    (SmolLM2 streamed the same two sentences for 28 s). Fed the visible text, ``feed`` says when
    a finished sentence of at least ``min_chars`` repeats an earlier one; the caller then stops
    the model and keeps the text before the repeat (``kept``).
    """

    def __init__(self, min_chars: int = 24) -> None:
        self._min = min_chars
        self._text = ""
        self._checked = 0
        self._seen: set[str] = set()
        self.kept = ""

    def feed(self, text: str) -> bool:
        """True once the text has started repeating itself."""
        self._text += text
        for match in _SENTENCE.finditer(self._text, self._checked):
            sentence = " ".join(match.group(1).split()).casefold()
            if len(sentence) >= self._min:
                if sentence in self._seen:
                    self.kept = self._text[: match.start(1)].rstrip()
                    return True
                self._seen.add(sentence)
            self._checked = match.end()
        self.kept = self._text
        return False


_SENTENCE = re.compile(r"\s*([^.!?\n]+[.!?\n])")
