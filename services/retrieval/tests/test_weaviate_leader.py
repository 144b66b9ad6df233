"""Reading the Raft leader from Weaviate's cluster statistics (``store.weaviate_leader``)."""

from __future__ import annotations

from typing import Any

import pytest

from memex.retrieval.store.weaviate_leader import agreed_leader


def _node(name: str, status: str = "HEALTHY", state: str = "Follower", leader: str = "") -> Any:
    if status != "HEALTHY":
        return {"name": name, "status": status}  # what Weaviate lists for a node that is down
    return {"name": name, "status": status, "leaderId": leader, "raft": {"state": state}}


def test_the_leader_is_named_once_every_healthy_node_agrees_and_it_leads() -> None:
    stats = {
        "statistics": [
            _node("node0", leader="node1"),
            _node("node1", state="Leader", leader="node1"),
            _node("node2", leader="node1"),
        ]
    }
    assert agreed_leader(stats) == "node1"


@pytest.mark.parametrize(
    "nodes",
    [
        # The leader was killed: the survivors still name it, and it does not answer.
        [
            _node("node0", leader="node1"),
            _node("node1", "UNAVAILABLE"),
            _node("node2", leader="node1"),
        ],
        # Memberlist declared it dead: it is no longer listed, the survivors still name it.
        [_node("node0", leader="node1"), _node("node2", leader="node1")],
        # An election is running.
        [_node("node0", state="Candidate"), _node("node2", leader="node1")],
        # Two nodes disagree.
        [
            _node("node0", leader="node2"),
            _node("node2", state="Leader", leader="node2"),
            _node("node1", leader="node1"),
        ],
        [],
    ],
)
def test_no_leader_while_it_is_dead_unknown_or_disputed(nodes: list[Any]) -> None:
    assert agreed_leader({"statistics": nodes}) is None
