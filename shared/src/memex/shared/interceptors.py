"""Server interceptor: request ids, the caller's deadline, metrics and error mapping for every RPC.

Unary and server-streaming handlers are wrapped alike, so an error raised mid-stream gets the same
status mapping as one raised before the first message.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import grpc

from memex.shared import errors
from memex.shared.errors import is_disk_full
from memex.shared.grpc_errors import DISK_FULL_MESSAGE, INTERNAL_MESSAGE, status_for
from memex.shared.logs import request_id_var
from memex.shared.metrics import RPC_HANDLED, RPC_IN_FLIGHT, RPC_SECONDS

log = logging.getLogger(__name__)

REQUEST_ID_KEY = "x-request-id"

# Absolute deadline (time.monotonic()) of the inbound call being served, so outbound calls can
# take their timeout from the caller's remaining budget.
deadline_var: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "deadline", default=None
)


def _request_id(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == REQUEST_ID_KEY and isinstance(value, str) and 0 < len(value) <= 128:
            return value
    return uuid.uuid4().hex


def _status_of(exc: BaseException) -> tuple[grpc.StatusCode, str]:
    if isinstance(exc, errors.MemexError):
        return status_for(exc), exc.message
    if is_disk_full(exc):
        # Not a bug to hunt down by request id: the operator has to free space.
        log.error("disk full: %s", exc)
        return grpc.StatusCode.RESOURCE_EXHAUSTED, DISK_FULL_MESSAGE
    return grpc.StatusCode.INTERNAL, INTERNAL_MESSAGE.format(request_id=request_id_var.get())


class _Call:
    """Bookkeeping for one RPC: request id, deadline, in-flight gauge, outcome metrics."""

    def __init__(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        self.method = method
        self.context = context
        self.code = grpc.StatusCode.OK
        self.started = time.perf_counter()
        request_id_var.set(_request_id(context))
        remaining = context.time_remaining()
        deadline_var.set(None if remaining is None else time.monotonic() + remaining)
        RPC_IN_FLIGHT.labels(method).inc()

    async def fail(self, exc: BaseException) -> None:
        """Ends the call with the status of ``exc``; an abort the handler made itself passes."""
        if isinstance(exc, asyncio.CancelledError):
            self.code = grpc.StatusCode.CANCELLED
            raise exc
        if isinstance(exc, grpc.aio.AbortError):
            self.code = grpc.StatusCode.UNKNOWN
            raise exc
        self.code, message = _status_of(exc)
        if self.code == grpc.StatusCode.INTERNAL:
            log.error("unhandled error in %s", self.method, exc_info=exc)
        await self.context.abort(self.code, message)

    def finish(self) -> None:
        RPC_HANDLED.labels(self.method, self.code.name).inc()
        RPC_SECONDS.labels(self.method).observe(time.perf_counter() - self.started)
        RPC_IN_FLIGHT.labels(self.method).dec()


if TYPE_CHECKING:  # grpc's handler type is generic only in its stubs
    Handler: TypeAlias = grpc.RpcMethodHandler[Any, Any]
    Continuation: TypeAlias = Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]]
    """What a server interceptor's ``intercept_service`` is given: the next step's handler."""

UnaryBehavior = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]
StreamBehavior = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], AsyncIterator[Any]]


def _wrap_unary(method: str, behavior: UnaryBehavior) -> UnaryBehavior:
    async def handle(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        call = _Call(method, context)
        try:
            return await behavior(request, context)
        except (asyncio.CancelledError, Exception) as exc:
            await call.fail(exc)
        finally:
            call.finish()

    return handle


def _wrap_stream(method: str, behavior: StreamBehavior) -> StreamBehavior:
    async def handle(
        request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[Any]:
        call = _Call(method, context)
        try:
            async for message in behavior(request, context):
                yield message
        except GeneratorExit:
            # grpc closes the stream instead of cancelling the task when the caller goes away
            # while a message is being sent: that is a cancelled call too, not a finished one.
            call.code = grpc.StatusCode.CANCELLED
            raise
        except (asyncio.CancelledError, Exception) as exc:
            await call.fail(exc)
        finally:
            call.finish()

    return handle


class CallInterceptor(grpc.aio.ServerInterceptor):
    """Wraps every unary-unary and unary-stream handler (the only shapes memex's contracts use)."""

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        # Health and reflection are grpc's own, written with context.write: leave them as they are.
        if handler is None or not method.startswith("/memex."):
            return handler
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                _wrap_unary(method, cast(UnaryBehavior, handler.unary_unary)),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                _wrap_stream(method, cast(StreamBehavior, handler.unary_stream)),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler
