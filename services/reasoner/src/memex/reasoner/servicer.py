"""Proto ⇄ domain translation for the reasoner service."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import grpc

from memex.reasoner.core import RawRequest, ReasonerCore, Summary
from memex.reasoner.engine import FinishReason, Role
from memex.reasoner.v1 import reasoner_pb2, reasoner_pb2_grpc
from memex.shared.logs import request_id_var
from memex.shared.server import EngineSlot

_ROLES: dict[int, Role] = {
    reasoner_pb2.ROLE_SYSTEM: "system",
    reasoner_pb2.ROLE_USER: "user",
    reasoner_pb2.ROLE_ASSISTANT: "assistant",
}
_FINISH: dict[FinishReason, reasoner_pb2.FinishReason.ValueType] = {
    "stop": reasoner_pb2.FINISH_REASON_STOP,
    "length": reasoner_pb2.FINISH_REASON_LENGTH,
    "cancelled": reasoner_pb2.FINISH_REASON_CANCELLED,
}


def raw_request(request: reasoner_pb2.GenerateRequest, time_remaining: float | None) -> RawRequest:
    """The domain view of a GenerateRequest; the deadline comes from the call."""
    sampling = request.sampling
    return RawRequest(
        messages=[(_ROLES.get(m.role), m.content) for m in request.messages],
        temperature=sampling.temperature if sampling.HasField("temperature") else None,
        top_p=sampling.top_p if sampling.HasField("top_p") else None,
        max_tokens=sampling.max_tokens,
        stop=list(sampling.stop),
        seed=sampling.seed if sampling.HasField("seed") else None,
        json_schema=request.json_schema,
        model=request.model,
        request_id=request.request_id or request_id_var.get(),
        deadline=None if time_remaining is None else time.monotonic() + time_remaining,
    )


def final_message(summary: Summary) -> reasoner_pb2.GenerateResponse:
    """The stream's last message."""
    return reasoner_pb2.GenerateResponse(
        final=reasoner_pb2.GenerateFinal(
            finish_reason=_FINISH[summary.finish_reason],
            usage=reasoner_pb2.Usage(
                prompt_tokens=summary.prompt_tokens, completion_tokens=summary.completion_tokens
            ),
            time_to_first_token_ms=summary.time_to_first_token_ms,
            total_ms=summary.total_ms,
            queue_wait_ms=summary.queue_wait_ms,
            model=summary.model,
        )
    )


class ReasonerServicer(reasoner_pb2_grpc.ReasonerServiceServicer):
    """Implements memex.reasoner.v1.ReasonerService over a ReasonerCore."""

    def __init__(self, slot: EngineSlot[ReasonerCore]) -> None:
        self._slot = slot

    async def Generate(
        self,
        request: reasoner_pb2.GenerateRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[reasoner_pb2.GenerateResponse]:
        core = self._slot.get()
        async for item in core.generate(raw_request(request, context.time_remaining())):
            if isinstance(item, Summary):
                yield final_message(item)
            else:
                yield reasoner_pb2.GenerateResponse(delta=item.text)

    async def Info(
        self, request: reasoner_pb2.InfoRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> reasoner_pb2.InfoResponse:
        info = self._slot.get().info
        return reasoner_pb2.InfoResponse(
            engine=info.engine,
            model=info.model,
            context_length=info.context_length,
            prefill_tokens_per_second=info.prefill_tokens_per_second,
            local=info.local,
        )
