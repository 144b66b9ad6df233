"""Transport-free domain errors.

Engines raise these; one table per transport (gRPC in ``grpc_errors``, HTTP in the gateway) maps
them to status codes. The message is shown to the client, so it must say what to fix and must
never carry secrets or internal state.
"""

from __future__ import annotations

import errno
import sqlite3


class MemexError(Exception):
    """Base class of every error a client may see."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(MemexError):
    """The request itself is wrong; the message says which field and how to fix it."""


class NotFound(MemexError):
    """A named thing (conversation, entity, model) does not exist."""


class AlreadyExists(MemexError):
    """The thing to create exists already."""


class FailedPrecondition(MemexError):
    """The system is not in a state to serve this request (e.g. no model configured)."""


class ResourceExhausted(MemexError):
    """A bounded queue or quota is full; the client may retry later."""


class Unavailable(MemexError):
    """A dependency (peer service, remote model server) cannot be reached right now."""


class DeadlineExceeded(MemexError):
    """The work did not finish within the caller's budget."""


class PermissionDenied(MemexError):
    """The caller may not do this (e.g. a collection outside the allowlist)."""


class Unauthenticated(MemexError):
    """The caller did not prove who it is."""


class Cancelled(MemexError):
    """The caller went away."""


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a full disk: ENOSPC or EDQUOT from the OS, or
    SQLite's SQLITE_FULL ("database or disk is full")."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(seen, sqlite3.Error) and seen.sqlite_errorcode == sqlite3.SQLITE_FULL:
            return True
        seen = seen.__cause__ or seen.__context__
    return False
