"""The chat worker for queued turns (SPEC B13): ``python -m memex.orchestrator.worker``.

It claims the oldest pending user turn (pending → thinking, leased to this worker), composes the
thread's context without a model call, asks, and writes the answer and the answered state in one
transaction; any failure marks the turn error and the loop goes on. On start it takes back the
turns it held when it last died, and any turn whose worker's lease ran out. Stopping it puts the
turn in hand back to pending, so nothing is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.service import Orchestrator, open_orchestrator
from memex.orchestrator.store import Turn
from memex.orchestrator.text import PriorTurn, compose_query
from memex.shared.errors import MemexError
from memex.shared.logs import configure_logging, request_id_var

log = logging.getLogger(__name__)


class ChatWorker:
    """Answers queued turns one at a time until stopped."""

    def __init__(self, orchestrator: Orchestrator, settings: OrchestratorSettings) -> None:
        self._o = orchestrator
        self._store = orchestrator.context.store
        self._settings = settings
        self.stopping = asyncio.Event()
        self.answered = 0

    async def run(self) -> None:
        """Loops until ``stopping`` is set."""
        settings = self._settings
        requeued = await asyncio.to_thread(self._store.requeue_worker, settings.worker_id)
        requeued += await asyncio.to_thread(self._store.requeue_expired)
        log.info("chat worker %s started; %d orphaned turns requeued", settings.worker_id, requeued)
        while not self.stopping.is_set():
            turn = await asyncio.to_thread(
                self._store.claim_next, settings.worker_id, settings.worker_lease_seconds
            )
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
        request_id_var.set(f"turn-{turn.id}")
        lease = asyncio.create_task(self._keep_lease(turn))
        worker_id = self._settings.worker_id
        try:
            prior = await asyncio.to_thread(self._store.prior_turns, turn)
            query = compose_query(
                [PriorTurn(t.role, t.text) for t in prior],
                turn.text,
                self._settings.worker_context_chars,
            )
            result = await self._o.asker.ask(turn.tenant, query)
            if await asyncio.to_thread(
                self._store.answer_turn, turn, worker_id, result.answer, result.citations
            ):
                self.answered += 1
                log.info("answered turn %s", turn.id)
            else:
                log.warning(
                    "turn %s was taken back before its answer was written; answer dropped", turn.id
                )
        except Exception as exc:
            message = exc.message if isinstance(exc, MemexError) else f"{type(exc).__name__}: {exc}"
            log.exception("turn %s failed", turn.id)
            await asyncio.to_thread(self._store.fail_turn, turn, worker_id, message)
        finally:
            lease.cancel()


async def _main(settings: OrchestratorSettings) -> None:
    async with open_orchestrator(settings) as orchestrator:
        worker = ChatWorker(orchestrator, settings)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, worker.stopping.set)
        await worker.run()


def main() -> None:
    """Parses settings once, configures logging, runs until SIGTERM."""
    settings = OrchestratorSettings()
    configure_logging(settings.log_level)
    try:
        asyncio.run(_main(settings))
    except MemexError as exc:
        log.error("chat worker cannot run: %s (is the stack up? `memex up`)", exc.message)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
