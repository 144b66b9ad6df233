"""`memex observe`: Prometheus scraping the running stack, with memex's rules and alerts."""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from memex.cli import observe
from memex.cli.stack.supervisor import read_state
from memex.shared.errors import MemexError
from memex.shared.stack_settings import StackSettings

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def add_parser(commands: Any) -> None:
    """Adds `observe` to the CLI's subparsers."""
    parser = commands.add_parser(
        "observe",
        help="run Prometheus (foreground) scraping the stack, with memex's rules and alerts",
    )
    parser.add_argument(
        "--rules",
        type=Path,
        default=None,
        help="the rules file (default: deploy/prometheus/memex.rules.yml of this checkout)",
    )
    parser.add_argument(
        "--config-only",
        action="store_true",
        help="write and check the configuration, print its path, and do not start Prometheus",
    )
    parser.set_defaults(run=run)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _port_busy(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def _check(promtool: str, config: Path) -> bool:
    """``promtool check config`` (rules included); says what is wrong when it fails."""
    result = subprocess.run(
        [promtool, "check", "config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        _say(f"promtool finds {config} invalid:\n{result.stdout}{result.stderr}")
    return result.returncode == 0


def run(args: argparse.Namespace, settings: StackSettings) -> int:
    """Writes the scrape configuration, checks it, then runs Prometheus in its place (Ctrl-C,
    or SIGTERM to this process, stops Prometheus)."""
    prometheus = shutil.which("prometheus")
    if prometheus is None and not args.config_only:
        _say("Prometheus is not installed: install Debian's with `make prometheus`")
        return EXIT_FAILED
    rules = (args.rules or observe.default_rules_file()).resolve()
    if not rules.is_file():
        _say(f"no rules file at {rules}: pass one with --rules PATH")
        return EXIT_BAD_INPUT
    try:
        key_file = observe.gateway_key_file(settings)
    except MemexError as exc:
        _say(f"cannot make Prometheus's gateway key: {exc.message}")
        return EXIT_FAILED
    config = observe.write_config(settings, observe.scrape_config(settings, rules, key_file))
    promtool = shutil.which("promtool")
    if promtool is not None and not _check(promtool, config):
        return EXIT_FAILED
    if args.config_only:
        print(config)
        return EXIT_OK
    assert prometheus is not None  # checked above, unless --config-only
    if _port_busy(settings.host, settings.prometheus_port):
        _say(
            f"port {settings.prometheus_port} is in use by another program: stop it, or give "
            "Prometheus another port with MEMEX_PROMETHEUS_PORT"
        )
        return EXIT_FAILED
    if read_state(settings) is None:
        _say("memex isn't running: its targets show down until you start it with `memex up`")
    address = f"{settings.host}:{settings.prometheus_port}"
    data = observe.prometheus_dir(settings) / "data"
    _say(f"Prometheus at http://{address}/ (config {config}); Ctrl-C stops it")
    # exec, not a child: Ctrl-C and SIGTERM reach Prometheus itself, and nothing is orphaned.
    os.execv(
        prometheus,
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address={address}",
        ],
    )
