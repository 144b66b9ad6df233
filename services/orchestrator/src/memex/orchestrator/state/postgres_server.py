"""A local PostgreSQL for `memex up --state postgres`: ``python -m
memex.orchestrator.state.postgres_server`` (settings ``MEMEX_POSTGRES_...``).

It creates the cluster once (``initdb`` into ``MEMEX_POSTGRES_DIR``, trust authentication, on
127.0.0.1 only), runs ``postgres`` as its child, creates the memex database, and reports SERVING
on a gRPC health port (the supervisor probes it like the chat worker's) while PostgreSQL runs.
SIGTERM stops PostgreSQL with a fast shutdown; if PostgreSQL dies, so does this process, and the
supervisor restarts both. As root, PostgreSQL runs as ``nobody`` (it refuses root), so its folder
must be one ``nobody`` can reach (the stack puts it under /var/lib/memex then).

PostgreSQL dies with this process (``PR_SET_PDEATHSIG``, as the supervisor's children do,
``memex.shared.supervised``), asked for by the child itself, not in a ``preexec_fn``: a
``preexec_fn``, or ``user=`` (a change of user between fork and exec), makes Python fork where it
would vfork, and a fork runs gRPC's fork handlers in the child while this process's health server
runs. So ``postgres`` starts through ``memex.shared.supervised``'s ``exec`` form (``python -m
memex.shared.supervised exec PARENT_PID USER -- postgres ...``), spawned with neither: it changes
to USER (as root), then asks for the signal (a change of user clears it; an exec keeps it), then
execs ``postgres``, which keeps the launcher's pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import psycopg
from pydantic import Field, ValidationError
from pydantic_settings import SettingsConfigDict

from memex.shared import supervised
from memex.shared.errors import FailedPrecondition, MemexError, Unavailable
from memex.shared.logs import configure_logging
from memex.shared.pgcluster import INSTALL_HINT, Cluster, find_bin_dir, owner
from memex.shared.server import EngineSlot, GrpcService
from memex.shared.settings import ServiceSettings, describe_invalid

log = logging.getLogger(__name__)
READY_SECONDS = 60.0


class PostgresServerSettings(ServiceSettings):
    """Where the cluster lives and its ports (the stack's MEMEX_POSTGRES_* names)."""

    model_config = SettingsConfigDict(env_prefix="MEMEX_POSTGRES_")

    dir: Path = Field(..., description="The cluster's folder (its data dir, socket and log).")
    port: int = Field(54329, ge=1, le=65535, description="PostgreSQL's port (loopback).")
    health_port: int = Field(50058, ge=0, le=65535, description="This launcher's gRPC health.")


def server_launch(cluster: Cluster) -> list[str]:
    """The command that runs the cluster's ``postgres`` as this process's child that dies with
    it, as ``owner()`` (``memex.shared.supervised``'s exec form; see the module's docstring)."""
    return supervised.exec_form(os.getpid(), owner(), cluster.server_command())


@contextlib.asynccontextmanager
async def running_cluster(settings: PostgresServerSettings) -> AsyncIterator[Cluster]:
    """PostgreSQL running on the cluster (created first if new), its memex database present;
    stopped when the block ends."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise FailedPrecondition(f"PostgreSQL's initdb and postgres were not found: {INSTALL_HINT}")
    cluster = Cluster(settings.dir, settings.port, bin_dir)
    if owner() is not None:
        # PostgreSQL runs as the unprivileged account, which must reach its folder: the
        # folders memex made above it are opened to it (only those, never a home).
        missing = list(itertools.takewhile(lambda p: not p.exists(), settings.dir.parents))
        for parent in reversed(missing):
            parent.mkdir()
            parent.chmod(0o755)  # whatever the umask
    if not cluster.initialised():
        log.info("creating the PostgreSQL cluster in %s", cluster.data)
        await asyncio.to_thread(cluster.init)
    # Neither a preexec_fn nor user= here: either would make Python fork (module docstring).
    server = await asyncio.create_subprocess_exec(
        *server_launch(cluster), stdin=asyncio.subprocess.DEVNULL
    )
    try:
        await _until_ready(cluster, server)
        yield cluster
    finally:
        if server.returncode is None:
            server.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
            try:
                await asyncio.wait_for(server.wait(), 30)
            except TimeoutError:
                server.kill()
                await server.wait()


async def _until_ready(cluster: Cluster, server: asyncio.subprocess.Process) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_SECONDS
    while True:
        if server.returncode is not None:
            raise Unavailable(f"PostgreSQL exited with {server.returncode} while starting")
        try:
            await asyncio.to_thread(cluster.create_database)
            return
        except Exception as exc:
            if loop.time() > deadline:
                raise Unavailable(f"PostgreSQL did not accept connections: {exc}") from exc
        await asyncio.sleep(0.3)


class PostgresService:
    """The health server over a running cluster; PostgreSQL's exit stops it."""

    def __init__(self, settings: PostgresServerSettings) -> None:
        self._settings = settings
        served = settings.model_copy(update={"port": settings.health_port})
        self.service: GrpcService[Cluster] = GrpcService(served, [], self._register, self._load)

    @staticmethod
    def _register(server: grpc.aio.Server, slot: EngineSlot[Cluster]) -> None:
        """Health and reflection only."""

    @contextlib.asynccontextmanager
    async def _load(self) -> AsyncIterator[Cluster]:
        async with running_cluster(self._settings) as cluster:
            watch = asyncio.create_task(self._watch(cluster))
            try:
                yield cluster
            finally:
                watch.cancel()

    async def _watch(self, cluster: Cluster) -> None:
        # A cheap liveness check: a server that stops answering takes this process down, and
        # the supervisor restarts both.
        while True:
            await asyncio.sleep(5)
            try:
                await asyncio.to_thread(_ping, cluster.url)
            except psycopg.Error:
                log.error("PostgreSQL stopped answering at 127.0.0.1:%d", cluster.port)
                self.service.started.result().stop()
                return


def _ping(url: str) -> None:
    with psycopg.connect(url, connect_timeout=5) as conn:
        conn.execute("SELECT 1")


async def _serve(settings: PostgresServerSettings) -> None:
    await PostgresService(settings).service.run()


def main() -> None:
    """Parses settings and runs until SIGTERM."""
    try:
        settings = PostgresServerSettings()
    except ValidationError as exc:
        print(describe_invalid(exc, PostgresServerSettings), file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging(settings.log_level)
    try:
        asyncio.run(_serve(settings))
    except MemexError as exc:
        log.error("PostgreSQL cannot run: %s", exc.message)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
