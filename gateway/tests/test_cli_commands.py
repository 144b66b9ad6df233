"""The `memex` read commands against real in-process gRPC servers on port 0 whose servicers are
fakes: what each command sends, what it prints (text and --json), and its exit code; and what
every command says when memex is down (ask and chat: ``test_cli_ask_chat.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from memex.cli.records_commands import format_item
from memex.gateway.present import SearchHit
from memex.orchestrator.v1 import orchestrator_pb2 as opb
from memex.testing import free_ports

from .support.cli_harness import ITEM, memex


async def test_query_sends_conditions_and_prints_records(stack: Any) -> None:
    env, retrieval, _ = stack
    code, out, _ = await memex(
        env, "query", "events", "--where", "date", ">=", "2025-01-01",
        "--where", "participants", "contains", "graham-pearce", "--where", "n", "in", "[1, 2]",
        "--sort=-date", "--limit", "5",
    )  # fmt: skip
    assert code == 0
    assert "2025-03-31  events:ev-1  Boiler fixed" in out
    request = retrieval.seen[-1]
    conditions: list[Any] = [
        (f.field, f.op, json_format.MessageToDict(f.value)) for f in request.filter
    ]
    assert conditions == [
        ("date", "gte", "2025-01-01"),
        ("participants", "contains", "graham-pearce"),
        ("n", "in", [1, 2]),
    ]
    assert (request.sort, request.limit) == ("-date", 5)
    code, out, _ = await memex(env, "query", "events", "--json")
    assert code == 0
    assert json.loads(out)["records"][0]["citation"] == "events:ev-1"


async def test_query_bad_input_exit_codes(stack: Any) -> None:
    env, _, _ = stack
    code, _, err = await memex(env, "query", "events", "--where", "date", "=~", "x")
    assert code == 2 and "unknown operator '=~'" in err
    code, _, err = await memex(env, "query", "secrets")
    assert code == 2 and "PERMISSION_DENIED" in err


async def test_timeline_and_search_go_to_the_orchestrator(stack: Any) -> None:
    env, reads, _ = stack
    code, out, _ = await memex(env, "timeline", "graham", "--since", "2026-01-01")
    assert code == 0
    request = reads.seen[-1]
    assert (request.person, request.filters.since) == ("graham", "2026-01-01")
    assert not request.filters.include_sensitive
    assert "# Graham Pearce" in out and "2026-04-28  [[Flat Deposit]]  Graham agreed" in out
    code, out, _ = await memex(env, "timeline", "graham", "--json")
    assert code == 0 and json.loads(out)["entity"]["id"] == "graham-pearce"
    code, _, err = await memex(env, "timeline", "Nobody")
    assert code == 4 and "Nobody" in err
    code, out, _ = await memex(
        env, "search", "deposit", "-k", "2", "--channels", "vector,keyword", "--tag", "home",
        "--until", "2026-12-31", "--include-sensitive", "--explain",
    )  # fmt: skip
    assert code == 0
    request = reads.seen[-1]
    assert (request.query, request.k, list(request.filters.tags)) == ("deposit", 2, ["home"])
    assert request.filters.until == "2026-12-31" and request.filters.include_sensitive
    assert "vector #2 (0.7)" in out and "fused 0.03000 x recency 0.900" in out
    code, _, err = await memex(env, "search", "x", "--channels", "psychic")
    assert code == 2 and "unknown channel 'psychic'" in err


async def test_inbox_and_note(stack: Any) -> None:
    env, retrieval, _ = stack
    code, out, _ = await memex(env, "inbox", "--all")
    assert code == 0 and "inbox:inbox-1  Pay allotment rent  [pending]" in out
    assert retrieval.seen[-1].include_done
    code, out, _ = await memex(env, "inbox", "--json")
    assert json.loads(out)["items"][0]["id"] == "inbox-1"
    code, out, _ = await memex(env, "note", "ep1")
    assert code == 0 and "[[Flat Deposit]]  home/Flat Deposit.md  2026-04-28  #home" in out
    assert "Graham returned £1,030." in out
    code, out, _ = await memex(env, "note", "ep1", "--json")
    assert json.loads(out)["path"] == "home/Flat Deposit.md"
    code, _, err = await memex(env, "note", "missing")
    assert code == 4 and "NOT_FOUND" in err


async def test_search_ask_and_note_as_of_a_day(stack: Any) -> None:
    """docs/as-of.md: --as-of goes to the orchestrator (search, ask, query, timeline, inbox); an
    answer says the day on its first line; a note lists its versions."""
    env, reads, orchestrator = stack
    code, _, _ = await memex(env, "search", "deposit", "--as-of", "2026-02-01", "--tenant", "t1")
    assert code == 0
    assert (reads.seen[-1].filters.as_of, reads.seen[-1].tenant) == ("2026-02-01", "t1")
    code, out, _ = await memex(env, "ask", "How much?", "--as-of", "2026-02-01", "--tenant", "t1")
    assert code == 0
    assert out.startswith("As of 2026-02-01:\n£1,030 came back.\n"), out
    assert (orchestrator.asks[-1].as_of, orchestrator.asks[-1].tenant) == ("2026-02-01", "t1")
    code, out, _ = await memex(env, "ask", "How much?", "--as-of", "2026-02-01", "--json")
    assert json.loads(out)["as_of"] == "2026-02-01"
    code, out, _ = await memex(env, "ask", "How much?")
    assert "As of" not in out and orchestrator.asks[-1].as_of == ""
    for command in (["query", "events"], ["timeline", "Graham"]):
        code, _, _ = await memex(env, *command, "--as-of", "2026-02-01")
        assert code == 0 and reads.seen[-1].filters.as_of == "2026-02-01", command
    code, _, _ = await memex(env, "inbox", "--as-of", "2026-02-01")
    assert code == 0 and reads.seen[-1].as_of == "2026-02-01"

    code, out, _ = await memex(env, "note", "ep1")
    assert code == 0
    assert "Versions (docs/as-of.md):\n" in out
    assert "  v1 2026-01-10T12:00:00Z to 2026-03-01T12:00:00Z  ep1@v1\n" in out
    assert "  v2 2026-03-01T12:00:00Z to now  ep1 (current)\n" in out
    code, out, _ = await memex(env, "note", "ep1@v1")
    assert code == 0 and "ep1@v1 (shown)" in out and reads.seen[-1].episode_id == "ep1@v1"
    code, out, _ = await memex(env, "note", "ep1", "--json")
    versions = json.loads(out)["versions"]
    assert [(v["episode_id"], v["number"], v["valid_to"]) for v in versions] == [
        ("ep1@v1", 1, "2026-03-01T12:00:00Z"),
        ("ep1", 2, ""),
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["query", "events"],
        ["timeline", "graham"],
        ["inbox"],
        ["note", "ep1"],
        ["search", "x"],
        ["ask", "q"],
        ["chat", "hi"],
        ["conversations", "--json"],
    ],
)
async def test_every_read_command_says_start_memex_when_it_is_down(
    tmp_path: Path, args: list[str]
) -> None:
    ports = {
        f"MEMEX_{n}_PORT": str(p)
        for n, p in zip(("RETRIEVAL", "ORCHESTRATOR"), free_ports(2), strict=True)
    }
    env = {**os.environ, "MEMEX_DATA_DIR": str(tmp_path), **ports}
    code, out, err = await memex(env, *args)
    assert code == 3, err
    assert "memex isn't running" in err and "`memex up`" in err
    assert out == ""


def test_explain_shows_a_rerank_when_one_ran() -> None:
    plain = format_item(1, SearchHit.from_proto(ITEM), explain=True)
    assert "= 0.02970" in plain and "reranked" not in plain
    reranked = opb.MemoryItem()
    reranked.CopyFrom(ITEM)
    reranked.rerank_score, reranked.score = 4.25, 0.8
    hit = SearchHit.from_proto(reranked)
    assert hit.rerank_score == 4.25 and SearchHit.from_proto(ITEM).rerank_score is None
    text = format_item(1, hit, explain=True)
    assert "vector #2 (0.7)" in text and "fused 0.03000 x recency 0.900" in text
    assert "reranked: model 4.25 -> 0.80000" in text


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
async def test_a_stage_behind_a_running_orchestrator_failing_is_not_called_memex_down(
    stack: Any, json_flag: list[str]
) -> None:
    env, _, _ = stack
    code, _, err = await memex(env, "ask", "reasoner down", *json_flag)
    assert code == 3, err
    assert "UNAVAILABLE: the reasoner: GOAWAY received" in err
    assert "isn't running" not in err
