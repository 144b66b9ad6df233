"""The one audited path every model call takes (SPEC B4).

Before the call, a row with the redacted prompt is written to the LLM log; if that write fails, the
model is not called (fail closed). After it, the row gets the redacted response, token counts,
latency and outcome. Sensitive items' text is redacted along with personal data: an item the model
was shown is logged as a marker naming its episode (``record/redaction.py``), so the row says which
sources were redacted and keeps model, tokens and outcome.

This is the only path the stack offers to the model: the orchestrator and its chat worker call
the reasoner through it, and nothing else in the stack calls the reasoner's Generate. The
reasoner's own port serves the stack's processes (on ``MEMEX_HOST``, loopback by default); what
calls it directly, such as ``memex generate``, a developer tool, is not audited.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import AsyncGenerator, Iterable, Sequence

from prometheus_client import Counter, Histogram

from memex.orchestrator.ports import ChatMessage, GenerateOptions, Reasoner, Usage
from memex.orchestrator.record.redaction import Sensitive, redact
from memex.orchestrator.record.telemetry import TelemetryStore
from memex.shared.errors import FailedPrecondition
from memex.shared.logs import request_id_var

log = logging.getLogger(__name__)


class StopGenerating(Exception):
    """Thrown into ``AuditedReasoner.stream`` by its reader to end the reply on purpose (the
    model repeats itself): the model is stopped and the call audited as ``stopped``, where a
    reader that goes away leaves it ``cancelled``."""


MODEL_CALLS = Counter(
    "memex_orchestrator_model_calls_total",
    "Audited model calls by purpose and outcome.",
    ["purpose", "outcome"],
)
MODEL_SECONDS = Histogram(
    "memex_orchestrator_model_call_seconds",
    "Audited model call latency by purpose.",
    ["purpose"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)


tenant_var: contextvars.ContextVar[str] = contextvars.ContextVar("memex_tenant", default="")
"""The tenant a model call serves, kept in its LLM log row so that forgetting one tenant's note
finds only that tenant's calls. Each flow that calls the model (ask, chat) sets it first, as
``request_id_var`` is set per request."""

conversation_var: contextvars.ContextVar[str] = contextvars.ContextVar(
    "memex_conversation", default=""
)
"""The chat conversation a model call answers in, kept in its LLM log row so that deleting the
conversation erases the call's text (``ConversationStore.delete_conversation``). Chat sets it
once the conversation is known; every other flow leaves it empty."""


def _render(messages: Sequence[ChatMessage]) -> str:
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in messages)


class AuditedReasoner:
    """Wraps the reasoner so that no call escapes the LLM log."""

    def __init__(self, reasoner: Reasoner, store: TelemetryStore, model: str) -> None:
        self._reasoner = reasoner
        self._store = store
        self.model = model

    async def stream(
        self,
        *,
        purpose: str,
        persona: str,
        messages: Sequence[ChatMessage],
        options: GenerateOptions,
        sensitive_texts: Iterable[str | Sensitive] = (),
    ) -> AsyncGenerator[str, None]:
        """Streams the model's reply to ``messages``, audited under ``purpose``; the text of
        ``sensitive_texts`` never reaches the log."""
        sensitive = list(sensitive_texts)
        try:
            call_id = await asyncio.to_thread(
                self._store.log_call_started,
                request_id=request_id_var.get(),
                tenant=tenant_var.get(),
                conversation_id=conversation_var.get(),
                purpose=purpose,
                model=self.model,
                persona=persona,
                prompt=redact(_render(messages), sensitive),
            )
        except Exception as exc:
            log.error("audit log write failed; %s call not made: %s", purpose, exc)
            MODEL_CALLS.labels(purpose, "audit_failed").inc()
            raise FailedPrecondition(
                "the audit log cannot be written, so no model was called; check the "
                "orchestrator's data directory (disk space and permissions)"
            ) from exc
        started = time.perf_counter()
        usage: list[Usage] = []
        parts: list[str] = []
        outcome = "error"
        try:
            generated = self._reasoner.generate(messages, options, usage)
            async with contextlib.aclosing(generated):
                async for delta in generated:
                    parts.append(delta)
                    yield delta
            outcome = "ok"
        except StopGenerating:
            outcome = "stopped"
        except (asyncio.CancelledError, GeneratorExit):
            outcome = "cancelled"
            raise
        finally:
            latency = time.perf_counter() - started
            MODEL_CALLS.labels(purpose, outcome).inc()
            MODEL_SECONDS.labels(purpose).observe(latency)
            final = usage[-1] if usage else Usage()
            try:
                self._store.log_call_finished(
                    call_id,
                    response=redact("".join(parts), sensitive, by_number=True),
                    prompt_tokens=final.prompt_tokens,
                    completion_tokens=final.completion_tokens,
                    latency_ms=latency * 1000,
                    outcome=outcome,
                )
            except Exception:
                log.exception("could not complete the audit row of call %s", call_id)

    async def complete(
        self,
        *,
        purpose: str,
        persona: str,
        messages: Sequence[ChatMessage],
        options: GenerateOptions,
        sensitive_texts: Iterable[str | Sensitive] = (),
    ) -> str:
        """The whole reply of an audited call."""
        stream = self.stream(
            purpose=purpose,
            persona=persona,
            messages=messages,
            options=options,
            sensitive_texts=sensitive_texts,
        )
        return "".join([delta async for delta in stream])
