"""The read policy (issue 11) on the real stack, through every surface: HTTP, MCP (the official
SDK's stdio client spawning `memex mcp`) and the CLI (a subprocess). For every read tool, no
sensitive text comes back unless the call asks AND the surface allows it, and every filter
changes the result as documented. Answers are reads too: an ask that did not ask for sensitive
notes neither cites nor quotes them, and says how many it withheld. One stack (the demo vault,
which has sensitive notes such as [[Therapy Notes]]) serves the whole module."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession, StdioServerParameters, stdio_client

from .conftest import CLI, DemoStack

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

# Text only sensitive items hold: a note, an entity, an inbox item, an event, an observation.
SENTINELS = [
    "Found out as what",
    "counsellor since January",
    "Confirm monthly sessions with Ruth",
    "First counselling session",
    "R ELLISON COUNSELLING",
]
THERAPY_QUERY = "therapy sessions with Ruth, counselling, sleep and worry appointments"
SURFACES = ["http", "mcp", "cli"]


class Refused(Exception):
    """A read the surface refused; the message is what the caller was told."""


class Reader:
    """One surface's read tools behind one signature: ``read(tool, **args)`` returns the
    result's JSON, or raises Refused with the surface's error text."""

    def read(self, tool: str, **args: Any) -> Any:
        raise NotImplementedError


class Http(Reader):
    def __init__(self, url: str, key: str = "") -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.Client(base_url=url, timeout=300, headers=headers)

    def read(self, tool: str, **args: Any) -> Any:
        sensitive = args.pop("include_sensitive", False)
        if tool == "search":
            body = {"query": args.pop("query"), "include_sensitive": sensitive}
            if "k" in args:
                body["limit"] = args.pop("k")
            r = self.client.post("/v1/search", json={**body, **args})
        elif tool == "records":
            body = {"collection": args.pop("collection"), "include_sensitive": sensitive}
            r = self.client.post("/v1/records/query", json={**body, **args})
        elif tool == "timeline":
            params = {"include_sensitive": str(sensitive).lower(), **args}
            r = self.client.get(f"/v1/people/{params.pop('person')}/timeline", params=params)
        elif tool == "inbox":
            r = self.client.get("/v1/inbox", params={"include_sensitive": str(sensitive).lower()})
        else:
            params = {"include_sensitive": str(sensitive).lower()}
            r = self.client.get(f"/v1/notes/{args['episode_id']}", params=params)
        if r.status_code != 200:
            raise Refused(f"{r.status_code} {r.text}")
        return r.json()


MCP_TOOLS = {
    "search": "search",
    "records": "query_records",
    "timeline": "person_timeline",
    "inbox": "list_inbox",
    "note": "get_note",
}


class Mcp(Reader):
    def __init__(self, portal: BlockingPortal, session: ClientSession) -> None:
        self.portal = portal
        self.session = session

    def read(self, tool: str, **args: Any) -> Any:
        result = self.portal.call(self.session.call_tool, MCP_TOOLS[tool], args)
        if result.is_error:
            raise Refused(" ".join(getattr(c, "text", "") for c in result.content))
        return result.structured_content


class Cli(Reader):
    def __init__(self, stack: DemoStack) -> None:
        self.stack = stack

    def read(self, tool: str, **args: Any) -> Any:
        words: list[str] = []
        if tool == "search":
            words = ["search", args.pop("query")]
        elif tool == "records":
            words = ["query", args.pop("collection")]
        elif tool == "timeline":
            words = ["timeline", args.pop("person")]
        elif tool == "inbox":
            words = ["inbox"]
        else:
            words = ["note", args.pop("episode_id")]
        for name, value in args.items():
            if name == "include_sensitive":
                words += ["--include-sensitive"] if value else []
            elif name == "k":
                words += ["-k", str(value)]
            elif name == "channels":
                words += ["--channels", ",".join(value)]
            elif name in ("tags", "collections"):
                for v in value:
                    words += [f"--{name[:-1]}", v]
            else:
                words += [f"--{name}", str(value)]
        done = self.stack.memex(*words, "--json")
        if done.returncode != 0:
            raise Refused(f"exit {done.returncode}: {done.stderr}")
        return json.loads(done.stdout)


@contextlib.asynccontextmanager
async def mcp_session(env: dict[str, str]) -> AsyncIterator[ClientSession]:
    server = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "mcp"], env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextlib.contextmanager
def mcp_reader(env: dict[str, str]) -> Iterator[Mcp]:
    """An MCP client session kept open across sync calls (one `memex mcp` process)."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(mcp_session(env)) as session,
    ):
        yield Mcp(portal, session)


@pytest.fixture(scope="module")
def keys(demo_stack: DemoStack) -> dict[str, str]:
    """Two API keys: one granted sensitive reads, one not."""
    plain = demo_stack.memex("keys", "create", "policy-plain")
    granted = demo_stack.memex("keys", "create", "policy-granted", "--sensitive")
    assert plain.returncode == 0 and granted.returncode == 0, plain.stderr + granted.stderr
    return {"plain": plain.stdout.strip(), "granted": granted.stdout.strip()}


@pytest.fixture(scope="module")
def readers(demo_stack: DemoStack) -> Iterator[dict[str, Reader]]:
    """Each surface as a caller that may not see sensitive items unless it asks (HTTP keyless
    on loopback, MCP with the default setting, the CLI)."""
    with mcp_reader(demo_stack.env) as mcp:
        yield {"http": Http(demo_stack.gateway_url), "mcp": mcp, "cli": Cli(demo_stack)}


@pytest.fixture(scope="module")
def therapy_id(demo_stack: DemoStack) -> str:
    """The episode id of [[Therapy Notes]] (the owner finds it with the CLI)."""
    hits = Cli(demo_stack).read("search", query=THERAPY_QUERY, k=20, include_sensitive=True)
    return str(
        next(
            h["provenance"]["episode_id"]
            for h in hits["items"]
            if h["citation"] == "[[Therapy Notes]]"
        )
    )


def items_of(tool: str, result: Any) -> list[dict[str, Any]]:
    """The items or records of a result, whatever the surface calls the list."""
    if tool == "timeline":
        return [result["entity"], *(e["item"] for e in result["entries"])]
    if tool == "note":
        return [result]
    for name in ("items", "hits", "records"):
        if name in result:
            return list(result[name])
    raise AssertionError(result)


def leaks(result: Any) -> list[str]:
    text = json.dumps(result, ensure_ascii=False)
    return [s for s in SENTINELS if s in text]


READS: list[tuple[str, dict[str, Any]]] = [
    ("search", {"query": THERAPY_QUERY, "k": 30}),
    ("records", {"collection": "inbox", "limit": 100}),
    ("records", {"collection": "entities", "limit": 100}),
    ("records", {"collection": "events", "limit": 100}),
    ("records", {"collection": "observations", "limit": 100}),
    ("timeline", {"person": "Maya"}),
    ("inbox", {}),
]


@pytest.mark.parametrize("surface", SURFACES)
def test_no_sensitive_text_unless_asked(
    readers: dict[str, Reader], therapy_id: str, surface: str
) -> None:
    reader = readers[surface]
    for tool, args in READS:
        result = reader.read(tool, **args)
        assert not leaks(result), (tool, args, leaks(result))
        assert not [i for i in items_of(tool, result) if i.get("sensitive")], (tool, args)
    # A sensitive entity's timeline and a sensitive note are refused, saying how to ask.
    for tool, args in [("timeline", {"person": "Ruth"}), ("note", {"episode_id": therapy_id})]:
        with pytest.raises(Refused) as refused:
            reader.read(tool, **args)
        message = str(refused.value)
        assert "include_sensitive" in message and not leaks(message), (tool, message)


def test_the_owner_sees_sensitive_items_when_asking(
    readers: dict[str, Reader], therapy_id: str
) -> None:
    for surface in ("http", "cli"):  # keyless loopback HTTP and the CLI are the owner
        reader = readers[surface]
        note = reader.read("note", episode_id=therapy_id, include_sensitive=True)
        assert "Found out as what" in note["text"] and note["sensitive"] is True
        hits = items_of(
            "search", reader.read("search", query=THERAPY_QUERY, k=30, include_sensitive=True)
        )
        assert any(h["sensitive"] for h in hits)
        inbox = reader.read("inbox", include_sensitive=True)
        assert "Confirm monthly sessions with Ruth" in json.dumps(inbox)
        ruth = reader.read("timeline", person="Ruth", include_sensitive=True)
        assert ruth["entity"]["id"] == "ruth-ellison"


def test_http_keys_need_the_grant(
    demo_stack: DemoStack, keys: dict[str, str], therapy_id: str
) -> None:
    plain, granted = (
        Http(demo_stack.gateway_url, keys["plain"]),
        Http(demo_stack.gateway_url, keys["granted"]),
    )
    for tool, args in [*READS, ("note", {"episode_id": therapy_id})]:
        with pytest.raises(Refused) as refused:
            plain.read(tool, **args, include_sensitive=True)
        assert "403" in str(refused.value) and "--sensitive" in str(refused.value), tool
    assert not leaks(plain.read("search", query=THERAPY_QUERY, k=30))
    note = granted.read("note", episode_id=therapy_id, include_sensitive=True)
    assert "Found out as what" in note["text"]


def test_mcp_needs_the_setting(
    demo_stack: DemoStack, readers: dict[str, Reader], therapy_id: str
) -> None:
    for tool, args in [*READS, ("note", {"episode_id": therapy_id})]:
        with pytest.raises(Refused) as refused:
            readers["mcp"].read(tool, **args, include_sensitive=True)
        assert "MEMEX_MCP_ALLOW_SENSITIVE" in str(refused.value), tool
    with mcp_reader({**demo_stack.env, "MEMEX_MCP_ALLOW_SENSITIVE": "true"}) as allowed:
        note = allowed.read("note", episode_id=therapy_id, include_sensitive=True)
        assert "Found out as what" in note["text"]
        assert leaks(allowed.read("inbox", include_sensitive=True))


@pytest.mark.parametrize("surface", SURFACES)
def test_filters_change_the_result(readers: dict[str, Reader], surface: str) -> None:
    reader = readers[surface]

    def hits(**args: Any) -> list[dict[str, Any]]:
        return items_of("search", reader.read("search", query="the flat deposit", **args))

    everything = hits(k=20)
    assert len(everything) > 2
    assert hits(since="2030-01-01") == []
    assert 0 < len(hits(k=2)) <= 2
    tagged = hits(k=20, tags=["home"])
    assert tagged and all("home" in h["tags"] for h in tagged)
    early = hits(k=20, until="2025-12-31")
    assert early and all("" < h["provenance"]["date"] <= "2025-12-31" for h in early)
    keyword = hits(k=20, channels=["keyword"])
    assert keyword and all(
        {c["channel"] for c in h["channel_scores"]} == {"keyword"} for h in keyword
    )
    events = hits(k=30, channels=["vector", "keyword", "graph"], collections=["events"])
    records = [h for h in events if h["kind"] != "chunk"]
    assert all(h["collection"] == "events" for h in records)

    def records_of(**args: Any) -> list[dict[str, Any]]:
        return items_of("records", reader.read("records", collection="events", **args))

    assert len(records_of(limit=3)) == 3
    recent = records_of(limit=100, since="2026-06-01")
    assert recent and all(r["fields"]["date"] >= "2026-06-01" for r in recent)
    assert len(recent) < len(records_of(limit=100))
    timeline = reader.read("timeline", person="Graham", since="2026-01-01")
    assert timeline["entries"] and all(e["date"] >= "2026-01-01" for e in timeline["entries"])

    bad: list[tuple[dict[str, Any], str]] = [
        ({"since": "2026-05-01", "until": "2026-01-01"}, "before since"),
        ({"k": 101}, "100"),
    ]
    for args, fragment in bad:
        with pytest.raises(Refused) as refused:
            hits(**args)
        assert fragment in str(refused.value), (surface, args, str(refused.value))


def test_cli_search_reaches_telemetry(demo_stack: DemoStack) -> None:
    done = demo_stack.memex("search", "allotment plot", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["turn_id"]  # written by the orchestrator's telemetry
    explained = demo_stack.memex("search", "allotment plot", "--explain")
    assert explained.returncode == 0, explained.stderr
    # Each hit's provenance survives the orchestrator: channel ranks and the score arithmetic.
    assert "channels: " in explained.stdout and "vector #" in explained.stdout
    assert "x recency" in explained.stdout and "x salience" in explained.stdout


# Asked about [[Therapy Notes]]' content; its distinctive phrases below are not in the question,
# so an answer holding one could only have it from the note.
THERAPY_QUESTION = "What did Ruth and I talk about in my counselling sessions?"
THERAPY_PHRASES = [
    "phone lives in the kitchen",
    "money shame",
    "Worry appointments",
    "£60 a session",
]


def assert_withheld(answer: dict[str, Any]) -> None:
    """An answer that used no sensitive note: none cited or quoted, and the count reported."""
    text = json.dumps(answer, ensure_ascii=False)
    assert "[[Therapy Notes]]" not in text, answer
    assert not [p for p in THERAPY_PHRASES if p.casefold() in text.casefold()], answer
    assert not leaks(answer), answer
    assert answer["withheld"] > 0, answer
    assert "withheld from this answer" in answer["answer"], answer


def test_answers_withhold_sensitive_notes_unless_asked(
    demo_stack: DemoStack, readers: dict[str, Reader]
) -> None:
    """One HTTP ask (keyless loopback, not asking) and one MCP ask (the default setting), both
    with the tiny local model, which B3 alone would let see the note."""
    http = httpx.post(
        f"{demo_stack.gateway_url}/v1/ask", json={"question": THERAPY_QUESTION}, timeout=300
    )
    assert http.status_code == 200, http.text
    assert_withheld(http.json())
    mcp = readers["mcp"]
    assert isinstance(mcp, Mcp)
    result = mcp.portal.call(mcp.session.call_tool, "ask", {"question": THERAPY_QUESTION})
    assert not result.is_error, result.content
    assert_withheld(result.structured_content)
    # Asking for them without the setting is refused before any model call, saying how.
    refused = mcp.portal.call(
        mcp.session.call_tool, "ask", {"question": THERAPY_QUESTION, "include_sensitive": True}
    )
    assert refused.is_error
    assert "MEMEX_MCP_ALLOW_SENSITIVE" in " ".join(getattr(c, "text", "") for c in refused.content)
