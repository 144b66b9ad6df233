"""A throwaway PostgreSQL cluster for a test."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from memex.shared.pgcluster import INSTALL_HINT, Cluster, find_bin_dir, give_to_owner
from memex.testing.paths import missing
from memex.testing.ports import free_port


@contextlib.contextmanager
def private_postgres() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster: ``initdb`` in a fresh temp dir, served on 127.0.0.1 at a
    free port with its socket in that dir, the memex database created; stopped and removed when
    the block ends. Skipped (failed under CI) when PostgreSQL's binaries are missing. The dir is
    made under the system temp dir, not pytest's (mode 0700 under root), so that the unprivileged
    account the cluster runs as when root starts it can reach it."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        missing(f"PostgreSQL's initdb, pg_ctl and postgres were not found: {INSTALL_HINT}")
    root = Path(tempfile.mkdtemp(prefix="memex-pg-"))
    give_to_owner(root)
    cluster = Cluster(root, free_port(), bin_dir)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
