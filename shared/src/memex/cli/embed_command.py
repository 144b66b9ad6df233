"""`memex embed`: embed texts through the running embedding service."""

from __future__ import annotations

import argparse
import asyncio
import json

import grpc

from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.shared.client import open_channel
from memex.shared.stack import StackSettings

EXIT_BAD_INPUT = 2
EXIT_NOT_RUNNING = 3


async def _embed(
    address: str, texts: list[str], kind: embedding_pb2.EmbedKind.ValueType
) -> embedding_pb2.EmbedResponse:
    async with open_channel(
        address, service="memex.embedding.v1.EmbeddingService", idempotent_methods=["Embed"]
    ) as channel:
        stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
        return await stub.Embed(embedding_pb2.EmbedRequest(texts=texts, kind=kind), timeout=30)


def embed(args: argparse.Namespace, settings: StackSettings) -> int:
    """Prints each text's vector summary (or the vectors, with --json)."""
    kind = embedding_pb2.EMBED_KIND_QUERY if args.query else embedding_pb2.EMBED_KIND_DOCUMENT
    try:
        reply = asyncio.run(_embed(settings.embedding_addr, list(args.texts), kind))
    except grpc.aio.AioRpcError as exc:
        if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            print(
                f"the embedding service at {settings.embedding_addr} is not reachable; "
                "start the stack with `memex up` (or `make up`)"
            )
            return EXIT_NOT_RUNNING
        print(f"error: {exc.code().name}: {exc.details()}")
        return EXIT_BAD_INPUT if exc.code() == grpc.StatusCode.INVALID_ARGUMENT else 1
    if args.json:
        print(
            json.dumps(
                {
                    "model_id": reply.model_id,
                    "dimension": reply.dimension,
                    "embeddings": [
                        {
                            "values": list(e.values),
                            "truncated": e.truncated,
                            "token_count": e.token_count,
                        }
                        for e in reply.embeddings
                    ],
                }
            )
        )
        return 0
    print(f"model {reply.model_id}, {reply.dimension} dimensions")
    for text, embedding in zip(args.texts, reply.embeddings, strict=True):
        head = ", ".join(f"{v:+.4f}" for v in embedding.values[:4])
        note = " (truncated)" if embedding.truncated else ""
        print(f"  {text[:50]!r}: {embedding.token_count} tokens{note} -> [{head}, ...]")
    return 0
