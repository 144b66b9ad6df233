"""The chat worker for queued turns (SPEC B13): ``python -m memex.orchestrator.queue.worker``.

It claims the oldest pending user turn (pending → thinking, leased to this worker), composes the
thread's context without a model call, asks, and writes the answer and the answered state in one
transaction; any failure marks the turn error and the loop goes on. On start it takes back the
turns it held when it last died, and any turn whose worker's lease ran out. Stopping it puts the
turn in hand back to pending, so nothing is lost.

Beside the loop it runs the learning loop once a night (``reflect_at``, docs/reflect.md) for the
default tenant, unless ``reflect_nightly`` is off or the reasoner is remote and
``reflect_remote`` is not set. Of several worker replicas on one database, one runs it a night.

It runs as a process of the stack (`memex up` starts it, the supervisor restarts it): a small gRPC
server on loopback reports health SERVING while the loop runs, and its metrics are served on
``MEMEX_ORCHESTRATOR_WORKER_METRICS_PORT``. If the loop dies, the process exits non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

import grpc

from memex.orchestrator.__main__ import load_settings
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.conversation.text import PriorTurn, compose_query
from memex.orchestrator.memory.policy import history_text
from memex.orchestrator.metrics import WORKER_TURNS
from memex.orchestrator.queue.turns import TURN_REQUEST
from memex.orchestrator.service import Orchestrator, open_orchestrator
from memex.orchestrator.state.store import Turn
from memex.shared.errors import MemexError, is_disk_full
from memex.shared.logs import configure_logging, request_id_var
from memex.shared.server import EngineSlot, GrpcService

log = logging.getLogger(__name__)


class ChatWorker:
    """Answers queued turns one at a time until stopped."""

    def __init__(self, orchestrator: Orchestrator, settings: OrchestratorSettings) -> None:
        self._o = orchestrator
        self._store = orchestrator.store
        self._settings = settings
        self.stopping = asyncio.Event()
        self.answered = 0
        self.failed = False

    async def run(self) -> None:
        """Loops until ``stopping`` is set."""
        settings = self._settings
        requeued = await asyncio.to_thread(self._store.requeue_worker, settings.worker_id)
        requeued += await asyncio.to_thread(self._store.requeue_expired)
        log.info("chat worker %s started; %d orphaned turns requeued", settings.worker_id, requeued)
        while not self.stopping.is_set():
            try:
                turn = await asyncio.to_thread(
                    self._store.claim_next, settings.worker_id, settings.worker_lease_seconds
                )
            except Exception as exc:
                if not is_disk_full(exc):
                    raise
                # Nothing can be claimed until space is back; the queue itself is intact.
                log.error("disk full; no turn can be claimed until space is freed")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), settings.worker_poll_seconds)
                continue
            if turn is None:
                await asyncio.to_thread(self._store.requeue_expired)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), settings.worker_poll_seconds)
                continue
            answer = asyncio.create_task(self._answer(turn))
            stop = asyncio.create_task(self.stopping.wait())
            await asyncio.wait({answer, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if not answer.done():
                answer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await answer
                await asyncio.to_thread(self._store.requeue_worker, settings.worker_id)
                WORKER_TURNS.labels("requeued").inc()
                log.info("stopped while answering turn %s; it is pending again", turn.id)

    async def _keep_lease(self, turn: Turn) -> None:
        interval = self._settings.worker_lease_seconds / 3
        while True:
            await asyncio.sleep(interval)
            await asyncio.to_thread(
                self._store.renew_lease,
                turn.id,
                self._settings.worker_id,
                self._settings.worker_lease_seconds,
            )

    async def _answer(self, turn: Turn) -> None:
        request_id_var.set(f"{TURN_REQUEST}{turn.id}")
        lease = asyncio.create_task(self._keep_lease(turn))
        worker_id = self._settings.worker_id
        try:
            prior = await asyncio.to_thread(self._store.prior_turns, turn)
            query = compose_query(
                thread_history(prior, include_sensitive=turn.include_sensitive),
                turn.text,
                self._settings.worker_context_chars,
            )
            # The turn's own request decided whether sensitive notes may be used (issue 11), and
            # the day whose memory it reads (issue 37).
            result = await self._o.asker.ask(
                turn.tenant, query, include_sensitive=turn.include_sensitive, as_of=turn.as_of
            )
            if await asyncio.to_thread(
                self._store.answer_turn,
                turn,
                worker_id,
                result.answer,
                result.citations,
                result.turn_id,  # its evidence bundle becomes this answer's
            ):
                self.answered += 1
                WORKER_TURNS.labels("answered").inc()
                log.info("answered turn %s", turn.id)
            else:
                WORKER_TURNS.labels("lost").inc()
                log.warning(
                    "turn %s was taken back before its answer was written; answer dropped", turn.id
                )
                if await asyncio.to_thread(
                    self._store.forget_dropped_answer, turn.id, result.turn_id
                ):
                    log.info("turn %s's thread was forgotten; its answer's traces erased", turn.id)
        except Exception as exc:
            if is_disk_full(exc):
                # Not the turn's fault, and nothing can be written now: its lease runs out and
                # it is answered again once space is back.
                log.error("disk full while answering turn %s; it will be retried", turn.id)
                WORKER_TURNS.labels("requeued").inc()
                return
            message = exc.message if isinstance(exc, MemexError) else f"{type(exc).__name__}: {exc}"
            log.exception("turn %s failed", turn.id)
            WORKER_TURNS.labels("error").inc()
            await asyncio.to_thread(self._store.fail_turn, turn, worker_id, message)
        finally:
            lease.cancel()


def thread_history(prior: list[Turn], *, include_sensitive: bool) -> list[PriorTurn]:
    """A thread's earlier questions and answers as the next turn's model may see them. An
    answer to a question that let the model see sensitive notes may carry them, so a turn that
    did not ask gets a placeholder in its place (whether it did draw on them is not stored for
    turns: withholding is the safe reading)."""
    history, asked_sensitive = [], False
    for t in prior:
        if t.role == "user":
            asked_sensitive = t.include_sensitive
            history.append(PriorTurn(t.role, t.text))
        else:
            text = history_text(
                t.text, drew_on_sensitive=asked_sensitive, include_sensitive=include_sensitive
            )
            history.append(PriorTurn(t.role, text))
    return history


def seconds_until(at: str, now: dt.datetime) -> float:
    """Seconds from ``now`` to the next ``at`` (HH:MM) in ``now``'s time zone; a full day when
    it is that minute now (the run that just ended must not start again)."""
    hour, minute = (int(part) for part in at.split(":"))
    target = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if target <= now:
        target += dt.timedelta(days=1)
    return (target - now).total_seconds()


async def nightly_reflect(
    orchestrator: Orchestrator, settings: OrchestratorSettings, stopping: asyncio.Event
) -> None:
    """Runs reflect at ``reflect_at`` each night until ``stopping``; a failed run is logged and
    the next night tries again. Of several worker replicas on one database, the first to claim
    the night runs it (``claim_nightly``). Returns at once when the settings leave it off."""
    local = orchestrator.pipeline.sensitivity.local
    if not settings.reflect_nightly or orchestrator.reflector is None:
        log.info("nightly reflect is off (MEMEX_ORCHESTRATOR_REFLECT_NIGHTLY)")
        return
    if not local and not settings.reflect_remote:
        log.info(
            "nightly reflect is off: the reasoner is remote "
            "(MEMEX_ORCHESTRATOR_REFLECT_REMOTE=true allows it)"
        )
        return
    while not stopping.is_set():
        wait = seconds_until(settings.reflect_at, dt.datetime.now().astimezone())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), wait)
        if stopping.is_set():
            return
        request_id_var.set("nightly-reflect")
        day = dt.datetime.now().astimezone().date().isoformat()
        if not await asyncio.to_thread(
            orchestrator.store.claim_nightly,
            "reflect",
            settings.default_tenant,
            day,
            settings.worker_id,
        ):
            log.info("nightly reflect of %s: another worker runs it", day)
            continue
        try:
            # Sensitive notes feed it only where ask would show them to this reasoner.
            report = await orchestrator.reflector.reflect(
                settings.default_tenant, include_sensitive=True
            )
            log.info("nightly reflect: %d beliefs made or updated", len(report.beliefs))
        except Exception:
            log.exception("nightly reflect failed; it runs again tomorrow")


def served_settings(settings: OrchestratorSettings) -> OrchestratorSettings:
    """The worker's own ports in place of the orchestrator's (the rest is shared)."""
    return settings.model_copy(
        update={"port": settings.worker_port, "metrics_port": settings.worker_metrics_port}
    )


class WorkerService:
    """The worker as a service: health SERVING while its loop runs; the loop's end stops it."""

    def __init__(
        self,
        settings: OrchestratorSettings,
        opener: Callable[[], AbstractAsyncContextManager[Orchestrator]] | None = None,
    ) -> None:
        self._settings = settings
        self._open = opener or (lambda: open_orchestrator(settings))
        self.worker: ChatWorker | None = None
        self.service: GrpcService[ChatWorker] = GrpcService(
            served_settings(settings), [], self._register, self._load
        )

    @property
    def failed(self) -> bool:
        """Whether the loop died of an error (the process should exit non-zero)."""
        return self.worker is not None and self.worker.failed

    @staticmethod
    def _register(server: grpc.aio.Server, slot: EngineSlot[ChatWorker]) -> None:
        """Health and reflection only: the worker takes no calls."""

    def _ended(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None and self.worker is not None:
            log.error("the chat worker loop died", exc_info=task.exception())
            self.worker.failed = True
        self.service.started.result().stop()  # a loop that ended takes the process down

    @contextlib.asynccontextmanager
    async def _load(self) -> AsyncIterator[ChatWorker]:
        async with self._open() as orchestrator:
            self.worker = worker = ChatWorker(orchestrator, self._settings)
            loop = asyncio.create_task(worker.run())
            loop.add_done_callback(self._ended)
            nightly = asyncio.create_task(
                nightly_reflect(orchestrator, self._settings, worker.stopping)
            )
            try:
                yield worker
            finally:
                worker.stopping.set()
                nightly.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await nightly
                await asyncio.wait({loop}, timeout=self._settings.grace_seconds)
                if not loop.done():
                    loop.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await loop


async def _main(settings: OrchestratorSettings) -> bool:
    served = WorkerService(settings)
    await served.service.run()
    return served.failed


def main() -> None:
    """Parses settings once, configures logging, runs until SIGTERM."""
    settings = load_settings()
    configure_logging(settings.log_level)
    try:
        failed = asyncio.run(_main(settings))
    except MemexError as exc:
        log.error("chat worker cannot run: %s (is the stack up? `memex up`)", exc.message)
        raise SystemExit(1) from None
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
