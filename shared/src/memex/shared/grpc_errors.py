"""The one place where domain errors become gRPC status codes."""

from __future__ import annotations

import grpc

from memex.shared import errors

STATUS_BY_ERROR: dict[type[errors.MemexError], grpc.StatusCode] = {
    errors.InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    errors.ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
    errors.DeadlineExceeded: grpc.StatusCode.DEADLINE_EXCEEDED,
    errors.PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
    errors.Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    errors.Cancelled: grpc.StatusCode.CANCELLED,
}

ERROR_BY_STATUS: dict[grpc.StatusCode, type[errors.MemexError]] = {
    code: error for error, code in STATUS_BY_ERROR.items()
}

INTERNAL_MESSAGE = "internal error; the service log has the details under request id {request_id}"
DISK_FULL_MESSAGE = (
    "the disk holding memex's data is full, so nothing was written: free some space, then try again"
)


def status_for(exc: errors.MemexError) -> grpc.StatusCode:
    """The gRPC status code of a domain error (the nearest mapped base class wins)."""
    for cls in type(exc).__mro__:
        code = STATUS_BY_ERROR.get(cls)
        if code is not None:
            return code
    return grpc.StatusCode.INTERNAL


def error_from_rpc(exc: grpc.aio.AioRpcError) -> errors.MemexError:
    """Turns a peer's status back into a domain error, so callers handle one family of errors.

    Statuses with no domain meaning (UNKNOWN, INTERNAL, ...) become a plain MemexError, which maps
    back to INTERNAL.
    """
    error = ERROR_BY_STATUS.get(exc.code(), errors.MemexError)
    return error(exc.details() or exc.code().name)
