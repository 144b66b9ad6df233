"""Saved KV states of prompt prefixes, so alternating system prompts are not evaluated again.

A llama.cpp context keeps in its KV cache only the last prompt it saw; an ask after a chat (each
with its own system message) shares almost nothing with it and would evaluate its whole system
message again. The engine saves the state of the context's sequence right after a prompt's system
message (``llama_state_seq_get_data``: the KV cells only, no logits, a few MB) and restores the
longest saved prefix of a new prompt before it evaluates the rest, when that beats what the KV
cache holds already. The states are kept in a small LRU bounded by bytes, shared by the contexts
(a sequence state loads into any context of the same model).
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from collections.abc import Sequence

import llama_cpp

Prefix = tuple[int, ...]


class PrefixStates:
    """An LRU of sequence states keyed by the prompt tokens they hold, at most ``capacity`` bytes
    of state in all. Safe to use from several worker threads."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._states: OrderedDict[Prefix, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.size = 0
        """Bytes of state held now."""

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, prefix: Prefix) -> bool:
        with self._lock:
            return prefix in self._states

    def longest(self, tokens: Sequence[int], shorter_than: int) -> tuple[Prefix, bytes] | None:
        """The longest saved prefix of ``tokens`` with fewer than ``shorter_than`` tokens (the
        prompt's last token is always evaluated) and its state; marks it recently used."""
        best: Prefix | None = None
        with self._lock:
            for prefix in self._states:
                n = len(prefix)
                longer = best is None or n > len(best)
                if longer and n < shorter_than and tuple(tokens[:n]) == prefix:
                    best = prefix
            if best is None:
                return None
            self._states.move_to_end(best)
            return best, self._states[best]

    def put(self, prefix: Prefix, state: bytes) -> None:
        """Keeps ``state``, dropping the least recently used ones beyond the capacity (a state
        larger than the whole capacity is not kept)."""
        if len(state) > self.capacity:
            return
        with self._lock:
            old = self._states.pop(prefix, None)
            if old is not None:
                self.size -= len(old)
            self._states[prefix] = state
            self.size += len(state)
            while self.size > self.capacity:
                _, dropped = self._states.popitem(last=False)
                self.size -= len(dropped)


def save_sequence(llm: llama_cpp.Llama) -> bytes:
    """The KV state of the context's sequence 0 (what it has evaluated so far)."""
    ctx = llm.ctx
    size = llama_cpp.llama_state_seq_get_size(ctx, 0)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
    return bytes(buffer)[:written]


def restore_sequence(llm: llama_cpp.Llama, prefix: Prefix, state: bytes) -> bool:
    """Loads ``state`` (saved after evaluating ``prefix``) into the context: its KV cache then holds
    exactly ``prefix``. False if llama.cpp refused it; the context is then empty."""
    llm._ctx.kv_cache_seq_rm(-1, 0, -1)
    buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
    if llama_cpp.llama_state_seq_set_data(llm.ctx, buffer, len(state), 0) == 0:
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        llm.n_tokens = 0
        return False
    llm.input_ids[: len(prefix)] = prefix
    llm.n_tokens = len(prefix)
    return True
