"""A chat stream's error code (``ChatErrorCode`` on the wire) as the gRPC status it stands for.

The enum mirrors ``grpc.StatusCode`` name for name (``CHAT_ERROR_CODE_NOT_FOUND`` is NOT_FOUND), so
an error inside a chat stream maps to HTTP statuses and exit codes exactly as a failed call does.
Kept apart from the HTTP code so the CLI can use it without loading FastAPI.
"""

from __future__ import annotations

import grpc

from memex.orchestrator.v1 import orchestrator_pb2 as opb

PREFIX = "CHAT_ERROR_CODE_"


def status_of(code: opb.ChatErrorCode.ValueType) -> grpc.StatusCode:
    """The gRPC status of a chat error code: UNKNOWN for an unset code, or for a value added to the
    enum after this gateway was built."""
    try:
        name = opb.ChatErrorCode.Name(code).removeprefix(PREFIX)
    except ValueError:
        return grpc.StatusCode.UNKNOWN
    return grpc.StatusCode.__members__.get(name, grpc.StatusCode.UNKNOWN)
