"""Whether memex is running: a call that failed because nothing answered at the address, told
apart from a running service answering UNAVAILABLE for a stage behind it, and what every surface
(the CLI, MCP) says when nothing answers.
"""

from __future__ import annotations

import grpc

NO_CONNECTION = ("failed to connect", "connections to all backends failing")
"""How a channel's UNAVAILABLE begins when no address answered: gRPC's pick_first and round_robin
policies say it differently (memex's channels round-robin, see ``memex.shared.client``)."""


def unreachable(exc: grpc.aio.AioRpcError) -> bool:
    """Whether a call failed because nothing answered at the address (memex is not running),
    rather than a running service answering UNAVAILABLE for a stage behind it."""
    return exc.code() == grpc.StatusCode.UNAVAILABLE and (exc.details() or "").startswith(
        NO_CONNECTION
    )


def not_running_message(address: str, what: str = "stack") -> str:
    """What every surface says when nothing answers: which address, and how to start memex."""
    return (
        f"memex isn't running (no answer from the {what} at {address}) — start it with `memex up`"
    )
