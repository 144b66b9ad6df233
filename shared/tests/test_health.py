"""The HTTP readiness probe the supervisor uses for non-gRPC processes."""

from __future__ import annotations

import asyncio

from memex.shared.health import check_http
from memex.testing import free_port


async def test_a_probe_that_meets_something_other_than_http_says_so() -> None:
    async def answer_in_binary(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)
        writer.write(b"\x00\x00\x12\x04\x00\x00\x00\x00\x00")  # an HTTP/2 SETTINGS frame
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer_in_binary, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        assert await check_http(f"http://127.0.0.1:{port}/v1/.well-known/ready") == "NOT_HTTP"
    assert await check_http(f"http://127.0.0.1:{free_port()}/ready") == "UNREACHABLE"
