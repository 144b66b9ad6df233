"""Chat (SPEC B7, B8, B11): one streamed model call over the persona's retrieval, with history.

Events: ``meta``, many ``delta``, one ``citations`` (policed), ``done``; an error after the first
event becomes an ``error`` event in place of the tail. Both sides are stored; replies are never
ingested as memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

from memex.orchestrator import sources as briefing_sources
from memex.orchestrator.answers import ReplyStream
from memex.orchestrator.briefing import CHAT_RULES, chat_turn, system_prompt
from memex.orchestrator.core import Context
from memex.orchestrator.items import Citation
from memex.orchestrator.metrics import CHATS, DROPPED_CITATIONS, STAGE_SECONDS, WITHHELD, timed
from memex.orchestrator.ports import ChatMessage, GenerateOptions
from memex.orchestrator.sources import estimate_tokens
from memex.orchestrator.store import Message
from memex.orchestrator.text import conversation_title
from memex.shared.errors import InvalidArgument, MemexError
from memex.shared.logs import request_id_var

log = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 8000
# However slow the model, a chat reads about 1,000 characters of sources (two or three short
# excerpts): with less, the 1.5B model answered "I don't know" to questions its notes answer.
MIN_CHAT_SOURCES_TOKENS = 300


@dataclass(frozen=True)
class Meta:
    conversation_id: str
    model: str
    persona: str


@dataclass(frozen=True)
class Delta:
    text: str


@dataclass(frozen=True)
class Citations:
    citations: list[Citation]
    withheld: int


@dataclass(frozen=True)
class Done:
    message_id: str
    latency_ms: float
    chunks_considered: int


@dataclass(frozen=True)
class Error:
    """The error that ended the stream; the transport names its status."""

    error: MemexError


ChatEvent = Meta | Delta | Citations | Done | Error


class Chatter:
    """Runs chats against one context."""

    def __init__(self, context: Context) -> None:
        self._c = context

    def _budget(self, message: str, history: Sequence[Message]) -> int:
        """Tokens the sources may take: what the reasoner reads in ``chat_first_words_seconds``
        at its measured speed, less the message and the history it reads too."""
        c = self._c
        rate, seconds = c.info.prefill_tokens_per_second, c.settings.chat_first_words_seconds
        if rate <= 0 or seconds <= 0:
            return c.settings.briefing_tokens
        others = estimate_tokens(message) + sum(estimate_tokens(m.text) + 4 for m in history)
        return max(
            MIN_CHAT_SOURCES_TOKENS, min(c.settings.briefing_tokens, int(rate * seconds) - others)
        )

    async def chat(
        self, tenant: str, conversation_id: str, message: str, persona_name: str = ""
    ) -> AsyncGenerator[ChatEvent, None]:
        """Streams a reply. Errors before the first event raise; later ones become an Error."""
        started = time.perf_counter()
        message = message.strip()
        if not message:
            raise InvalidArgument("message is empty: say something")
        if len(message) > MAX_MESSAGE_CHARS:
            raise InvalidArgument(
                f"message has {len(message)} characters; the limit is {MAX_MESSAGE_CHARS}"
            )
        c = self._c
        persona = c.personas.get(persona_name, "chat")
        store = c.store
        if conversation_id:
            history = await asyncio.to_thread(
                store.recent_messages, tenant, conversation_id, c.settings.chat_history_messages
            )
        else:
            history = []
            conversation_id = await asyncio.to_thread(
                store.create_conversation, tenant, conversation_title(message), persona.name
            )
        await asyncio.to_thread(store.add_message, tenant, conversation_id, "user", message)
        yield Meta(conversation_id, c.info.model, persona.name)

        try:
            with timed("chat_retrieve"):
                fused = await c.memory.search(tenant, c.search_spec(persona, message))
            shown, withheld = c.split_sensitive(fused)
            sources = briefing_sources.select(
                shown,
                message,
                token_budget=self._budget(message, history),
                excerpt_chars=c.settings.excerpt_chars,
                limit=persona.chunks,
            )
            messages = [ChatMessage("system", system_prompt(persona, CHAT_RULES))]
            messages += [
                ChatMessage("user" if m.role == "user" else "assistant", m.text) for m in history
            ]
            messages.append(ChatMessage("user", chat_turn(sources, message)))
            streamed = ReplyStream(sources)
            generated = c.reasoner.stream(
                purpose="chat",
                persona=persona.name,
                messages=messages,
                options=GenerateOptions(max_tokens=c.settings.answer_max_tokens, temperature=0.7),
                sensitive_texts=[i.text for i in withheld],
            )
            first_token = True
            # aclosing: when the client goes away the model call is closed (and cancelled) now,
            # not whenever the garbage collector gets to it.
            with timed("chat_stream"):
                async with contextlib.aclosing(generated):
                    async for piece in generated:
                        if text := streamed.feed(piece):
                            if first_token:
                                first = time.perf_counter() - started
                                STAGE_SECONDS.labels("chat_first_token").observe(first)
                                first_token = False
                            yield Delta(text)
                        if streamed.looping:
                            break  # the model is repeating itself: stop it here
                if text := streamed.finish():
                    yield Delta(text)
            reading = streamed.read()
            citations, report = reading.citations, reading.report
            shown = [s.item for s in sources]
            DROPPED_CITATIONS.labels("chat").inc(len(report.dropped))
            WITHHELD.labels("chat").inc(len(withheld))
            reply = reading.answer
            if withheld:
                note = f"\n\n{c.withheld_note(len(withheld))}"
                reply += note
                yield Delta(note)
            yield Citations(citations, len(withheld))
            latency_ms = (time.perf_counter() - started) * 1000
            message_id = await asyncio.to_thread(
                store.add_message,
                tenant,
                conversation_id,
                "assistant",
                reply,
                citations,
                c.info.model,
                latency_ms,
            )
            await c.record(
                tenant=tenant,
                kind="chat",
                query=message,
                latency_ms=latency_ms,
                persona=persona.name,
                items=fused,
                citations=citations,
                grounding=report.score,
                abstained=not shown,
                conversation_id=conversation_id,
            )
            CHATS.labels("done").inc()
            yield Done(message_id, latency_ms, len(shown))
        except (GeneratorExit, asyncio.CancelledError):
            # The client went away: the user's message stays, no half reply is stored.
            CHATS.labels("cancelled").inc()
            raise
        except MemexError as exc:
            CHATS.labels("error").inc()
            yield Error(exc)
        except Exception:
            CHATS.labels("error").inc()
            log.exception("chat failed after the stream began")
            yield Error(
                MemexError(
                    f"internal error; the orchestrator log has request id {request_id_var.get()}"
                )
            )
