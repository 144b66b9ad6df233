"""A private PostgreSQL cluster on loopback, from Debian's binaries (``make postgres``).

Tests start one per session (``initdb`` in a temp dir, a random port, stopped afterwards) and
``memex up --state postgres`` keeps one under its data dir. PostgreSQL refuses to run as root,
so when memex runs as root (these machines, CI) the cluster's folder is handed to the
unprivileged ``nobody`` account and every PostgreSQL command runs as it through ``runuser``.
``nobody`` must be able to reach the folder, so a root cluster lives under a world-traversable
directory (``/tmp`` for tests; see ``cluster_root``).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "memex"
DATABASE = "memex"
RUN_AS = "nobody"
INSTALL_HINT = "install PostgreSQL's server binaries with `make postgres` (Debian's postgresql)"


def find_bin_dir() -> Path | None:
    """The folder of ``initdb``, ``pg_ctl`` and ``postgres``: on PATH, else Debian's
    /usr/lib/postgresql/<newest>/bin; None when they are not installed."""
    on_path = shutil.which("initdb")
    if on_path:
        folder = Path(on_path).resolve().parent
        if (folder / "pg_ctl").exists() and (folder / "postgres").exists():
            return folder
    for candidate in sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True
    ):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    return None


def owner() -> str | None:
    """The account a cluster runs as: the unprivileged one for root, else the caller (None)."""
    return RUN_AS if os.geteuid() == 0 else None


def as_owner(command: list[str]) -> list[str]:
    """``command`` as the cluster's owner: unchanged for a normal user, through ``runuser`` as
    the unprivileged account for root (PostgreSQL will not run as root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", RUN_AS, "--", *command]
    return command


def give_to_owner(path: Path) -> None:
    """Hands ``path`` to the account the cluster runs as (a no-op unless root)."""
    if os.geteuid() == 0:
        shutil.chown(path, RUN_AS)


@dataclass(frozen=True)
class Cluster:
    """A cluster's folder (``data`` inside it, the socket and log beside) and its port."""

    root: Path
    port: int
    bin_dir: Path

    @property
    def data(self) -> Path:
        """The cluster's data directory (PGDATA)."""
        return self.root / "data"

    @property
    def url(self) -> str:
        """The connection URL of the memex database (trust auth, loopback only)."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{DATABASE}"

    def initialised(self) -> bool:
        """Whether ``initdb`` has run here."""
        return (self.data / "PG_VERSION").exists()

    def init(self) -> None:
        """Creates the cluster (once): trust authentication, which is safe only because the
        server listens on loopback alone and its socket sits in a folder of its owner's."""
        self.root.mkdir(parents=True, exist_ok=True)
        give_to_owner(self.root)
        subprocess.run(
            as_owner(
                [
                    str(self.bin_dir / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    SUPERUSER,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ]
            ),
            check=True,
            capture_output=True,
        )

    def server_options(self, *, fast: bool = False) -> list[str]:
        """The server's options: port, 127.0.0.1 only, the socket in the cluster's folder.
        ``fast`` turns fsync off (for throwaway test clusters only)."""
        options = ["-p", str(self.port), "-c", "listen_addresses=127.0.0.1"]
        options += ["-c", f"unix_socket_directories={self.root}"]
        if fast:
            options += ["-c", "fsync=off", "-c", "synchronous_commit=off"]
        return options

    def server_command(self) -> list[str]:
        """The ``postgres`` command that serves this cluster in the foreground; run it as
        ``owner()`` (a process's ``user``), so that signals reach the server itself."""
        return [str(self.bin_dir / "postgres"), "-D", str(self.data), *self.server_options()]

    def create_database(self) -> None:
        """Creates the memex database if it is missing (the server must be running)."""
        query = f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"
        found = subprocess.run(
            self._client_command("psql", "-d", "postgres", "-tAc", query),
            check=True,
            capture_output=True,
            text=True,
        )
        if found.stdout.strip() != "1":
            subprocess.run(
                self._client_command("createdb", DATABASE), check=True, capture_output=True
            )

    def _client_command(self, tool: str, *args: str) -> list[str]:
        """``tool`` (psql, createdb) with ``args``, connecting through the cluster's socket as the
        superuser, run as the cluster's owner."""
        connection = ["-h", str(self.root), "-p", str(self.port), "-U", SUPERUSER]
        return as_owner([str(self.bin_dir / tool), *connection, *args])

    def start(self) -> None:
        """Starts a throwaway server in the background with ``pg_ctl``, waits until it accepts
        connections, and creates the memex database."""
        log = self.root / "server.log"
        subprocess.run(
            as_owner(
                [
                    *(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-l", str(log), "-w"),
                    *("-o", " ".join(self.server_options(fast=True)), "start"),
                ]
            ),
            check=True,
            capture_output=True,
        )
        self.create_database()

    def stop(self) -> None:
        """Stops a server started by ``start`` (fast: open sessions are ended)."""
        subprocess.run(
            as_owner([str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop"]),
            check=False,
            capture_output=True,
        )
