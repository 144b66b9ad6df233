"""The asks of the fake orchestrator (``fakes``): Ask, AskStream (the same cited answer, drafted
piece by piece) and the logged asks, with the magic questions its docstring lists."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import grpc

from memex.orchestrator.v1 import orchestrator_pb2 as pb

from .fake_data import (
    ANSWER_DRAFT,
    CITATION,
    LOGGED_ASKS,
    STREAM_CANCELLED,
    Context,
    check_as_of,
)


def _ask_response(request: pb.AskRequest) -> pb.AskResponse:
    return pb.AskResponse(
        as_of=request.as_of,
        answer="".join(ANSWER_DRAFT),
        citations=[CITATION],
        persona=request.persona or "analyst",
        grounding=pb.GroundingReport(cited=1, grounded=1, score=1.0),
        stages=["plan", "retrieve", "synthesize", "ground_check"],
        model="fake",
        latency_ms=12.5,
        turn_id="turn-ask",
    )


class FakeAsks:
    """Ask, AskStream and ListLoggedAsks; keeps the ask requests it saw and their request ids."""

    def __init__(self) -> None:
        super().__init__()
        self.ask_requests: list[pb.AskRequest] = []  # Ask's and AskStream's
        self.request_ids: list[str] = []
        self.ask_cancelled = threading.Event()

    def _note_request_id(self, context: Context) -> None:
        for key, value in context.invocation_metadata() or ():
            if key == "x-request-id":
                self.request_ids.append(str(value))

    async def _ask_magic(self, request: pb.AskRequest, context: Context) -> None:
        """What Ask and AskStream do before their first word."""
        self._note_request_id(context)
        self.ask_requests.append(request)
        check_as_of(request.as_of)
        if request.question.startswith("status:"):
            await context.abort(grpc.StatusCode[request.question[7:]], "as asked")
        if request.question == "slow":
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                self.ask_cancelled.set()
                raise

    async def Ask(self, request: pb.AskRequest, context: Context) -> pb.AskResponse:
        await self._ask_magic(request, context)
        return _ask_response(request)

    async def AskStream(
        self, stream_request: pb.AskStreamRequest, context: Context
    ) -> AsyncIterator[pb.AskStreamResponse]:
        request = stream_request.ask
        await self._ask_magic(request, context)
        persona = request.persona or "analyst"
        yield pb.AskStreamResponse(
            started=pb.AskStarted(
                model="fake", persona=persona, sources=[CITATION.ref], source_paths=[CITATION.path]
            )
        )
        if request.question == "fail after":
            yield pb.AskStreamResponse(delta="Half a ")
            await context.abort(grpc.StatusCode.UNAVAILABLE, "reasoner gone")
        if request.question == "second look":
            yield pb.AskStreamResponse(delta="I don't know.")
            yield pb.AskStreamResponse(redraft=pb.AskRedraft(reason="reading all 4 sources"))
        if request.question == "slow words":
            try:
                for n in range(100_000):
                    yield pb.AskStreamResponse(delta=f"{n} ")
                    await asyncio.sleep(0.02)
            except STREAM_CANCELLED:
                self.ask_cancelled.set()
                raise
        for piece in ANSWER_DRAFT:
            yield pb.AskStreamResponse(delta=piece)
        yield pb.AskStreamResponse(result=_ask_response(request))

    async def ListLoggedAsks(
        self, request: pb.ListLoggedAsksRequest, context: Context
    ) -> pb.ListLoggedAsksResponse:
        return pb.ListLoggedAsksResponse(asks=LOGGED_ASKS[: request.limit or None])
