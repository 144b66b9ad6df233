"""Client side of the standard gRPC health service."""

from __future__ import annotations

import argparse
import asyncio
import http.client
import sys
import time
import urllib.error
import urllib.request

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from memex.shared import internal_auth
from memex.shared.settings import InternalAuthSettings

SERVING = health_pb2.HealthCheckResponse.SERVING


async def check(
    address: str,
    service: str = "",
    timeout: float = 1.0,
    auth: InternalAuthSettings | None = None,
) -> str:
    """The serving status name of ``service`` at ``address``, or "UNREACHABLE". The channel
    presents this deployment's certificate under ``MEMEX_INTERNAL_AUTH=mtls`` (``auth``)."""
    async with internal_auth.channel(address, auth or internal_auth.from_env()) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = await stub.Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout
            )
        except grpc.aio.AioRpcError as exc:
            return "UNREACHABLE" if exc.code() != grpc.StatusCode.NOT_FOUND else "SERVICE_UNKNOWN"
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


async def check_http(url: str, timeout: float = 1.0) -> str:
    """The health of a non-gRPC process (e.g. Weaviate) from its HTTP readiness probe:
    SERVING on 2xx, NOT_SERVING on another status, UNREACHABLE when nothing answers."""

    def get() -> str:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as reply:
                return "SERVING" if 200 <= int(reply.status) < 300 else "NOT_SERVING"
        except urllib.error.HTTPError:
            return "NOT_SERVING"
        except http.client.HTTPException:
            # Something answered, but not in HTTP (a gRPC server, say): not the process we
            # probe, and never a traceback.
            return "NOT_HTTP"
        except (urllib.error.URLError, OSError, ValueError):
            return "UNREACHABLE"

    return await asyncio.to_thread(get)


async def wait_until_serving(address: str, service: str = "", timeout: float = 60.0) -> None:
    """Polls until ``service`` is SERVING; raises TimeoutError with the last status seen."""
    deadline = time.monotonic() + timeout
    status = "UNREACHABLE"
    while time.monotonic() < deadline:
        status = await check(address, service)
        if status == "SERVING":
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{address} not SERVING after {timeout:.0f}s (last status {status})")


def main(argv: list[str] | None = None) -> int:
    """``python -m memex.shared.health ADDRESS [SERVICE]``: exit 0 when SERVING, else 1 with the
    status on stderr. The probe a deployment under ``MEMEX_INTERNAL_AUTH=mtls`` uses, since a
    plaintext gRPC probe cannot connect there."""
    parser = argparse.ArgumentParser(prog="python -m memex.shared.health", description=main.__doc__)
    parser.add_argument("address", help="host:port of a memex gRPC service")
    parser.add_argument("service", nargs="?", default="", help="a service name; '' = the server")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for an answer")
    args = parser.parse_args(argv)
    status = asyncio.run(check(args.address, args.service, args.timeout))
    if status == "SERVING":
        return 0
    print(f"{args.address}: {status}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
