"""Two tenants share one real stack through the gateway (issue 14): an admin key made with the CLI
makes keys for alice and bob over HTTP; each indexes notes, chats and queues a turn; then neither
can see, search, forget or count the other's notes, conversations or turns, on every backend.

Another tenant's item is a 404 exactly like a missing one (never a 403): existence does not leak.
One stack per backend is shared by every check in this module."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from memex.embedding.config import default_model_dir
from memex.retrieval.weaviate_server import find_binary
from memex.testing import require
from memex.testing.retrieval import write
from memex.testing.stack import private_stack_env

from .test_gateway import events as read_events

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]

CLI = [sys.executable, "-m", "memex.cli"]

# The backends under test: each is the stack's extra environment. Each memory store and each
# orchestrator state store runs once, paired as a person would deploy them: one machine
# (embedded, SQLite) and scaled out (Weaviate, PostgreSQL). Another pairing is one more line.
BACKENDS = [
    pytest.param({"MEMEX_STORE": "embedded", "MEMEX_STATE": "sqlite"}, id="embedded-sqlite"),
    pytest.param({"MEMEX_STORE": "weaviate", "MEMEX_STATE": "postgres"}, id="weaviate-postgres"),
]

# Each tenant's notes: one of its own, and one at the same path and title as the other's (so a
# read or forget by path, title or episode id, which comes from the path, could only go wrong by
# reaching across). Alice's copy is the longer. Both hold one same sentence, which both tenants'
# questions bring into their model calls: a forget recognises a logged call by such quotes.
COMMON = "Everyone brings their own mug to the Sunday meeting at the hall."
NOTES = {
    "alice": {
        "Lighthouse.md": "# Lighthouse\nThe lighthouse keeper's code is 4417 for the blue door.\n",
        "Shared.md": "# Shared\n## Boat\nThe boat is moored at pier nine.\n## Garden\n"
        "Runner beans climb the north fence.\n## Bees\nThe hive swarmed in late May.\n"
        f"## Meeting\n{COMMON}\n",
    },
    "bob": {
        "Orchard.md": "# Orchard\nThe quince orchard ripens in October behind the mill.\n",
        "Shared.md": f"# Shared\nBob's shared note mentions the railway timetable.\n{COMMON}\n",
    },
}
OWN = {"alice": "Lighthouse", "bob": "Orchard"}
# Words only that tenant's notes hold: none may reach the other in any answer.
MARKERS = {"alice": ("4417", "pier nine", "Runner beans", "swarmed"), "bob": ("quince", "railway")}
# A question about the other's notes that names none of their markers.
QUESTIONS = {
    "alice": "Which fruit ripens behind the mill, what timetable is in the shared note, and what "
    "do people bring to the Sunday meeting at the hall?",
    "bob": "What is the code for the blue door, where is the boat moored, and what do people "
    "bring to the Sunday meeting at the hall?",
}
OTHER = {"alice": "bob", "bob": "alice"}


def memex(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The `memex` CLI against the stack; a failure fails the test with its output."""
    done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"memex {' '.join(args)}: {done.stdout}{done.stderr}"
    return done


@dataclass
class Tenant:
    """One tenant's client (its own key) and what it made."""

    name: str
    client: httpx.Client
    notes: dict[str, str] = field(default_factory=dict)  # title -> episode id
    conversation: str = ""
    turn: str = ""
    thread: str = ""

    def search(self, query: str) -> list[dict[str, Any]]:
        reply = self.client.post("/v1/search", json={"query": query, "limit": 50})
        assert reply.status_code == 200, reply.text
        items: list[dict[str, Any]] = reply.json()["items"]
        return items


@dataclass
class Shared:
    """The running stack and both tenants."""

    env: dict[str, str]
    tenants: dict[str, Tenant]


def _chat(client: httpx.Client, message: str) -> str:
    """Chats once; the new conversation's id."""
    with client.stream("POST", "/v1/chat", json={"message": message}) as reply:
        assert reply.status_code == 200, reply.read()
        events = list(read_events(reply.iter_lines()))
    names = [name for name, _ in events]
    assert names[0] == "meta" and names[-1] == "done", events
    conversation: str = events[0][1]["conversation_id"]
    return conversation


def _seed(tenant: Tenant, env: dict[str, str], vault: Path) -> None:
    for name, text in NOTES[tenant.name].items():
        write(vault, name, text)
    memex(env, "index", str(vault), "--tenant", tenant.name, "--json")
    for title in NOTES[tenant.name]:
        title = title.removesuffix(".md")
        hits = [h for h in tenant.search(title) if h["provenance"]["title"] == title]
        assert hits, f"{tenant.name} cannot find their own note {title!r}"
        tenant.notes[title] = hits[0]["provenance"]["episode_id"]
    # Both ask about the other's notes: the answers must still draw on their own only.
    tenant.conversation = _chat(tenant.client, QUESTIONS[tenant.name])
    queued = tenant.client.post("/v1/turns", json={"text": QUESTIONS[tenant.name]})
    assert queued.status_code == 202, queued.text
    turn = queued.json()["turn"]
    tenant.turn, tenant.thread = turn["id"], turn["thread_id"]


@pytest.fixture(scope="module", params=BACKENDS)
def shared(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Shared]:
    """One stack for the backend, keys required, the stub reasoner (answers do not matter here,
    isolation does); an admin key from the CLI makes alice's and bob's keys over HTTP."""
    backend: dict[str, str] = request.param
    require(default_model_dir() / "model.onnx", "run `make models`")
    if backend.get("MEMEX_STORE") == "weaviate":
        find_binary()  # no binary is an error naming `make weaviate`, not a skip
    tmp = tmp_path_factory.mktemp("tenants")
    env = private_stack_env(
        tmp / "data",
        MEMEX_START_TIMEOUT_SECONDS="180",
        MEMEX_REASONER_ENGINE="stub",
        MEMEX_GATEWAY_REQUIRE_KEYS="true",
        MEMEX_GATEWAY_RATE_LIMIT_PER_MINUTE="0",  # many checks, quickly
        **backend,
    )
    env.pop("MEMEX_REASONER_MODEL_PATH", None)
    env.pop("MEMEX_REASONER_MODEL", None)
    url = f"http://127.0.0.1:{env['MEMEX_GATEWAY_PORT']}"
    clients: list[httpx.Client] = []
    try:
        # Keys are required, so the gateway starts only once a key exists: the admin's, first.
        boss = memex(env, "keys", "create", "boss", "--admin").stdout.strip()
        memex(env, "up")
        services = json.loads(memex(env, "status", "--json").stdout)["services"]
        assert ("weaviate" in services) == (backend.get("MEMEX_STORE") == "weaviate"), services
        assert ("postgres" in services) == (backend.get("MEMEX_STATE") == "postgres"), services
        admin = httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {boss}"})
        clients.append(admin)
        tenants = {}
        for name in NOTES:
            made = admin.post("/v1/admin/keys", json={"name": f"{name}-key", "tenant": name})
            assert made.status_code == 201, made.text
            headers = {"Authorization": f"Bearer {made.json()['token']}"}
            client = httpx.Client(base_url=url, timeout=120, headers=headers)
            clients.append(client)
            tenants[name] = Tenant(name, client)
            _seed(tenants[name], env, tmp / f"vault-{name}")
        yield Shared(env, tenants)
    finally:
        for client in clients:
            client.close()
        subprocess.run([*CLI, "down"], env=env, timeout=120, check=False)


def _pairs(shared: Shared) -> Iterator[tuple[Tenant, Tenant]]:
    """(tenant, other) both ways round."""
    for name, tenant in shared.tenants.items():
        yield tenant, shared.tenants[OTHER[name]]


def _leaks(me: Tenant, other: Tenant, text: str) -> list[str]:
    """The other tenant's marker words in ``text``."""
    return [m for m in MARKERS[other.name] if m.lower() in text.lower()]


def test_no_tenant_sees_the_others_items_which_read_as_missing(shared: Shared) -> None:
    for me, other in _pairs(shared):
        episode = other.notes[OWN[other.name]]
        missing = me.client.get(f"/v1/notes/{episode}")
        assert missing.status_code == 404, (me.name, missing.text)
        absent = me.client.get(f"/v1/notes/{episode}x")
        assert absent.status_code == 404 and absent.json().keys() == missing.json().keys()
        assert other.client.get(f"/v1/notes/{episode}").status_code == 200
        # The same path is the same episode id in both tenants: each reads its own note.
        assert me.notes["Shared"] == other.notes["Shared"]
        mine = me.client.get(f"/v1/notes/{me.notes['Shared']}")
        assert mine.status_code == 200 and not _leaks(me, other, mine.text), mine.text
        assert me.client.get(f"/v1/conversations/{other.conversation}").status_code == 404
        assert other.client.get(f"/v1/conversations/{other.conversation}").status_code == 200
        assert me.client.get(f"/v1/turns/{other.turn}").status_code == 404
        assert other.client.get(f"/v1/turns/{other.turn}").status_code == 200
        assert me.client.get(f"/v1/threads/{other.thread}/turns").status_code == 404
        # Nor can it add to the other's conversation or thread.
        chat = me.client.post(
            "/v1/chat", json={"message": "more", "conversation_id": other.conversation}
        )
        assert chat.status_code == 404, chat.text
        turn = me.client.post("/v1/turns", json={"text": "more", "thread_id": other.thread})
        assert turn.status_code == 404, turn.text
        # An OpenAI client naming the other's conversation cannot continue it either.
        continued = me.client.post(
            "/v1/chat/completions",
            json={
                "model": "memex",
                "messages": [{"role": "user", "content": "and then?"}],
                "memex": {"conversation_id": other.conversation},
            },
        )
        assert continued.status_code == 404, continued.text


def test_lists_and_counts_hold_only_the_callers_own(shared: Shared) -> None:
    for me, other in _pairs(shared):
        conversations = me.client.get("/v1/conversations").json()["conversations"]
        assert [c["id"] for c in conversations] == [me.conversation]
        threads = me.client.get("/v1/threads").json()["threads"]
        assert [t["id"] for t in threads] == [me.thread]
        turns = me.client.get(f"/v1/threads/{me.thread}/turns").json()["turns"]
        assert turns and {t["thread_id"] for t in turns} == {me.thread}
        assert other.turn not in {t["id"] for t in turns}


def _answered(tenant: Tenant) -> list[dict[str, Any]]:
    """The tenant's queued thread once the chat worker has answered it."""
    deadline = time.monotonic() + 120
    while True:
        turns: list[dict[str, Any]] = tenant.client.get(
            f"/v1/threads/{tenant.thread}/turns"
        ).json()["turns"]
        if turns[0]["state"] in ("answered", "error") or time.monotonic() > deadline:
            return turns
        time.sleep(0.5)


def test_no_tenant_searches_or_asks_into_the_others_notes(shared: Shared) -> None:
    for me, other in _pairs(shared):
        turns = _answered(me)
        assert turns[0]["state"] == "answered", turns
        replay = me.client.get(f"/v1/conversations/{me.conversation}").text
        assert not _leaks(me, other, json.dumps(turns) + replay), (turns, replay)
        for title, text in NOTES[other.name].items():
            found = me.search(text)
            assert found, (me.name, title)  # own notes still match: the search did run
            assert {h["provenance"]["episode_id"] for h in found} <= set(me.notes.values())
            assert not _leaks(me, other, json.dumps(found)), (me.name, title, found)
        asked = me.client.post("/v1/ask", json={"question": QUESTIONS[me.name]})
        assert asked.status_code == 200, asked.text
        assert not _leaks(me, other, asked.text), asked.text


def _receipt(tenant: Tenant, note: str, *, dry_run: bool) -> httpx.Response:
    return tenant.client.delete(f"/v1/notes/{note}", params={"dry_run": dry_run})


def test_no_tenant_forgets_or_counts_the_others_notes(shared: Shared) -> None:
    alice, bob = shared.tenants["alice"], shared.tenants["bob"]
    for me, other in _pairs(shared):
        own = OWN[other.name]
        for name in (other.notes[own], f"{own}.md", own):  # episode id, vault path, title
            for dry_run in (True, False):
                refused = _receipt(me, name, dry_run=dry_run)
                assert refused.status_code == 404, (me.name, name, refused.text)
        assert other.client.get(f"/v1/notes/{other.notes[own]}").status_code == 200
        assert [h for h in other.search(own) if h["provenance"]["title"] == own]

    # Both have a "Shared" note (one episode id): a count is the caller's own note's, and bob
    # forgetting his changes nothing of alice's.
    before = _receipt(alice, alice.notes["Shared"], dry_run=True).json()
    bobs = _receipt(bob, "Shared.md", dry_run=True).json()
    assert _chunks(before) > _chunks(bobs) > 0, (before, bobs)
    assert _calls(before) > 0 and _calls(bobs) > 0, (before, bobs)  # both logged quoting calls
    for receipt, other in ((before, bob), (bobs, alice)):
        assert other.conversation not in receipt["conversations_citing"]
        assert other.thread not in receipt["threads_citing"]

    forgotten = _receipt(bob, "Shared", dry_run=False)
    assert forgotten.status_code == 200 and forgotten.json()["complete"], forgotten.text
    assert bob.client.get(f"/v1/notes/{bob.notes['Shared']}").status_code == 404
    after = _receipt(alice, "Shared.md", dry_run=True).json()
    assert after["counts"] == before["counts"] and after["checks"] == before["checks"]
    assert alice.client.get(f"/v1/notes/{alice.notes['Shared']}").status_code == 200
    assert [h for h in alice.search("pier nine boat") if h["provenance"]["title"] == "Shared"]

    # The conversations, threads and turns the other owns survive a delete by the wrong tenant.
    for me, other in _pairs(shared):
        assert me.client.delete(f"/v1/conversations/{other.conversation}").status_code == 404
        assert me.client.delete(f"/v1/threads/{other.thread}").status_code == 404
        assert other.client.get(f"/v1/conversations/{other.conversation}").status_code == 200
        assert other.client.get(f"/v1/turns/{other.turn}").status_code == 200


def _calls(receipt: dict[str, Any]) -> int:
    """How many logged model calls quoting the note a forget receipt counts."""
    return sum(c["removed"] + c["remaining"] for c in receipt["counts"] if c["store"] == "llm_log")


def _chunks(receipt: dict[str, Any]) -> int:
    """How many chunks a forget receipt counts in the retrieval store."""
    return sum(
        c["removed"] + c["remaining"]
        for c in receipt["counts"]
        if c["store"].startswith("retrieval") and "chunk" in c["what"]
    )
