"""The bodies of queued chat (SPEC B13): turns queued with POST /v1/turns, their threads, and a
thread's event stream."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from memex.gateway.models.common import MAX_TEXT, Date, Role, SensitiveAnswer, Strict
from memex.gateway.present import Citation

TurnState = Literal["unspecified", "pending", "thinking", "answered", "error"]


class Turn(BaseModel):
    id: str
    thread_id: str
    role: Role
    text: str
    citations: list[Citation]
    state: TurnState = Field(description="User turns only; assistant turns are answered.")
    error: str = Field(description="Failure message when state is error.")
    created_at: str
    withheld: bool = Field(
        False,
        description="An answer to a question that let the model see sensitive notes, read without "
        "include_sensitive: its text is a placeholder and its citations are left out.",
    )
    as_of: str = Field(
        "", description='A question\'s day whose memory its answer reads; "" for now.'
    )
    reply_to: str = Field("", description='An answer\'s question (its turn id); "" for a question.')


class Thread(BaseModel):
    id: str
    title: str
    created_at: str


class TurnCreate(Strict):
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    thread_id: str = Field("", max_length=128, description="Empty: a new thread.")
    include_sensitive: SensitiveAnswer = False
    as_of: Date = Field(
        "",
        description="The answer reads the memory as it stood at the end of this day (UTC), with "
        'it as "today"; empty: now. Checked when the question is queued: a day after today is '
        "a 400 (docs/as-of.md).",
    )


class TurnResponse(BaseModel):
    turn: Turn


class ThreadList(BaseModel):
    threads: list[Thread]


class TurnList(BaseModel):
    turns: list[Turn]


class TurnEvent(BaseModel):
    """One `turn` event of GET /v1/threads/{thread_id}/events (issue 37)."""

    event: ClassVar[str] = "turn"  # the SSE event it is sent as
    turn: Turn
    current: bool = Field(
        description="True for the turns sent first (the thread when the watch began); false for "
        "a turn sent again because it changed."
    )


class ThreadEnded(BaseModel):
    """The terminal `deleted` event of a thread's event stream: the thread was forgotten."""

    event: ClassVar[str] = "deleted"  # the SSE event it is sent as
    thread_id: str


class ThreadDeleted(BaseModel):
    """The receipt of a thread forget."""

    thread_id: str
    turns_deleted: int = Field(description="Questions and answers deleted with the thread.")
    turns_remaining: int = Field(description="Turns of the thread found afterwards; 0.")
