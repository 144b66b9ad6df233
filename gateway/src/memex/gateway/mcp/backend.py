"""gRPC calls to the running stack; failures become MCP tool errors a person can act on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from mcp.server.mcpserver.exceptions import ToolError

from memex.gateway.reachability import not_running_message, unreachable
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.shared.client import open_channel
from memex.shared.stack_settings import StackSettings

T = TypeVar("T")
if TYPE_CHECKING:  # the async stub types exist only in the generated .pyi
    OrchestratorStub = orchestrator_pb2_grpc.OrchestratorServiceAsyncStub
# An ask runs two model calls on a local CPU model: minutes, not seconds, on a small machine.
ORCHESTRATOR_TIMEOUT_S = 600.0
ORCHESTRATOR_SERVICE = "memex.orchestrator.v1.OrchestratorService"
_READS = ["Search", "QueryRecords", "PersonTimeline", "ListInbox", "GetNote"]


def tool_error(exc: grpc.aio.AioRpcError, what: str, address: str) -> ToolError:
    """The tool error for a failed call, saying what to do about it."""
    code = exc.code()
    if unreachable(exc):
        return ToolError(not_running_message(address, what))
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return ToolError(f"the {what} did not answer in time; try again, or a narrower request")
    if code in (
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.FAILED_PRECONDITION,
    ):
        return ToolError(f"{code.name.lower()}: {exc.details()}")
    return ToolError(f"the {what} failed ({code.name}): {exc.details()}")


class Stack:
    """A client for the orchestrator at the stack's address: the MCP server's one door to
    memory (issue 11)."""

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings

    async def orchestrator(self, call: Callable[[OrchestratorStub], Awaitable[T]]) -> T:
        """Runs ``call`` on an orchestrator stub; RPC failures become tool errors."""
        address = self.settings.orchestrator_addr
        try:
            async with open_channel(
                address,
                service=ORCHESTRATOR_SERVICE,
                idempotent_methods=_READS,  # reads retry while the service restarts
                default_timeout=ORCHESTRATOR_TIMEOUT_S,
            ) as channel:
                stub: Any = orchestrator_pb2_grpc.OrchestratorServiceStub(channel)
                return await call(stub)
        except grpc.aio.AioRpcError as exc:
            raise tool_error(exc, "orchestrator", address) from None
