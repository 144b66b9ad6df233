"""The nodes of a Weaviate cluster on one machine, and what each node's environment adds.

A cluster is a list of peers, the same on every node: ``name:gossip_port:raft_port`` each.
Weaviate finds its peers two ways: memberlist gossip (``CLUSTER_JOIN``, the other nodes' gossip
addresses) resolves a node name to an address, and Raft (``RAFT_JOIN``, every voter's
``name:raft_port``; ``RAFT_BOOTSTRAP_EXPECT`` voters) keeps the schema. On one host Weaviate
needs ``CLUSTER_IN_LOCALHOST=true``: the Raft port of a peer then comes from ``RAFT_JOIN``
rather than being the same everywhere, and a peer's internal Raft RPC port is its Raft port
plus one, so every node must use exactly that pair.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memex.shared.errors import InvalidArgument

_NAME_OK = re.compile(r"^[a-z][a-z0-9-]{0,31}$")

# Async replication (Weaviate >= 1.38 runs it on every replicated collection) compares replicas
# by hash trees in the background and copies what one lacks: it is how a node that was down
# catches up. Weaviate's defaults compare every 30 s and leave the last 30 s of writes alone;
# these bring a rejoined node up to date within seconds. 5 s is Weaviate's minimum frequency.
ASYNC_REPLICATION_ENV = {
    "ASYNC_REPLICATION_FREQUENCY": "5s",
    "ASYNC_REPLICATION_FREQUENCY_WHILE_PROPAGATING": "1s",
    "ASYNC_REPLICATION_PROPAGATION_DELAY": "5s",
}


@dataclass(frozen=True)
class Peer:
    """One node of the cluster as every other node sees it."""

    name: str
    gossip: int
    raft: int

    def __str__(self) -> str:
        return f"{self.name}:{self.gossip}:{self.raft}"


def parse_peers(text: str) -> list[Peer]:
    """``name:gossip:raft,...`` as peers; InvalidArgument naming what is wrong."""
    peers: list[Peer] = []
    for item in (part.strip() for part in text.split(",")):
        fields = item.split(":")
        if len(fields) != 3 or not all(f.isdigit() for f in fields[1:]):
            raise InvalidArgument(f"invalid Weaviate peer {item!r}: use name:gossip_port:raft_port")
        name, gossip, raft = fields[0], int(fields[1]), int(fields[2])
        if not _NAME_OK.match(name):
            raise InvalidArgument(
                f"invalid Weaviate node name {name!r}: a lower-case letter, then letters, "
                "digits or '-'"
            )
        if not (1024 <= gossip <= 65535 and 1024 <= raft < 65535):
            raise InvalidArgument(f"Weaviate peer {item!r}: ports must be within 1024-65535")
        peers.append(Peer(name, gossip, raft))
    names = [p.name for p in peers]
    if len(set(names)) != len(names):
        raise InvalidArgument(f"Weaviate peers repeat a node name: {text!r}")
    return peers


def cluster_env(
    name: str, peers: Sequence[Peer], gossip: int, raft: int, raft_rpc: int
) -> dict[str, str]:
    """What node ``name`` of ``peers``, listening on ``gossip``/``raft``/``raft_rpc``, adds to
    the single-node environment."""
    me = next((p for p in peers if p.name == name), None)
    if me is None:
        listed = ", ".join(map(str, peers))
        raise InvalidArgument(f"Weaviate node {name!r} is not among its peers ({listed})")
    if (me.gossip, me.raft) != (gossip, raft):
        raise InvalidArgument(
            f"Weaviate node {name!r} listens on gossip {gossip} and Raft {raft}, but its peers "
            f"list it as {me}"
        )
    if raft_rpc != me.raft + 1:
        raise InvalidArgument(
            f"Weaviate node {name!r}: the Raft RPC port must be the Raft port plus one "
            f"({me.raft + 1}) on a one-host cluster, not {raft_rpc}"
        )
    return {
        "CLUSTER_HOSTNAME": name,
        "CLUSTER_IN_LOCALHOST": "true",
        "CLUSTER_JOIN": ",".join(f"127.0.0.1:{p.gossip}" for p in peers if p.name != name),
        "RAFT_JOIN": ",".join(f"{p.name}:{p.raft}" for p in peers),
        "RAFT_BOOTSTRAP_EXPECT": str(len(peers)),
        # A killed node is declared dead in about a second instead of several, which shortens
        # the window in which coordinators still send it their share of a write.
        "MEMBERLIST_FAST_FAILURE_DETECTION": "true",
        # Raft's heartbeat and election timeouts are 1 s times this multiplier (Weaviate's
        # default 5: a dead leader is noticed after 5-10 s and replaced after ~8 s). Until a
        # node notices, it sends the tenant lookups of the writes it coordinates to the dead
        # leader, where they wait (store.weaviate_leader); with 1 a new leader is in place
        # 1-3 s after a kill. The nodes share one host, so there is no network delay to absorb.
        "RAFT_TIMEOUTS_MULTIPLIER": "1",
        **ASYNC_REPLICATION_ENV,
    }
