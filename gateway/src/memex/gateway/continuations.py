"""Which stored memex conversation an OpenAI client's message history continues.

OpenAI clients (the `llm` CLI's ``-c``, chat apps, the SDK in a loop) continue a conversation by
sending the whole history again; they have no conversation id to send. So that such a follow-up
lands in the same memex conversation (one entry in the history, the orchestrator's own stored
context) rather than a new one each turn, the gateway remembers, for each reply it gave, a digest
of the exact history that reply completes (the caller, every user and assistant message's text,
and the reply) with its conversation id. A request whose earlier messages have that digest
continues the conversation.

Each remembered reply is continued at most once: a second request with the same history (a
regenerated answer, an edited branch, a copy of the chat in another app) starts a new conversation
with the history inlined, as does any request after a gateway restart (the memory is the process's,
bounded, oldest forgotten first). A wrong match therefore cannot happen silently: both sides must
hold the same history, down to the reply's words.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence

Turn = tuple[str, str]
"""(role, text): "user" or "assistant", with the message's text stripped."""


class Continuations:
    """A bounded map from a history's digest to the conversation it is the history of."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._by_digest: OrderedDict[str, str] = OrderedDict()
        self._max = max_entries

    @staticmethod
    def digest(caller: str, history: Sequence[Turn]) -> str:
        """The key of ``history`` as ``caller`` sent it (one caller never continues another's)."""
        canonical = json.dumps([caller, [list(t) for t in history]], ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def remember(self, caller: str, history: Sequence[Turn], conversation_id: str) -> None:
        """Notes that ``history`` (ending with the reply just given) is ``conversation_id``'s."""
        if not conversation_id or not history:
            return
        key = self.digest(caller, history)
        self._by_digest[key] = conversation_id
        self._by_digest.move_to_end(key)
        while len(self._by_digest) > self._max:
            self._by_digest.popitem(last=False)

    def take(self, caller: str, history: Sequence[Turn]) -> str:
        """The conversation ``history`` continues, forgotten as it is returned; "" for none."""
        if not history or history[-1][0] != "assistant":
            return ""
        return self._by_digest.pop(self.digest(caller, history), "")

    def __len__(self) -> int:
        return len(self._by_digest)
