"""`memex keys create|list|revoke`: the gateway's bearer API keys (hashed at rest)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memex.gateway import apikeys
from memex.shared.errors import MemexError, NotFound
from memex.shared.stack_settings import StackSettings

EXIT_FAILED, EXIT_BAD_INPUT, EXIT_NOT_FOUND = 1, 2, 4


def add_parsers(commands: Any) -> None:
    """Adds `keys` with its subcommands to the CLI's subparsers."""
    keys = commands.add_parser("keys", help="create, list or revoke the gateway's API keys")
    actions = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="make a key and print it (shown only this once)")
    create.add_argument("name", help="a label for the key, e.g. the app that will use it")
    create.add_argument(
        "--sensitive",
        action="store_true",
        help="let this key read items marked sensitive when a request asks (default: never)",
    )
    create.add_argument(
        "--tenant",
        default="",
        help="the only tenant whose memory this key sees (letters, digits, '_', '-'; "
        "default: the deployment's default tenant)",
    )
    create.add_argument(
        "--admin",
        action="store_true",
        help="let this key create, list and revoke keys for any tenant over HTTP",
    )
    create.set_defaults(run=create_key)
    listed = actions.add_parser(
        "list", help="the keys' names, tenants, grants, hints and creation times"
    )
    listed.add_argument("--json", action="store_true", help="machine-readable output")
    listed.set_defaults(run=list_keys)
    revoke = actions.add_parser("revoke", help="delete a key; clients using it get 401")
    revoke.add_argument("name")
    revoke.set_defaults(run=revoke_key)


def _fail(exc: MemexError) -> int:
    print(f"error: {exc.message}", file=sys.stderr)
    return EXIT_NOT_FOUND if isinstance(exc, NotFound) else EXIT_BAD_INPUT


def create_key(args: argparse.Namespace, settings: StackSettings) -> int:
    """Prints a new key on stdout (alone, so scripts can capture it); the hint goes to stderr."""
    path = apikeys.keys_path(settings.data_dir)
    try:
        token = apikeys.create_key(
            path, args.name, args.sensitive, tenant=args.tenant, admin=args.admin
        )
    except MemexError as exc:
        return _fail(exc)
    print(token)
    print(
        f"key {args.name!r} created; it is shown only now. Send it as "
        "`Authorization: Bearer <key>` (the gateway picks it up without a restart).",
        file=sys.stderr,
    )
    return 0


def list_keys(args: argparse.Namespace, settings: StackSettings) -> int:
    """Lists the keys without their secrets."""
    try:
        keys = apikeys.load_keys(apikeys.keys_path(settings.data_dir))
    except MemexError as exc:
        return _fail(exc)
    if args.json:
        rows = [
            {
                "name": k.name,
                "tenant": k.tenant,
                "hint": k.hint,
                "created_at": k.created_at,
                "sensitive": k.sensitive,
                "admin": k.admin,
            }
            for k in keys
        ]
        print(json.dumps({"keys": rows}, indent=2))
        return 0
    for k in keys:
        grants = ("  reads sensitive" if k.sensitive else "") + ("  admin" if k.admin else "")
        tenant = k.tenant or "(default)"
        print(f"{k.name:<24} {tenant:<16} {k.hint}…  {k.created_at}{grants}")
    if not keys:
        print("no API keys yet; make one with `memex keys create NAME`")
    return 0


def revoke_key(args: argparse.Namespace, settings: StackSettings) -> int:
    """Deletes a key by name."""
    try:
        apikeys.revoke_key(apikeys.keys_path(settings.data_dir), args.name)
    except MemexError as exc:
        return _fail(exc)
    print(f"revoked key {args.name!r}")
    return 0
