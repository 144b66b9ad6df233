"""`memex embed`: embed texts through the running embedding service."""

from __future__ import annotations

import argparse
import json

from memex.cli import rpc
from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.shared.stack_settings import StackSettings


def embed(args: argparse.Namespace, settings: StackSettings) -> int:
    """Prints each text's vector summary (or the vectors, with --json)."""
    kind = embedding_pb2.EMBED_KIND_QUERY if args.query else embedding_pb2.EMBED_KIND_DOCUMENT
    request = embedding_pb2.EmbedRequest(texts=list(args.texts), kind=kind)
    reply = rpc.call(
        settings.embedding_addr,
        embedding_pb2_grpc.EmbeddingServiceStub,
        lambda stub: stub.Embed(request),
        service="memex.embedding.v1.EmbeddingService",
        idempotent_methods=["Embed"],
        timeout=30,
    )
    if isinstance(reply, int):
        return reply
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
