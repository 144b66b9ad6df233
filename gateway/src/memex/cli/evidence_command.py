"""`memex evidence TURN_ID [--include-sensitive] [--tenant T] [-o FILE]`: an answer's evidence
bundle (issue 37; docs/evidence.md), the JSON file a person can keep or share.

The id is whichever the answer has: an ask's turn id (`memex ask` prints it), a chat reply's
message id (`memex chat --json`, `memex conversations ID --json`) or a queued answer's turn id.
Without ``-o`` the bundle goes to standard output; with it, to FILE, and a line on standard error
says what it holds. An answer from the memory as of a day (docs/as-of.md) says so on standard
error too.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex.cli import options, rpc
from memex.gateway.present_evidence import EvidenceBundle, as_of_line
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.shared.stack_settings import StackSettings

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    Stub = orchestrator_pb2_grpc.OrchestratorServiceAsyncStub


def add_parser(commands: Any) -> None:
    """Registers `evidence` on the CLI's subparsers."""
    parser = commands.add_parser(
        "evidence",
        help="an answer's evidence bundle: question, answer, excerpts, citations, claim check",
        description="Prints (or saves) the evidence bundle of one answer as JSON: the question, "
        "the answer, every excerpt the model was shown with its note's version, the citations "
        "with their quotes and grades, the claim check, the model, the prompt version and the "
        "persona. Sensitive excerpts are left out unless --include-sensitive.",
    )
    parser.add_argument(
        "turn_id",
        help="the answer's id: an ask's turn id, a chat reply's message id, or a queued "
        "answer's turn id",
    )
    parser.add_argument(
        "--include-sensitive",
        action="store_true",
        help="keep sensitive excerpts and an answer that drew on them (placeholders otherwise)",
    )
    parser.add_argument("-o", "--output", type=Path, help="write the bundle to this file")
    options.tenant(parser)
    parser.set_defaults(run=evidence)


def evidence(args: argparse.Namespace, settings: StackSettings) -> int:
    """Fetches the bundle; prints it, or writes it to ``--output``."""
    if not args.turn_id.strip():
        print("error: give the answer's id, e.g. memex evidence 3f2a9c0d...", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    if args.output is not None and args.output.is_dir():
        print(f"error: {args.output} is a folder: name the file to write", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    request = pb.GetEvidenceRequest(
        tenant=args.tenant,
        turn_id=args.turn_id.strip(),
        include_sensitive=args.include_sensitive,
    )

    async def fetch(stub: Stub) -> pb.GetEvidenceResponse:
        reply: pb.GetEvidenceResponse = await stub.GetEvidence(request)
        return reply

    reply = rpc.call(
        settings.orchestrator_addr,
        orchestrator_pb2_grpc.OrchestratorServiceStub,
        fetch,
        service="memex.orchestrator.v1.OrchestratorService",
        idempotent_methods=["GetEvidence"],
        timeout=60.0,
    )
    if isinstance(reply, int):
        return reply
    bundle = EvidenceBundle.model_validate_json(reply.bundle_json)
    text = json.dumps(bundle.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"
    as_of = as_of_line(bundle.as_of)
    if args.output is None:
        sys.stdout.write(text)
        if as_of:
            print(as_of, file=sys.stderr)
        return rpc.EXIT_OK
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"error: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    left = (
        f", {reply.left_out} sensitive left out (--include-sensitive keeps them)"
        if reply.left_out
        else ""
    )
    print(
        f"wrote {args.output}: {len(bundle.excerpts)} excerpts, {len(bundle.citations)} "
        f"citations{left}",
        file=sys.stderr,
    )
    if as_of:
        print(as_of, file=sys.stderr)
    return rpc.EXIT_OK
