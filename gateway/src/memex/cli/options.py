"""Command-line options several `memex` commands take, worded once."""

from __future__ import annotations

import argparse


def tenant(parser: argparse.ArgumentParser) -> None:
    """``--tenant NAME``: whose memory the command reads or writes."""
    parser.add_argument("--tenant", default="", help="tenant (default: the single-user one)")


def answer(parser: argparse.ArgumentParser, verb: str) -> None:
    """What every command that answers a question takes (``ask``, ``chat``, ``turn``): sensitive
    notes, a day to read memory as of, a tenant; ``verb`` names the command's output in the help."""
    parser.add_argument(
        "--include-sensitive",
        action="store_true",
        help=f"let the {verb} use notes marked sensitive (as reads: left out unless asked)",
    )
    parser.add_argument(
        "--as-of",
        default="",
        metavar="YYYY-MM-DD",
        help=f"{verb} from your memory as it stood at the end of that day (docs/as-of.md)",
    )
    tenant(parser)
