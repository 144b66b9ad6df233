"""`memex certs --out DIR`: the certificates a deployment needs for MEMEX_INTERNAL_AUTH=mtls."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from memex.shared import certs
from memex.shared.errors import MemexError
from memex.shared.stack_settings import StackSettings

EXIT_BAD_INPUT = 2


def add_parser(commands: Any) -> None:
    """Adds `certs` to the CLI's subparsers."""
    parser = commands.add_parser(
        "certs",
        help="make a CA and one certificate per service for MEMEX_INTERNAL_AUTH=mtls",
        description="Writes DIR/ca.crt and DIR/ca.key (made once, then reused), and for each "
        "service DIR/<service>/ with tls.crt, tls.key and ca.crt: the files a Kubernetes Secret "
        "mounts as MEMEX_INTERNAL_TLS_DIR. Running it again re-issues the service certificates "
        "under the same CA (rotation); keep ca.key offline.",
    )
    parser.add_argument("--out", type=Path, required=True, help="the folder to write")
    parser.add_argument(
        "--service",
        action="append",
        dest="services",
        metavar="NAME",
        help=f"issue for this service only (repeatable; default all: {', '.join(certs.SERVICES)})",
    )
    parser.add_argument(
        "--namespace", default="memex", help="the Kubernetes namespace the names are valid in"
    )
    parser.add_argument("--days", type=int, default=365, help="validity of the service certs")
    parser.set_defaults(run=make_certs)


def make_certs(args: argparse.Namespace, settings: StackSettings) -> int:
    """Issues the certificates and says how to hand them to the services."""
    try:
        issued = certs.issue(
            args.out, args.services or certs.SERVICES, namespace=args.namespace, days=args.days
        )
    except MemexError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"error: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    ca = "reused the CA in" if issued.ca_reused else "made a new CA in"
    print(f"{ca} {args.out} (keep ca.key offline; only ca.crt is needed at run time)")
    for service, folder in issued.service_dirs.items():
        print(
            f"  {service}: {folder}  →  kubectl -n {args.namespace} create secret generic "
            f"memex-tls-{service} --from-file={folder}/"
        )
    print(
        "Set MEMEX_INTERNAL_AUTH=mtls and MEMEX_INTERNAL_TLS_DIR=<the service's folder> in every "
        "process (on one machine, one folder serves them all: each certificate names loopback)."
    )
    return 0
