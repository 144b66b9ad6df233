"""Whether a Weaviate cluster has a live Raft leader, as one node's REST API reports it.

A multi-tenant write on a Weaviate node that is not the Raft leader first asks the leader for the
tenant's status (``TenantsShards`` in ``adapters/repos/db/multitenancy/validator.go``, sent by
``cluster/raft_query_endpoints.go``). That request has no deadline, and Weaviate's internal
gRPC client waits for the leader's connection to be ready (``waitForReady`` in
``cluster/rpc/client.go``). So when the leader is killed, a write that reaches a surviving node
before that node has noticed (Raft's heartbeat timeout) is sent to the dead leader and waits
there, until the leader comes back: a stall, not an error, which no retry on the client side
can shorten. The store therefore sends nothing to a node it failed over to until that node
reports a leader that is alive (``wait_for_leader``), and the launcher shortens Raft's timeouts
(``weaviate_peers``) so that takes a few seconds.

``GET /v1/cluster/statistics`` lists every node the answering node knows, each with its status
(``HEALTHY``, or ``UNAVAILABLE`` for a node that does not answer; a node memberlist declared dead
is left out) and its Raft view (``raft.state``, ``leaderId``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import httpx

from memex.retrieval.store.weaviate_replication import WeaviateNode

STATISTICS_PATH = "/v1/cluster/statistics"
LEADER_POLL = 0.2  # seconds between two looks while waiting for a leader
# How long a fail-over waits for a live leader before it lets calls through anyway. An election
# takes 1-3 s with the launcher's Raft timeouts; 10 s leaves room for a loaded machine.
LEADER_WAIT = 10.0
LEADER_REQUEST_TIMEOUT = 2.0


def agreed_leader(statistics: Mapping[str, Any]) -> str | None:
    """The leader's node name when the cluster has one that is alive: every healthy node names
    the same leader, and that leader is listed, healthy, and says it leads. None otherwise
    (no leader yet, a leader that died, or nodes that disagree during an election)."""
    nodes = statistics.get("statistics") or []
    healthy = [n for n in nodes if n.get("status") == "HEALTHY"]
    named = {n.get("leaderId") for n in healthy}
    if len(named) != 1:
        return None
    leader = named.pop()
    if not isinstance(leader, str) or not leader:
        return None
    for node in healthy:
        if node.get("name") == leader and (node.get("raft") or {}).get("state") == "Leader":
            return leader
    return None


async def cluster_leader(node: WeaviateNode, api_key: str) -> str | None:
    """The agreed leader as ``node`` sees it now; None if there is none or ``node`` does not
    answer."""
    url = f"http://{node.host}:{node.http_port}{STATISTICS_PATH}"
    try:
        async with httpx.AsyncClient(timeout=LEADER_REQUEST_TIMEOUT) as client:
            reply = await client.get(url, headers={"Authorization": f"Bearer {api_key}"})
            reply.raise_for_status()
            return agreed_leader(reply.json())
    except (httpx.HTTPError, ValueError):
        return None


async def wait_for_leader(node: WeaviateNode, api_key: str, within: float) -> str | None:
    """Polls ``node`` until it reports a live leader; the leader's name, or None after
    ``within`` seconds (the caller goes on anyway: with no quorum there is nothing to wait
    for, and its calls fail and are retried as usual)."""
    deadline = time.monotonic() + within
    while True:
        leader = await cluster_leader(node, api_key)
        if leader is not None or time.monotonic() >= deadline:
            return leader
        await asyncio.sleep(LEADER_POLL)
