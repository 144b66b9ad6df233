"""`memex up`, `down`, `status` and the hidden `supervise`: the local stack's lifecycle."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from pydantic import ValidationError

from memex.cli import index_report
from memex.cli.stack.services import stack_services
from memex.cli.stack.supervisor import (
    Supervisor,
    alive,
    busy_ports,
    log_tail,
    probe,
    read_state,
)
from memex.shared.logs import configure_logging
from memex.shared.stack_settings import StackSettings

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_RUNNING = 3


def _print(message: str) -> None:
    print(message, flush=True)


def up(args: argparse.Namespace, settings: StackSettings) -> int:
    """Starts the supervisor in the background and waits until every service is healthy."""
    if getattr(args, "store", None):
        # The background supervisor parses its settings from the environment it inherits.
        os.environ["MEMEX_STORE"] = args.store
        settings = settings.model_copy(update={"store": args.store})
    if getattr(args, "state", None):
        os.environ["MEMEX_STATE"] = args.state  # inherited by the background supervisor
        settings = settings.model_copy(update={"state": args.state})
    if getattr(args, "nodes", None) is not None:
        if settings.store != "weaviate":
            _print("--nodes needs --store weaviate (the embedded store is one process)")
            return EXIT_BAD_INPUT
        try:
            settings = StackSettings.model_validate(
                {**settings.model_dump(), "weaviate_nodes": args.nodes}
            )
        except ValidationError as exc:
            _print(f"--nodes {args.nodes}: {exc.errors()[0]['msg']}")
            return EXIT_BAD_INPUT
        os.environ["MEMEX_WEAVIATE_NODES"] = str(args.nodes)
    if args.foreground:
        return supervise(args, settings)
    state = read_state(settings)
    if state is not None:
        _print(f"memex is already running (supervisor pid {state['pid']}); `memex status` shows it")
        return EXIT_OK
    if busy := busy_ports(settings):
        for sentence in busy:
            _print(sentence)
        return EXIT_FAILED
    settings.log_dir.mkdir(parents=True, exist_ok=True)
    log_path = settings.log_dir / "supervisor.log"
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "memex.cli", "supervise"],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _print(f"starting memex (logs in {settings.log_dir})")
    deadline = time.monotonic() + settings.start_timeout_seconds + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            _print(f"memex failed to start; the end of {log_path}:")
            _print(log_tail(log_path, lines=40))
            return EXIT_FAILED
        state = read_state(settings)
        if state is not None and state["state"] == "ready":
            for name, service in state["services"].items():
                _print(f"  {name:<12} {service['status']:<10} {service['address']}")
            _print(f"memex is up; web chat at {settings.web_url}")
            _print("`memex down` (or `make down`) stops it")
            return EXIT_OK
        time.sleep(0.2)
    _print("memex did not become healthy in time; stopping it")
    process.send_signal(signal.SIGTERM)
    return EXIT_FAILED


def supervise(args: argparse.Namespace, settings: StackSettings) -> int:
    """Runs the supervisor in this process until SIGTERM."""
    configure_logging(os.environ.get("MEMEX_LOG_LEVEL", "INFO"))
    return asyncio.run(Supervisor(settings).run())


def down(args: argparse.Namespace, settings: StackSettings) -> int:
    """Stops a running stack and waits for it to exit."""
    state = read_state(settings)
    if state is None:
        _print("memex is not running")
        return EXIT_OK
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    # The process itself, not its state file: the supervisor removes the file before it has
    # closed its own listening sockets (its metrics port), and an `up` right after a `down`
    # that returned on the file found a port in use.
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.2)
    if alive(pid):
        _print(f"the supervisor (pid {pid}) did not stop within 60s")
        return EXIT_FAILED
    _print("memex stopped")
    return EXIT_OK


def status(args: argparse.Namespace, settings: StackSettings) -> int:
    """Shows each service's live health; exit 3 when the stack is not running."""
    state = read_state(settings)
    if state is not None and state.get("store") in ("embedded", "weaviate"):
        settings = settings.model_copy(update={"store": state["store"]})  # what `up` was given
    if state is not None and state.get("orchestrator_state") in ("sqlite", "postgres"):
        settings = settings.model_copy(update={"state": state["orchestrator_state"]})
    if state is not None and isinstance(state.get("weaviate_nodes"), int):
        settings = settings.model_copy(update={"weaviate_nodes": state["weaviate_nodes"]})
    services = {s.name: s for s in stack_services(settings)}

    async def probe_all() -> dict[str, str]:
        names = list(services)
        results = await asyncio.gather(*(probe(services[n]) for n in names))
        return dict(zip(names, results, strict=True))

    live = asyncio.run(probe_all())
    known = (state or {}).get("services", {})
    report: dict[str, dict[str, Any]] = {
        name: {
            "address": services[name].address,
            "health": live[name],
            "restarts": known.get(name, {}).get("restarts", 0),
        }
        for name in services
    }
    indexed = index_report.load(settings)
    if args.json:
        pid = state["pid"] if state else None
        summary = {
            "running": state is not None,
            "supervisor_pid": pid,
            "web_url": settings.web_url,
            "services": report,
            "last_index": indexed,
        }
        _print(json.dumps(summary, indent=2))
    else:
        _print("memex is running" if state else "memex isn't running — start it with `memex up`")
        for name, service in report.items():
            _print(
                f"  {name:<12} {service['health']:<12} {service['address']}"
                f"  restarts={service['restarts']}"
            )
        if state:
            _print(f"web chat: {settings.web_url}")
            for line in index_report.render(indexed):
                _print(line)
    healthy = all(s["health"] == "SERVING" for s in report.values())
    if state is None:
        return EXIT_NOT_RUNNING
    return EXIT_OK if healthy else EXIT_FAILED


def worker(args: argparse.Namespace, settings: StackSettings) -> int:
    """Runs a queued-turn chat worker in the foreground, on the stack's orchestrator state (beside
    the one `memex up` supervises: its own id, a free health port, no metrics port)."""
    supervised = next(s for s in stack_services(settings) if s.name == "worker")
    env = {**os.environ, **supervised.env, "MEMEX_ORCHESTRATOR_WORKER_PORT": "0"}
    env.pop("MEMEX_ORCHESTRATOR_WORKER_METRICS_PORT", None)
    env.setdefault("MEMEX_ORCHESTRATOR_WORKER_ID", f"{socket.gethostname()}-chat-worker-foreground")
    os.execvpe(sys.executable, [sys.executable, "-m", "memex.orchestrator.queue.worker"], env)


def mcp(args: argparse.Namespace, settings: StackSettings) -> int:
    """Runs the MCP server on stdio (for an MCP client to spawn); it talks to the running stack."""
    try:
        import memex.gateway.mcp  # noqa: F401 - only to say clearly when it is missing
    except ImportError:
        print("the MCP server needs the memex-gateway package (`make install`)", file=sys.stderr)
        return EXIT_FAILED
    os.execvp(sys.executable, [sys.executable, "-m", "memex.gateway.mcp"])
