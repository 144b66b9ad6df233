"""What a store counts of one tenant: ``StoreStats`` (what ``Store.stats`` returns) and
``TRACE_KINDS`` (what ``Store.note_traces`` counts of one note, the lines of a forget receipt).

Kept apart from ``base`` so the store protocols there stay within one reading; both backends
and the forget flow (``forget.py``) import these from here.
"""

from __future__ import annotations

from dataclasses import dataclass

TRACE_KINDS = (
    "notes",
    "chunks",
    "vectors",
    "keyword index rows",
    "outgoing links",
    "entity mentions",
    "name keys",
    "record links",
)
"""What ``Store.note_traces`` counts, in this order (the lines of a forget receipt)."""


@dataclass(frozen=True)
class StoreStats:
    """Counts for one tenant."""

    notes: int
    chunks: int
    records: int
    links: int
    mentions: int
