"""The MCP server as an MCP client sees it: the SDK's own stdio client spawns `memex mcp`, lists
the tools and calls each against a real stack (real embedding and llama.cpp models). What the
tools may return of sensitive items, and their filters: test_read_policy.py."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from .conftest import DemoStack

pytestmark = [pytest.mark.e2e]
TOOLS = {
    "ask",
    "search",
    "query_records",
    "person_timeline",
    "list_inbox",
    "get_note",
    "list_beliefs",
    "review_belief",
    "forget_belief",
}


async def with_session(env: dict[str, str], body: Any) -> Any:
    server = StdioServerParameters(command=sys.executable, args=["-m", "memex.cli", "mcp"], env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await body(session)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    return data


def test_mcp_tools_without_a_stack_say_start_it(stack_env: dict[str, str]) -> None:
    async def body(session: ClientSession) -> CallToolResult:
        return await session.call_tool("list_inbox", {})

    result = anyio.run(with_session, stack_env, body)
    assert result.is_error
    text = result.content[0].text
    assert "isn't running" in text and "memex up" in text


@pytest.mark.slow
def test_every_mcp_tool_on_the_real_stack(demo_stack: DemoStack) -> None:
    """On the session's demo-vault stack (shared with test_read_policy: one stack, not two)."""

    async def body(session: ClientSession) -> dict[str, Any]:
        listed = await session.list_tools()
        out: dict[str, Any] = {"tools": {t.name: t for t in listed.tools}}
        out["search"] = await session.call_tool("search", {"query": "deposit returned", "k": 5})
        out["records"] = await session.call_tool(
            "query_records",
            {
                "collection": "events",
                "filters": [{"field": "date", "op": "gte", "value": "2026-01-01"}],
                "sort": "date",
                "limit": 5,
            },
        )
        hit = next(h for h in structured(out["search"])["hits"] if h["provenance"]["episode_id"])
        episode_id = hit["provenance"]["episode_id"]
        out["note"] = await session.call_tool("get_note", {"episode_id": episode_id})
        out["timeline"] = await session.call_tool("person_timeline", {"person": "Graham"})
        out["inbox"] = await session.call_tool("list_inbox", {"limit": 5})
        out["ask"] = await session.call_tool(
            "ask", {"question": "How much of the deposit did Graham return?"}
        )
        out["bad_schema"] = await session.call_tool("search", {"query": "", "k": -1})
        out["bad_collection"] = await session.call_tool("query_records", {"collection": "secrets"})
        out["unknown_person"] = await session.call_tool("person_timeline", {"person": "Nobody"})
        out["still_alive"] = await session.call_tool("list_inbox", {"limit": 1})
        # Before any note of the vault was written, memory held none of it (docs/as-of.md).
        out["search_then"] = await session.call_tool(
            "search", {"query": "deposit returned", "k": 5, "as_of": "2000-01-01"}
        )
        out["beliefs"] = await session.call_tool("list_beliefs", {"limit": 50})
        listed_beliefs = structured(out["beliefs"])["beliefs"]
        vault_belief = next(b["id"] for b in listed_beliefs if not b["derived"])
        out["review_vault"] = await session.call_tool(
            "review_belief", {"belief_id": vault_belief, "verdict": "reject"}
        )
        out["review_unknown"] = await session.call_tool(
            "review_belief", {"belief_id": "no-such-belief", "verdict": "confirm"}
        )
        return out

    out = anyio.run(with_session, demo_stack.env, body)
    tools = out["tools"]
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and tool.output_schema, tool.name
    assert tools["search"].input_schema["required"] == ["query"]

    hits = structured(out["search"])["hits"]
    assert hits and len(hits) <= 5
    assert all(h["citation"] for h in hits)
    assert "[[Flat Deposit Agreement]]" in {h["citation"] for h in hits}

    note = structured(out["note"])
    [hit] = [h for h in hits if h["provenance"]["episode_id"]][:1]
    assert note["citation"] == hit["citation"]
    assert note["episode_id"] == hit["provenance"]["episode_id"]
    assert hit["text"] in note["text"]
    shown = demo_stack.memex("note", note["episode_id"], "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["text"] == note["text"]

    records = structured(out["records"])["records"]
    assert records and all(r["fields"]["date"] >= "2026-01-01" for r in records)
    assert [r["fields"]["date"] for r in records] == sorted(r["fields"]["date"] for r in records)
    assert all(r["citation"] for r in records)

    timeline = structured(out["timeline"])
    assert timeline["entity"]["id"] == "graham-pearce"
    dates = [e["date"] for e in timeline["entries"]]
    dated = [d for d in dates if d]
    assert dated and dates[: len(dated)] == sorted(dated)  # oldest first, undated last
    assert all(e["item"]["citation"] for e in timeline["entries"])

    inbox = structured(out["inbox"])["items"]
    assert inbox and all(i["collection"] == "inbox" and i["citation"] for i in inbox)

    answer = structured(out["ask"])
    assert answer["answer"] and isinstance(answer["abstained"], bool)
    for citation in answer["citations"]:
        assert citation["support"] in ("verbatim", "paraphrase", "inference", "unchecked")
        assert citation["ref"].startswith("[[") or ":" in citation["ref"]
    # The text content mirrors the structured result, for clients that read only text.
    assert json.loads(out["ask"].content[0].text)["answer"] == answer["answer"]

    for name in ("bad_schema", "bad_collection", "unknown_person"):
        assert out[name].is_error, name
    assert "validation" in out["bad_schema"].content[0].text.lower()
    assert "allowlisted" in out["bad_collection"].content[0].text
    assert "Nobody" in out["unknown_person"].content[0].text
    assert not out["still_alive"].is_error  # a bad call leaves the server serving
    assert structured(out["search_then"])["hits"] == []

    beliefs = structured(out["beliefs"])["beliefs"]
    assert beliefs and all(b["statement"] and b["status"] for b in beliefs)
    # The vault's own beliefs are the vault's: changed there, not reviewed here.
    assert out["review_vault"].is_error
    assert "records/beliefs.jsonl" in out["review_vault"].content[0].text
    assert (
        out["review_unknown"].is_error and "no-such-belief" in out["review_unknown"].content[0].text
    )
