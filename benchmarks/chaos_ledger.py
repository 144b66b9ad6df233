"""What `make chaos` writes while faults land, what it was told was kept, and the check that
every acknowledged write is still there; and the event streams that must end, never hang.

A write counts only once memex acknowledged it: `memex index` exited 0 for a note, a chat's
`done` event for a conversation, 202 for a queued turn. Writes refused during a fault are fine
(the client saw the error); an acknowledged write missing afterwards is lost data.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from chaos_faults import RunningStack

TERMINAL = {"result", "done", "error"}


@dataclass
class Ledger:
    """Acknowledged writes, by kind."""

    notes: dict[str, str] = field(default_factory=dict)  # note name -> its unique word
    conversations: dict[str, str] = field(default_factory=dict)  # id -> the message sent
    turns: list[str] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)  # kind -> writes answered with an error
    last_refusal: dict[str, str] = field(default_factory=dict)  # kind -> the latest error seen

    def refuse(self, kind: str, why: str) -> None:
        """Counts a write memex did not acknowledge, and why."""
        self.refused[kind] = self.refused.get(kind, 0) + 1
        self.last_refusal[kind] = why[:200]

    def count(self) -> int:
        """Acknowledged writes of every kind."""
        return len(self.notes) + len(self.conversations) + len(self.turns)

    def refusals(self) -> int:
        """Writes not acknowledged, of every kind."""
        return sum(self.refused.values())


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, dict[str, object]]]:
    """The (event, data) pairs of a server-sent event stream; comment lines skipped."""
    event, data = "message", ""
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line and data:
            yield event, json.loads(data)
            event, data = "message", ""


class Writer:
    """Writes notes, conversations and queued turns in turn, recording what was acknowledged."""

    def __init__(self, stack: RunningStack, vault: Path, ledger: Ledger) -> None:
        self._stack = stack
        self._vault = vault
        self._ledger = ledger
        self._n = 0

    async def run(self, stop: asyncio.Event) -> None:
        """Writes until ``stop`` is set, one write of each kind per round."""
        async with httpx.AsyncClient(base_url=self._stack.gateway_url, timeout=60) as client:
            while not stop.is_set():
                self._n += 1
                await self._note()
                await self._conversation(client)
                await self._turn(client)
                await asyncio.sleep(0.2)

    async def _note(self) -> None:
        name, word = f"Chaos note {self._n}", f"chaosword{self._n}x"
        (self._vault / f"{name}.md").write_text(f"# {name}\nThe tide log says {word} today.\n")
        done = await asyncio.to_thread(self._stack.memex, "index", str(self._vault), "--json")
        if done.returncode == 0:
            self._ledger.notes[name] = word
        else:
            self._ledger.refuse("note", (done.stderr or done.stdout).strip())

    async def _conversation(self, client: httpx.AsyncClient) -> None:
        message = f"chaos conversation {self._n}: what does the tide log say?"
        conversation, last = "", "no event"
        try:
            async with client.stream("POST", "/v1/chat", json={"message": message}) as response:
                if response.status_code != 200:
                    await response.aread()
                    last = f"HTTP {response.status_code} {response.text}"
                else:
                    async for event, data in sse_events(response):
                        if event == "meta":
                            conversation = str(data["conversation_id"])
                        last = event if event != "error" else f"error {data}"
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__} {exc}"
        if conversation and last == "done":
            self._ledger.conversations[conversation] = message
        else:
            self._ledger.refuse("conversation", last)

    async def _turn(self, client: httpx.AsyncClient) -> None:
        try:
            response = await client.post("/v1/turns", json={"text": f"chaos turn {self._n}"})
        except httpx.HTTPError as exc:
            self._ledger.refuse("turn", f"{type(exc).__name__} {exc}")
            return
        if response.status_code == 202:
            self._ledger.turns.append(str(response.json()["turn"]["id"]))
        else:
            self._ledger.refuse("turn", f"HTTP {response.status_code} {response.text}")


async def lost_writes(stack: RunningStack, ledger: Ledger) -> list[str]:
    """Every acknowledged write that memex no longer has, described."""
    lost = []
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=60) as client:
        for name, word in ledger.notes.items():
            found = await client.post(
                "/v1/search", json={"query": word, "channels": ["keyword"], "limit": 5}
            )
            citations = [item["citation"] for item in found.json().get("items", [])]
            if f"[[{name}]]" not in citations:
                lost.append(f"note {name!r} (searched {word!r}: {found.status_code} {citations})")
        for conversation, message in ledger.conversations.items():
            got = await client.get(f"/v1/conversations/{conversation}")
            if got.status_code != 200 or message not in got.text:
                lost.append(f"conversation {conversation}: {got.status_code}")
        for turn in ledger.turns:
            got = await client.get(f"/v1/turns/{turn}")
            if got.status_code != 200:
                lost.append(f"queued turn {turn}: {got.status_code}")
    return lost


async def unfinished_turns(stack: RunningStack, ledger: Ledger, timeout: float) -> list[str]:
    """Queued turns not answered (or failed with a reason) within ``timeout``: the worker must
    finish every acknowledged turn, even those it was working on when something died."""
    deadline = time.monotonic() + timeout
    waiting = list(ledger.turns)
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=30) as client:
        while waiting and time.monotonic() < deadline:
            still = []
            for turn in waiting:
                got = await client.get(f"/v1/turns/{turn}")
                if got.status_code != 200 or got.json()["turn"]["state"] not in (
                    "answered",
                    "error",
                ):
                    still.append(turn)
            waiting = still
            if waiting:
                await asyncio.sleep(1)
    return waiting


@dataclass(frozen=True)
class StreamEnd:
    """How one event stream ended: the terminal event, "disconnected", or "hung"."""

    how: str
    seconds: float


async def watch_ask_stream(url: str, question: str, timeout: float) -> StreamEnd:
    """Opens a streamed ask and reads it to its end; a stream silent past ``timeout`` hung."""
    started = time.monotonic()
    last = "no event"
    try:
        async with (
            httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(timeout)) as client,
            client.stream(
                "POST", "/v1/ask", json={"question": question, "stream": True}
            ) as response,
        ):
            if response.status_code != 200:
                return StreamEnd(f"http {response.status_code}", time.monotonic() - started)
            async for event, _ in sse_events(response):
                last = event
                if event in TERMINAL:
                    return StreamEnd(event, time.monotonic() - started)
    except httpx.TimeoutException:
        return StreamEnd("hung", time.monotonic() - started)
    except httpx.HTTPError:
        return StreamEnd("disconnected", time.monotonic() - started)
    return StreamEnd(f"closed after {last}", time.monotonic() - started)
