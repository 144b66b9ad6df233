"""How the Weaviate store uses a replicated cluster: nodes, consistency levels, retries.

* **Replication factor** (``factor``): every collection is created with it; 3 on a 3-node
  cluster puts a copy of every tenant on every node. Deletion conflicts (a replica that missed a
  delete meets one that has it) are resolved by time, so the later of a write and a delete wins:
  a forgotten note does not come back from a replica that was down, and a note written again
  after a forget is not deleted by the old tombstone.
* **Writes at QUORUM** (2 of 3): a write returns once a majority holds it, so it survives the
  loss of any one node, and it still succeeds while one node is down. ONE would lose
  acknowledged writes when that one replica dies before replicating; ALL would fail every
  write while any node is down.
* **Reads at QUORUM** by default: with writes at QUORUM, two quorums always share a node, so a
  read sees every write that returned (read-your-writes: the indexer reads fingerprints it just
  wrote, a forget reads again to prove the note is gone). Weaviate answers from the newest
  replica and repairs the stale one. ONE is faster but may answer from a node that just
  rejoined and has not caught up yet; it is offered for search-heavy use that can accept that.
* **Fail-over and retries**: the store talks to one node; when a call fails for a reason a lost
  node explains (connection refused or reset, gRPC unavailable, a timeout, a 5xx, a replica
  that did not answer), it moves to the next node and runs the whole call again, backing off
  from 0.2 s to 2 s, for up to ``retry_seconds``. The client library retries a refused gRPC
  connection on the same node for up to a minute before it reports anything, so the store also
  watches its node (a TCP connect every 0.5 s): two misses in a row give the node up, and the
  calls still running on it are abandoned and run again on the next node, once that node reports
  a live Raft leader (``weaviate_leader``: a write sent to a node that still believes in a dead
  leader waits there until the leader returns). Running a call again is safe because every
  store write is idempotent (objects are keyed by UUIDv5 of memex ids; see ``store.base``).
  A single node gets no retries: there is nowhere to go, and the error is reported at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from weaviate.classes.config import ConsistencyLevel
from weaviate.exceptions import (
    UnexpectedStatusCodeError,
    WeaviateClosedClientError,
    WeaviateConnectionError,
    WeaviateDeleteManyError,
    WeaviateGRPCUnavailableError,
    WeaviateInsertManyAllFailedError,
    WeaviateQueryError,
    WeaviateRetryError,
    WeaviateTenantGetError,
    WeaviateTimeoutError,
)

from memex.shared.errors import InvalidArgument

ReadLevel = Literal["ONE", "QUORUM", "ALL"]

FIRST_BACKOFF = 0.2
MAX_BACKOFF = 2.0
WATCH_INTERVAL = 0.5  # how often the store checks that its node accepts connections
WATCH_TIMEOUT = 1.0


class NodeLost(Exception):
    """The node a call ran on was given up (it stopped accepting connections) mid-call."""


class ReplicaWriteError(RuntimeError):
    """Weaviate refused part of a write (for instance a replica did not answer in time)."""


@dataclass(frozen=True)
class WeaviateNode:
    """Where one node of the cluster answers: REST and gRPC."""

    host: str
    http_port: int
    grpc_port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.http_port}:{self.grpc_port}"


def parse_nodes(text: str) -> list[WeaviateNode]:
    """``host:http_port:grpc_port,...``; empty text is no nodes; InvalidArgument otherwise."""
    if not text.strip():
        return []
    nodes = []
    for item in (part.strip() for part in text.split(",")):
        host, _, ports = item.partition(":")
        http, _, grpc = ports.partition(":")
        if not (host and http.isdigit() and grpc.isdigit()) or not (
            1 <= int(http) <= 65535 and 1 <= int(grpc) <= 65535
        ):
            raise InvalidArgument(f"invalid Weaviate node {item!r}: use host:http_port:grpc_port")
        nodes.append(WeaviateNode(host, int(http), int(grpc)))
    return nodes


@dataclass(frozen=True)
class ReplicationPolicy:
    """Replication factor, consistency levels and retry window of one store."""

    factor: int = 1
    read: ReadLevel = "QUORUM"
    retry_seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.factor < 1:
            raise InvalidArgument(f"Weaviate replication factor must be >= 1, not {self.factor}")
        if self.read not in ("ONE", "QUORUM", "ALL"):
            raise InvalidArgument(
                f"Weaviate read consistency must be ONE, QUORUM or ALL, not {self.read!r}"
            )
        if self.retry_seconds < 0:
            raise InvalidArgument("Weaviate retry window must not be negative")

    @property
    def read_level(self) -> ConsistencyLevel:
        """The consistency level of reads and searches."""
        return ConsistencyLevel(self.read)

    @property
    def write_level(self) -> ConsistencyLevel:
        """Writes and deletes: always a majority of the replicas."""
        return ConsistencyLevel.QUORUM

    def check_nodes(self, nodes: int) -> None:
        """A factor above the number of nodes the store knows is a configuration error."""
        if self.factor > nodes:
            raise InvalidArgument(
                f"Weaviate replication factor {self.factor} needs at least {self.factor} nodes, "
                f"but the store knows {nodes}: list the others in MEMEX_RETRIEVAL_WEAVIATE_NODES"
            )


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is what a lost or restarting node causes, so another try may succeed."""
    if isinstance(exc, UnexpectedStatusCodeError):
        return exc.status_code >= 500 or exc.status_code == 0
    return isinstance(
        exc,
        WeaviateConnectionError
        | WeaviateTimeoutError
        | WeaviateQueryError
        | WeaviateInsertManyAllFailedError
        | WeaviateDeleteManyError
        | WeaviateGRPCUnavailableError
        | WeaviateTenantGetError
        | WeaviateRetryError
        | WeaviateClosedClientError
        | ReplicaWriteError
        | NodeLost,
    )
