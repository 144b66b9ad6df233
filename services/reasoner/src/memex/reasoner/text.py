"""Stop strings on a stream of text pieces."""

from __future__ import annotations

from collections.abc import Sequence


class StopMatcher:
    """Cuts a streamed text at the first stop string, even one split across pieces.

    Text that might be the start of a stop string is held back until the next piece decides it,
    so no part of a stop string is ever streamed.
    """

    def __init__(self, stops: Sequence[str]) -> None:
        self._stops = [s for s in stops if s]
        self._pending = ""

    def feed(self, piece: str) -> tuple[str, bool]:
        """The text that is safe to stream now, and whether a stop string was reached."""
        if not self._stops:
            return piece, False
        text = self._pending + piece
        hits = [i for i in (text.find(stop) for stop in self._stops) if i >= 0]
        if hits:
            self._pending = ""
            return text[: min(hits)], True
        keep = 0
        for stop in self._stops:
            for size in range(min(len(stop) - 1, len(text)), keep, -1):
                if text.endswith(stop[:size]):
                    keep = size
                    break
        self._pending = text[len(text) - keep :]
        return text[: len(text) - keep], False

    def flush(self) -> str:
        """What was held back, once the stream ended without reaching a stop string."""
        pending, self._pending = self._pending, ""
        return pending
