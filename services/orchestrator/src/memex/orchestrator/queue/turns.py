"""A queued turn and a thread as the queue stores them (SPEC B13), and what the queue writes in the
rows of their model calls: the records ``state/store.py`` reads and writes, with no database code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memex.orchestrator.state import Row

ERROR_TEXT_LIMIT = 500


@dataclass(frozen=True)
class Turn:
    id: str
    thread_id: str
    role: str
    text: str
    citations: list[dict[str, Any]]
    state: str
    error: str
    seq: int
    created_at: str
    tenant: str = ""
    # Whether the request let the model see sensitive notes (issue 11); the worker honours it.
    include_sensitive: bool = False
    reply_to: str = ""  # an answer's question
    # Read by a request that may not see it: ``text`` is a placeholder, no citations.
    withheld: bool = False
    as_of: str = ""  # a question's day (YYYY-MM-DD) whose memory the worker reads; "" for now


@dataclass(frozen=True)
class PendingTurns:
    """The queue's backlog: user turns no worker has claimed, and how long the oldest waited."""

    count: int
    oldest_age_seconds: float


@dataclass(frozen=True)
class Thread:
    id: str
    title: str
    created_at: str


# The request id of a worker's model calls for a turn: the prefix, then the turn's id.
TURN_REQUEST = "turn-"
# What forgetting a thread leaves in the LLM log rows of its turns' model calls.
FORGOTTEN_THREAD = "[erased: its thread was forgotten]"


def turn_from_row(row: Row) -> Turn:
    """The turn a row of ``turns`` holds."""
    return Turn(
        row["id"],
        row["thread_id"],
        row["role"],
        row["text"],
        json.loads(row["citations"]),
        row["state"],
        row["error"],
        row["seq"],
        row["created_at"],
        row["tenant"] or "",
        bool(row["include_sensitive"]),
        row["reply_to"] or "",
        as_of=row["as_of"] or "",
    )
