"""The queued-chat change feed (issue 37): who is told when a thread's turns change.

The turn queue signals ``TurnEvents`` after every transaction that changes a turn's state or
writes an assistant turn; a watcher waiting on that thread wakes and re-reads it. A signal says
only *which* thread changed (tenant and thread id), never what changed: the watcher reads the
thread itself, so a burst of changes costs one read and nothing is sent twice or lost.

Across processes (the chat worker is one of its own), in-process signals do not reach the
watcher:

- on PostgreSQL the queue also NOTIFYs ``CHANNEL`` in the same transaction as the change, and a
  watch LISTENs on a connection of its own (``postgres_listener``), so a change committed by any
  replica wakes it at once;
- on SQLite there is no NOTIFY, so a watcher also re-reads every ``POLL_SECONDS``: a worker in
  another process is seen within that, one in this process at once.

No gRPC here: the servicer translates what ``Orchestrator.watch_thread`` yields.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Protocol, TypeVar

from memex.shared.errors import NotFound

log = logging.getLogger(__name__)

CHANNEL = "memex_turns"
POLL_SECONDS = 2.0

Key = tuple[str, str]  # (tenant, thread id)


class _Turn(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_Turn)


def payload(tenant: str, thread_id: str) -> str:
    """A NOTIFY payload naming one thread."""
    return json.dumps({"tenant": tenant, "thread_id": thread_id})


def parse_payload(text: str) -> Key | None:
    """The thread a payload names; None for one this memex did not write."""
    try:
        data = json.loads(text)
        return str(data["tenant"]), str(data["thread_id"])
    except (ValueError, KeyError, TypeError):
        return None


class Subscription:
    """One watcher's wake-ups for one thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._changed = asyncio.Event()

    def wake(self) -> None:
        """Marks the thread changed; safe from any thread (the stores run in worker threads)."""
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(self._changed.set)

    async def wait(self, timeout: float) -> bool:
        """Waits for a change or ``timeout`` seconds; True when woken by a change."""
        try:
            await asyncio.wait_for(self._changed.wait(), timeout)
        except TimeoutError:
            return False
        self._changed.clear()
        return True


class TurnEvents:
    """In-process notifier: which watchers wait on which thread."""

    def __init__(self) -> None:
        # Signals come from the threads asyncio.to_thread runs the stores in, so a plain lock.
        self._lock = threading.Lock()
        self._watchers: dict[Key, set[Subscription]] = {}

    def signal(self, tenant: str, thread_id: str) -> None:
        """Wakes every watcher of the thread (after the change is committed)."""
        with self._lock:
            watchers = list(self._watchers.get((tenant, thread_id), ()))
        for watcher in watchers:
            watcher.wake()

    @contextlib.contextmanager
    def subscribe(self, tenant: str, thread_id: str) -> Iterator[Subscription]:
        """A subscription to the thread for the block. Subscribe before the first read, so a
        change between that read and the first wait still wakes the watcher."""
        subscription = Subscription(asyncio.get_running_loop())
        key = (tenant, thread_id)
        with self._lock:
            self._watchers.setdefault(key, set()).add(subscription)
        try:
            yield subscription
        finally:
            with self._lock:
                watchers = self._watchers.get(key, set())
                watchers.discard(subscription)
                if not watchers:
                    self._watchers.pop(key, None)


@contextlib.asynccontextmanager
async def postgres_listener(url: str, events: TurnEvents) -> AsyncIterator[None]:
    """For the block, LISTENs on ``CHANNEL`` on a connection of its own and signals ``events``
    for each NOTIFY, so changes committed by other processes (the worker, other replicas) wake
    this process's watchers. If the connection fails the watchers still poll."""
    import psycopg  # only with PostgreSQL, as state/postgres.py

    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        log.warning("cannot LISTEN %s (%s); this watch polls", CHANNEL, exc)
        yield
        return

    async def forward() -> None:
        try:
            async for note in conn.notifies():
                key = parse_payload(note.payload)
                if key is not None:
                    events.signal(*key)
        except psycopg.Error as exc:
            log.warning("LISTEN %s ended (%s); watchers fall back to polling", CHANNEL, exc)

    try:
        await conn.execute(f"LISTEN {CHANNEL}")
        task = asyncio.create_task(forward())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    finally:
        await conn.close()


async def watch(
    events: TurnEvents,
    tenant: str,
    thread_id: str,
    read: Callable[[], Awaitable[Sequence[T]]],
    *,
    listen_url: str | None = None,
    poll_seconds: float | None = None,
) -> AsyncGenerator[tuple[T, bool], None]:
    """A thread's turns as ``read`` gives them, each with True (current), then each turn that is
    new or differs from what was last sent, with False, as the thread changes. ``read`` raising
    NotFound on the first read propagates (an unknown thread); later it ends the watch (the
    thread was deleted). ``listen_url``: PostgreSQL's, to hear other processes' changes;
    ``poll_seconds``: how often to re-read anyway (``POLL_SECONDS``, read at call time)."""
    poll = POLL_SECONDS if poll_seconds is None else poll_seconds
    listening = postgres_listener(listen_url, events) if listen_url else contextlib.nullcontext()
    async with listening:
        with events.subscribe(tenant, thread_id) as subscription:
            sent: dict[str, T] = {}
            for turn in await read():
                sent[turn.id] = turn
                yield turn, True
            while True:
                await subscription.wait(poll)
                try:
                    turns = await read()
                except NotFound:
                    return
                for turn in turns:
                    if sent.get(turn.id) != turn:
                        sent[turn.id] = turn
                        yield turn, False
